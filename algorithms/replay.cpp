#include "algorithms/replay.hpp"

#include <fmt/format.h>

#include <unordered_map>

namespace hccl::algo {
namespace {

struct PendingEnd {
  XferRef ref;
  std::uint64_t seq;  // k-th message of this direction between the pair
};

// Posted but unmatched transfer ends of one ordered pair (src -> dst), oldest first.
struct PairQueue {
  std::vector<PendingEnd> sends, recvs;
  std::size_t sendHead = 0, recvHead = 0;
  std::uint64_t sendSeq = 0, recvSeq = 0;
};

struct RankState {
  std::uint32_t step = 0;  // the step being executed, or steps.size() when finished
  bool posted = false;
  std::size_t remaining = 0;
  std::vector<bool> matched;  // per transfer of the current step
};

class Replayer {
 public:
  Replayer(const std::vector<RankSchedule>& ranks, ReplayObserver& obs)
      : ranks_(ranks),
        obs_(obs),
        p_(static_cast<std::uint32_t>(ranks.size())),
        state_(p_),
        dense_(p_ <= kDenseRanks ? std::size_t{p_} * p_ : 0) {}

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
  const Transfer& xfer(const XferRef& x) const {
    return ranks_[x.rank].steps[x.step].xfers[x.index];
  }

  void advance(std::uint32_t r) {
    RankState& st = state_[r];
    const auto& steps = ranks_[r].steps;
    while (st.step < steps.size()) {
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
    const Step& step = ranks_[r].steps[st.step];
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
      PairQueue& q = isSend ? pair(r, t.peer) : pair(t.peer, r);
      auto& mine = isSend ? q.sends : q.recvs;
      auto& theirs = isSend ? q.recvs : q.sends;
      std::size_t& theirHead = isSend ? q.recvHead : q.sendHead;
      const std::uint64_t seq = isSend ? q.sendSeq++ : q.recvSeq++;
      if (theirHead < theirs.size()) {
        const PendingEnd other = theirs[theirHead++];
        match(isSend ? PendingEnd{me, seq} : other, isSend ? other : PendingEnd{me, seq});
      } else {
        mine.push_back({me, seq});
      }
    }
  }

  void match(const PendingEnd& s, const PendingEnd& rv) {
    const Transfer& ts = xfer(s.ref);
    const Transfer& tr = xfer(rv.ref);
    if (ts.slice.count != tr.slice.count) {
      problems_.push_back(
          {ReplayProblem::Kind::SizeMismatch, s.ref.rank, s.ref.step,
           fmt::format("rank {} step {} sends {} elements to rank {} (message #{} between them), "
                       "but rank {} step {} receives {} elements",
                       s.ref.rank, s.ref.step, ts.slice.count, rv.ref.rank, s.seq, rv.ref.rank,
                       rv.ref.step, tr.slice.count)});
    }
    obs_.matched(s.ref, rv.ref);
    settle(s.ref);
    settle(rv.ref);
  }

  // One end of a transfer is done; wake its rank when its whole step is.
  void settle(const XferRef& x) {
    RankState& st = state_[x.rank];
    st.matched[x.index] = true;
    if (--st.remaining == 0) work_.push_back(x.rank);
  }

  // The queues of an ordered pair: a p x p table for small groups, a hash of the pairs that talk
  // for large ones (p^2 queues would be gigabytes at thousands of ranks).
  PairQueue& pair(std::uint32_t src, std::uint32_t dst) {
    const std::size_t i = std::size_t{src} * p_ + dst;
    return dense_.empty() ? sparse_[i] : dense_[i];
  }

  std::string whereIs(std::uint32_t r) const {
    const RankState& st = state_[r];
    if (st.step >= ranks_[r].steps.size())
      return fmt::format("rank {} has finished all {} steps", r, ranks_[r].steps.size());
    return fmt::format("rank {} is blocked in step {}", r, st.step);
  }

  void reportStuck() {
    for (std::uint32_t r = 0; r < p_; ++r) {
      const RankState& st = state_[r];
      if (st.step >= ranks_[r].steps.size()) continue;
      const Step& step = ranks_[r].steps[st.step];
      for (std::uint32_t i = 0; i < step.xfers.size(); ++i) {
        if (st.matched[i]) continue;
        const Transfer& t = step.xfers[i];
        const bool peerDone = state_[t.peer].step >= ranks_[t.peer].steps.size();
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

  const std::vector<RankSchedule>& ranks_;
  ReplayObserver& obs_;
  std::uint32_t p_;
  std::vector<RankState> state_;
  static constexpr std::uint32_t kDenseRanks = 1024;
  std::vector<PairQueue> dense_;
  std::unordered_map<std::size_t, PairQueue> sparse_;
  std::vector<std::uint32_t> work_;
  std::vector<ReplayProblem> problems_;
};

}  // namespace

std::vector<ReplayProblem> replay(const std::vector<RankSchedule>& ranks, ReplayObserver& obs) {
  return Replayer(ranks, obs).run();
}

}  // namespace hccl::algo
