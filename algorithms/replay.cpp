#include "algorithms/replay.hpp"

#include <fmt/format.h>

#include <unordered_map>

namespace hccl::algo {
namespace {

// Posted but unmatched transfer ends of one ordered pair (src -> dst), oldest first: all sends
// or all receives (one of each would have met).
struct PairQueue {
  std::vector<XferRef> ends;
  std::size_t head = 0;
  bool sends = false;
};

struct RankState {
  std::uint32_t step = 0;  // the step being executed, or steps.size() when finished
  bool posted = false;
  std::size_t remaining = 0;
  std::vector<bool> matched;  // per transfer of the current step
};

class Replayer {
 public:
  Replayer(StepSource& src, ReplayObserver& obs)
      : src_(src), obs_(obs), p_(src.ranks()), state_(p_) {}

  std::vector<ReplayProblem> run() {
    for (std::uint32_t r = 0; r < p_; ++r) work_.push_back(r);
    while (!work_.empty()) {
      const std::uint32_t r = work_.back();
      work_.pop_back();
      advance(r);
    }
    reportStuck();
    return std::move(problems_);
  }

 private:
  // Only current steps are referred to: a transfer end waits in its rank's current step.
  const Transfer& xfer(const XferRef& x) { return src_.step(x.rank, x.step).xfers[x.index]; }

  void advance(std::uint32_t r) {
    RankState& st = state_[r];
    const std::uint32_t steps = src_.steps(r);
    while (st.step < steps) {
      if (st.posted) {
        if (st.remaining > 0) return;
        obs_.completed(r, st.step);
        ++st.step;
        st.posted = false;
        continue;
      }
      post(r);
    }
  }

  void post(std::uint32_t r) {
    RankState& st = state_[r];
    const Step& step = src_.step(r, st.step);
    st.posted = true;
    st.remaining = step.xfers.size();
    st.matched.assign(step.xfers.size(), false);
    obs_.posted(r, st.step);
    for (std::uint32_t i = 0; i < step.xfers.size(); ++i) {
      const Transfer& t = step.xfers[i];
      const XferRef me{r, st.step, i};
      if (t.peer >= p_) {
        problems_.push_back({ReplayProblem::Kind::BadPeer, r, st.step,
                             fmt::format("rank {} step {}: {} names peer {} outside a group of {}",
                                         r, st.step, toString(t), t.peer, p_)});
        settle(me);
        continue;
      }
      const bool isSend = t.dir == Dir::Send;
      const std::uint64_t key =
          isSend ? std::uint64_t{r} * p_ + t.peer : std::uint64_t{t.peer} * p_ + r;
      auto [it, fresh] = pending_.try_emplace(key);
      PairQueue& q = it->second;
      if (fresh || q.sends == isSend) {
        q.sends = isSend;
        q.ends.push_back(me);
        continue;
      }
      const XferRef other = q.ends[q.head++];
      if (q.head == q.ends.size()) pending_.erase(it);  // nothing left waiting: forget the pair
      match(isSend ? me : other, isSend ? other : me);
    }
  }

  void match(const XferRef& s, const XferRef& rv) {
    const Transfer& ts = xfer(s);
    const Transfer& tr = xfer(rv);
    if (ts.slice.count != tr.slice.count) {
      problems_.push_back(
          {ReplayProblem::Kind::SizeMismatch, s.rank, s.step,
           fmt::format("rank {} step {} sends {} elements to rank {} (message #{} between them), "
                       "but rank {} step {} receives {} elements",
                       s.rank, s.step, ts.slice.count, rv.rank, sendsBefore(s, rv.rank), rv.rank,
                       rv.step, tr.slice.count)});
    }
    obs_.matched(s, rv);
    settle(s);
    settle(rv);
  }

  // How many messages rank x.rank sent to `to` before transfer x (its number between the pair,
  // from 0): counted from the schedule when a mismatch needs it, so the replay keeps no counter
  // per pair.
  std::uint64_t sendsBefore(const XferRef& x, std::uint32_t to) {
    std::uint64_t n = 0;
    const RankSchedule all = src_.whole(x.rank);
    const auto& steps = all.steps;
    for (std::uint32_t st = 0; st <= x.step; ++st) {
      const auto& xs = steps[st].xfers;
      const std::size_t end = st == x.step ? x.index : xs.size();
      for (std::size_t i = 0; i < end; ++i)
        if (xs[i].dir == Dir::Send && xs[i].peer == to) ++n;
    }
    return n;
  }

  // One end of a transfer is done; wake its rank when its whole step is.
  void settle(const XferRef& x) {
    RankState& st = state_[x.rank];
    st.matched[x.index] = true;
    if (--st.remaining == 0) work_.push_back(x.rank);
  }

  std::string whereIs(std::uint32_t r) {
    const RankState& st = state_[r];
    if (st.step >= src_.steps(r))
      return fmt::format("rank {} has finished all {} steps", r, src_.steps(r));
    return fmt::format("rank {} is blocked in step {}", r, st.step);
  }

  void reportStuck() {
    for (std::uint32_t r = 0; r < p_; ++r) {
      const RankState& st = state_[r];
      if (st.step >= src_.steps(r)) continue;
      const Step& step = src_.step(r, st.step);
      for (std::uint32_t i = 0; i < step.xfers.size(); ++i) {
        if (st.matched[i]) continue;
        const Transfer& t = step.xfers[i];
        const bool peerDone = t.peer < p_ && state_[t.peer].step >= src_.steps(t.peer);
        ReplayProblem::Kind kind = ReplayProblem::Kind::Deadlock;
        if (peerDone)
          kind = t.dir == Dir::Send ? ReplayProblem::Kind::UnmatchedSend
                                    : ReplayProblem::Kind::UnmatchedRecv;
        problems_.push_back(
            {kind, r, st.step,
             fmt::format("rank {} step {}: {} never completes: {}{}", r, st.step, toString(t),
                         whereIs(t.peer),
                         peerDone ? (t.dir == Dir::Send ? " without posting a matching receive"
                                                        : " without posting a matching send")
                                  : " (deadlock)")});
      }
    }
  }

  StepSource& src_;
  ReplayObserver& obs_;
  std::uint32_t p_;
  std::vector<RankState> state_;
  // The ordered pairs (src * p + dst) with transfer ends waiting for their partner, and only
  // those: memory follows the transfers in flight, not p^2.
  std::unordered_map<std::uint64_t, PairQueue> pending_;
  std::vector<std::uint32_t> work_;
  std::vector<ReplayProblem> problems_;
};

}  // namespace

std::vector<ReplayProblem> replay(StepSource& src, ReplayObserver& obs) {
  return Replayer(src, obs).run();
}

std::vector<ReplayProblem> replay(const std::vector<RankSchedule>& ranks, ReplayObserver& obs) {
  HeldSteps src(ranks);
  return replay(src, obs);
}

}  // namespace hccl::algo
