#include "algorithms/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <tuple>

namespace hccl::algo {
namespace {

// Transfer ends that were posted before their partner, as the replay keeps them: enough to
// match them and hand them to the observers once their step may have been released
// (StepSource::release). One record holds a run of ends: consecutive transfers of the step to
// the same peer in the same direction, buffer, size, level and push, whose offsets step by a
// fixed stride (RankState::runs). NHR's AllGather sends its last step's p/2 blocks to r+1 as p/2
// transfers r, r-2, r-4, ...: one ascending run and one after the wrap, where a record each was
// p^2/2 records of 32 bytes (358 MB at 4096) once most ranks had posted it before their successor.
struct Waiting {
  std::uint64_t offset, count;  // the run's first transfer's
  std::uint32_t peer, index;    // index: the first transfer's in its step's transfer list
  std::uint32_t run;            // 0: a single transfer; else runs[run - 1] (n > 1)
  Buf buf;
  Dir dir;
  std::uint8_t level;
  bool push;  // these four fit in what would be padding: the size stays 32 bytes

  // Sorted by partner, direction, then posting order: the order matches are made in (a run's
  // transfers are consecutive, so its first index orders it).
  auto key() const { return std::tuple(peer, dir, index); }
};
static_assert(sizeof(Waiting) == 32);

struct Run {
  std::uint64_t stride;  // offset of transfer j = offset + j * stride (mod 2^64: may descend)
  std::uint32_t n;       // transfers in the run
};

struct RankState {
  std::uint32_t step = 0;  // the step being executed, or steps.size() when finished
  bool posted = false;
  std::size_t remaining = 0;
  std::vector<bool> matched;  // per transfer of the current step
  // The current step's ends that were posted before their partner, sorted by key(); the ones
  // matched since are dropped from time to time (stale counts them), so what is held follows
  // the ends still waiting: ~p^2/2 at the worst moment of a one-step mesh (a record each, every
  // peer differs), not 2p^2.
  std::vector<Waiting> waiting;
  std::vector<Run> runs;  // of the records in waiting (and of ones dropped since)
  std::size_t stale = 0;  // records whose every transfer has met its partner

  std::uint32_t size(const Waiting& w) const { return w.run == 0 ? 1 : runs[w.run - 1].n; }
  std::uint32_t last(const Waiting& w) const { return w.index + size(w) - 1; }
  Transfer transfer(const Waiting& w, std::uint32_t j) const {
    const std::uint64_t off = w.run == 0 ? w.offset : w.offset + j * runs[w.run - 1].stride;
    return {w.dir, w.peer, Slice{w.buf, off, w.count}, w.level, w.push};
  }
  // Transfer i of the current step waits for its partner: it extends the last record's run
  // where it continues it (the transfer before it, the same in all but the offset, which steps
  // by the run's stride), or starts a record.
  void wait(const Transfer& t, std::uint32_t i) {
    if (!waiting.empty()) {
      Waiting& b = waiting.back();
      if (b.peer == t.peer && b.dir == t.dir && b.buf == t.slice.buf && b.count == t.slice.count &&
          b.level == t.level && b.push == t.push && last(b) + 1 == i) {
        if (b.run == 0) {
          runs.push_back({t.slice.offset - b.offset, 2});
          b.run = static_cast<std::uint32_t>(runs.size());
          return;
        }
        Run& run = runs[b.run - 1];
        if (t.slice.offset == b.offset + run.n * run.stride) {
          ++run.n;
          return;
        }
      }
    }
    waiting.push_back(
        {t.slice.offset, t.slice.count, t.peer, i, 0, t.slice.buf, t.dir, t.level, t.push});
  }
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
  void advance(std::uint32_t r) {
    RankState& st = state_[r];
    const std::uint32_t steps = src_.steps(r);
    while (st.step < steps) {
      if (st.posted) {
        if (st.remaining > 0) return;
        std::vector<Waiting>().swap(st.waiting);
        std::vector<Run>().swap(st.runs);
        st.stale = 0;
        obs_.completed(r, st.step);
        ++st.step;
        st.posted = false;
        if (st.step == steps) src_.release(r, true);
        continue;
      }
      post(r);
      if (st.remaining > 0) src_.release(r, false);
    }
  }

