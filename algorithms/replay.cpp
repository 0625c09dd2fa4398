#include "algorithms/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <tuple>

namespace hccl::algo {
namespace {

// Transfer ends that were posted before their partner, as the replay keeps them: enough to
// match them and hand them to the observers once their step may have been released
// (StepSource::release). One record holds a run of ends of the step, the same in direction,
// buffer, size, level and push, whose offsets step by a fixed stride (RankState::runs), in one
// of two forms:
// - to one peer, consecutive transfers: NHR's AllGather sends its last step's p/2 blocks to r+1
//   as p/2 transfers r, r-2, r-4, ...: one ascending run and one after the wrap, where a record
//   each was p^2/2 records of 32 bytes (358 MB at 4096) once most ranks had posted it before
//   their successor;
// - a sweep: to peers that step by a fixed amount, one transfer each, whose indices in the step
//   step evenly too (a one-step mesh posts send to j, receive from j, send to j+1, ...: two
//   sweeps a direction, before and after the wrap, where the ends to the ranks not yet posted
//   were ~p^2/2 single records at the worst moment, 268 MB at 4096).
struct Waiting {
  std::uint64_t offset, count;  // the run's first transfer's
  std::uint32_t peer, index;    // the first transfer's; index: in its step's transfer list
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
  std::uint64_t stride;     // offset of transfer j = offset + j * stride (mod 2^64: may descend)
  std::uint32_t n;          // transfers in the run
  std::int32_t peerStep;    // peer of transfer j = peer + j * peerStep; 0: one peer
  std::uint32_t indexStep;  // index of transfer j = index + j * indexStep; 1 when one peer
};

// A sweep shorter than this is kept as single records: what a lookup scans is then bounded by
// the ends it could match (see RankState::sweeps), and what is held is never more than before.
constexpr std::uint32_t kMinSweep = 4;

struct RankState {
  std::uint32_t step = 0;  // the step being executed, or steps.size() when finished
  bool posted = false;
  std::size_t remaining = 0;
  std::vector<bool> matched;  // per transfer of the current step
  // The current step's ends that were posted before their partner, as single records and runs
  // to one peer, sorted by key(); the ones matched since are dropped from time to time (stale
  // counts them), so what is held follows the ends still waiting.
  std::vector<Waiting> waiting;
  // The current step's waiting sweeps, sorted by direction and lowest peer; held until the step
  // completes (a one-step mesh has at most two a direction). A lookup for peer q scans the ones
  // whose lowest peer is at most q and at least q - span (the widest sweep's peer range).
  std::vector<Waiting> sweeps;
  std::uint64_t span = 0;
  std::vector<Run> runs;  // of the records in waiting and sweeps (and of ones dropped since)
  std::size_t stale = 0;  // records in waiting whose every transfer has met its partner

  bool sweep(const Waiting& w) const { return w.run != 0 && runs[w.run - 1].peerStep != 0; }
  std::uint32_t size(const Waiting& w) const { return w.run == 0 ? 1 : runs[w.run - 1].n; }
  std::uint32_t at(const Waiting& w, std::uint32_t j) const {
    return w.run == 0 ? w.index : w.index + j * runs[w.run - 1].indexStep;
  }
  std::uint32_t last(const Waiting& w) const { return at(w, size(w) - 1); }
  std::uint32_t peerOf(const Waiting& w, std::uint32_t j) const {
    if (w.run == 0) return w.peer;
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(w.peer) +
                                      std::int64_t{j} * runs[w.run - 1].peerStep);
  }
  std::uint32_t lowest(const Waiting& w) const { return std::min(w.peer, peerOf(w, size(w) - 1)); }
  Transfer transfer(const Waiting& w, std::uint32_t j) const {
    const std::uint64_t off = w.run == 0 ? w.offset : w.offset + j * runs[w.run - 1].stride;
    return {w.dir, peerOf(w, j), Slice{w.buf, off, w.count}, w.level, w.push};
  }

  // Transfer i of the current step waits for its partner: it extends one of the last two
  // records' runs where it continues it (a mesh interleaves a send sweep and a receive sweep),
  // or starts a record. A run to one peer takes consecutive transfers only, so the ends of one
  // peer and direction in different records never interleave (the lookup relies on it).
  void wait(const Transfer& t, std::uint32_t i) {
    for (std::size_t k = waiting.size(); k > 0 && k + 2 > waiting.size(); --k)
      if (extend(waiting[k - 1], t, i)) return;
    waiting.push_back(
        {t.slice.offset, t.slice.count, t.peer, i, 0, t.slice.buf, t.dir, t.level, t.push});
  }

  bool extend(Waiting& b, const Transfer& t, std::uint32_t i) {
    if (b.dir != t.dir || b.buf != t.slice.buf || b.count != t.slice.count || b.level != t.level ||
        b.push != t.push || i <= last(b))
      return false;
    const std::int64_t peerStep = std::int64_t{t.peer} - std::int64_t{b.peer};
    if (b.run == 0) {
      if (peerStep == 0 ? i != b.index + 1 : peerStep != std::int32_t(peerStep)) return false;
      runs.push_back(
          {t.slice.offset - b.offset, 2, static_cast<std::int32_t>(peerStep), i - b.index});
      b.run = static_cast<std::uint32_t>(runs.size());
      return true;
    }
    Run& run = runs[b.run - 1];
    if (i != b.index + run.n * run.indexStep || t.peer != peerOf(b, run.n) ||
        t.slice.offset != b.offset + run.n * run.stride)
      return false;
    ++run.n;
    return true;
  }