  void post(std::uint32_t r) {
    RankState& st = state_[r];
    const Step& step = src_.step(r, st.step);
    st.posted = true;
    st.remaining = step.xfers.size();
    st.matched.assign(step.xfers.size(), false);
    obs_.posted(r, st.step);
    std::vector<std::uint32_t> self;  // transfers with r itself, paired below
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
      if (t.peer == r) {
        self.push_back(i);
        continue;
      }
      // The partner end, if posted, waits in the peer's current step: every earlier end
      // between the two has met its partner (or this rank's earlier step would not have
      // completed), so the oldest waiting one is the one MPI's order pairs with this.
      RankState& ps = state_[t.peer];
      const Dir want = t.dir == Dir::Send ? Dir::Recv : Dir::Send;
      const Waiting probe{0, 0, r, 0, 0, Buf::Output, want, 0, false};
      const auto group = std::equal_range(
          ps.waiting.begin(), ps.waiting.end(), probe, [](const Waiting& a, const Waiting& b) {
            return std::tie(a.peer, a.dir) < std::tie(b.peer, b.dir);
          });
      // Matched ends of a group are a prefix of it (matched oldest first), also within a run.
      const auto it = std::partition_point(
          group.first, group.second, [&](const Waiting& w) { return ps.matched[ps.last(w)]; });
      if (it == group.second) {
        st.wait(t, i);
        continue;
      }
      const std::uint32_t n = ps.size(*it);
      std::uint32_t j = 0;
      for (std::uint32_t len = n; len > 0;) {  // the first unmatched transfer of the run
        const std::uint32_t half = len / 2;
        if (ps.matched[it->index + j + half]) {
          j += half + 1;
          len -= half + 1;
        } else {
          len = half;
        }
      }
      const XferRef them{t.peer, ps.step, it->index + j};
      const Transfer tt = ps.transfer(*it, j);
      if (t.dir == Dir::Send)
        match(me, t, them, tt);
      else
        match(them, tt, me, t);
      if (j + 1 == n && ++ps.stale * 2 > ps.waiting.size()) compact(ps);
    }
    // With itself a rank matches within the step: its k-th send meets its k-th receive.
    std::vector<std::uint32_t> sends, recvs;
    for (std::uint32_t i : self) (step.xfers[i].dir == Dir::Send ? sends : recvs).push_back(i);
    const std::size_t pairs = std::min(sends.size(), recvs.size());
    for (std::size_t k = 0; k < pairs; ++k)
      match({r, st.step, sends[k]}, step.xfers[sends[k]], {r, st.step, recvs[k]},
            step.xfers[recvs[k]]);
    for (const auto& rest : {std::span(sends).subspan(pairs), std::span(recvs).subspan(pairs)})
      for (std::uint32_t i : rest) st.wait(step.xfers[i], i);
    std::sort(st.waiting.begin(), st.waiting.end(),
              [](const Waiting& a, const Waiting& b) { return a.key() < b.key(); });
    st.waiting.shrink_to_fit();
  }

  // Drops the records whose ends have all met their partner (the order of the rest, and so the
  // sort, is kept; their runs stay until the step completes, a few per record at most).
  void compact(RankState& ps) {
    std::erase_if(ps.waiting, [&](const Waiting& w) { return ps.matched[ps.last(w)]; });
    ps.waiting.shrink_to_fit();
    ps.stale = 0;
  }

  void match(const XferRef& s, const Transfer& ts, const XferRef& rv, const Transfer& tr) {
    if (ts.slice.count != tr.slice.count) {
      problems_.push_back(
          {ReplayProblem::Kind::SizeMismatch, s.rank, s.step,
           fmt::format("rank {} step {} sends {} elements to rank {} (message #{} between them), "
                       "but rank {} step {} receives {} elements",
                       s.rank, s.step, ts.slice.count, rv.rank, sendsBefore(s, rv.rank), rv.rank,
                       rv.step, tr.slice.count)});
    }
    obs_.transferred(s, ts, rv, tr);
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