  // The step is posted: sweeps long enough move to `sweeps`, the others become single records.
  void file() {
    bool split = false;
    for (const Waiting& w : waiting) split = split || sweep(w);
    if (split) {
      std::vector<Waiting> rest;
      std::vector<Run> kept;
      for (const Waiting& w : waiting) {
        if (w.run == 0) {
          rest.push_back(w);
          continue;
        }
        const Run& run = runs[w.run - 1];
        if (run.peerStep == 0 || run.n >= kMinSweep) {
          kept.push_back(run);
          Waiting moved = w;
          moved.run = static_cast<std::uint32_t>(kept.size());
          (run.peerStep == 0 ? rest : sweeps).push_back(moved);
          if (run.peerStep != 0)
            span = std::max(span, std::uint64_t{run.n - 1} *
                                      static_cast<std::uint64_t>(std::abs(run.peerStep)));
          continue;
        }
        for (std::uint32_t j = 0; j < run.n; ++j) {
          const Transfer t = transfer(w, j);
          rest.push_back(
              {t.slice.offset, t.slice.count, t.peer, at(w, j), 0, w.buf, w.dir, w.level, w.push});
        }
      }
      waiting.swap(rest);
      runs.swap(kept);
      std::sort(sweeps.begin(), sweeps.end(), [&](const Waiting& a, const Waiting& b) {
        return std::tuple(a.dir, lowest(a), a.index) < std::tuple(b.dir, lowest(b), b.index);
      });
      sweeps.shrink_to_fit();
      runs.shrink_to_fit();
    }
    std::sort(waiting.begin(), waiting.end(),
              [](const Waiting& a, const Waiting& b) { return a.key() < b.key(); });
    waiting.shrink_to_fit();
  }

  // Calls f(w, j) for every sweep w in direction d whose transfer j goes to peer q.
  template <class F>
  void stab(std::uint32_t q, Dir d, F&& f) const {
    auto k = std::partition_point(sweeps.begin(), sweeps.end(), [&](const Waiting& w) {
      return std::tuple(w.dir, lowest(w)) <= std::tuple(d, q);
    });
    while (k != sweeps.begin()) {
      const Waiting& w = *--k;
      if (w.dir != d || lowest(w) + span < q) return;
      const std::int64_t by = runs[w.run - 1].peerStep, off = std::int64_t{q} - w.peer;
      if (off % by != 0) continue;
      const std::int64_t j = off / by;
      if (j >= 0 && j < runs[w.run - 1].n) f(w, static_cast<std::uint32_t>(j));
    }
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
        std::vector<Waiting>().swap(st.sweeps);
        std::vector<Run>().swap(st.runs);
        st.span = 0;
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
      // completed), so the oldest waiting one is the one MPI's order pairs with this. The ends
      // of one pair and direction that have met their partner are the oldest ones, so a prefix
      // of the records to one peer, of each run to one peer, and of these ends in the sweeps.
      RankState& ps = state_[t.peer];
      const Dir want = t.dir == Dir::Send ? Dir::Recv : Dir::Send;
      const Waiting probe{0, 0, r, 0, 0, Buf::Output, want, 0, false};
      const auto group = std::equal_range(
          ps.waiting.begin(), ps.waiting.end(), probe, [](const Waiting& a, const Waiting& b) {
            return std::tie(a.peer, a.dir) < std::tie(b.peer, b.dir);
          });
      const auto it = std::partition_point(
          group.first, group.second, [&](const Waiting& w) { return ps.matched[ps.last(w)]; });
      const Waiting* found = nullptr;
      std::uint32_t j = 0, index = 0;
      if (it != group.second) {
        std::uint32_t first = 0;
        for (std::uint32_t len = ps.size(*it); len > 0;) {  // the first unmatched transfer
          const std::uint32_t half = len / 2;
          if (ps.matched[ps.at(*it, first + half)]) {
            first += half + 1;
            len -= half + 1;
          } else {
            len = half;
          }
        }
        found = &*it;
        j = first;
        index = ps.at(*it, first);
      }
      bool inSweep = false;
      ps.stab(r, want, [&](const Waiting& w, std::uint32_t k) {
        const std::uint32_t x = ps.at(w, k);
        if (ps.matched[x] || (found != nullptr && index < x)) return;
        found = &w;
        j = k;
        index = x;
        inSweep = true;
      });
      if (found == nullptr) {
        st.wait(t, i);
        continue;
      }
      const bool runDone = !inSweep && j + 1 == ps.size(*found);
      const XferRef them{t.peer, ps.step, index};
      const Transfer tt = ps.transfer(*found, j);
      if (t.dir == Dir::Send)
        match(me, t, them, tt);
      else
        match(them, tt, me, t);
      if (runDone && ++ps.stale * 2 > ps.waiting.size()) compact(ps);
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
    st.file();
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
