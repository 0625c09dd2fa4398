#include "algorithms/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>

#include "algorithms/provenance.hpp"
#include "algorithms/replay.hpp"

namespace hccl::algo {

std::string_view name(VerifyIssue::Kind k) {
  static constexpr std::array<std::string_view, 14> kNames = {
      "missing contribution", "duplicate contribution", "wrong position",     "not written",
      "rank order",           "size mismatch",          "unmatched transfer", "deadlock",
      "uninitialized read",   "transfer hazard",        "input write",        "out of bounds",
      "overlapping op",       "outside result"};
  return kNames[static_cast<std::size_t>(k)];
}

std::string describe(const std::vector<VerifyIssue>& issues) {
  std::string out;
  for (const VerifyIssue& i : issues) out += fmt::format("[{}] {}\n", name(i.kind), i.message);
  return out;
}

namespace {

using prov::IntervalMap;
using prov::Piece;
using prov::Value;
using Kind = VerifyIssue::Kind;

// MPI defines Scan and Exscan in rank order (their ops may be non-commutative): always checked.
VerifyOptions withScanOrder(VerifyOptions o, Collective c) {
  if (c == Collective::Scan || c == Collective::Exscan) o.requireRankOrder = true;
  return o;
}

// Element ranges [begin, end) of one buffer, sorted and disjoint once merged.
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

void mergeRanges(Ranges& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (const auto& x : v) {
    if (x.first >= x.second) continue;
    if (out > 0 && x.first <= v[out - 1].second)
      v[out - 1].second = std::max(v[out - 1].second, x.second);
    else
      v[out++] = x;
  }
  v.resize(out);
}

// What steps of a rank read or write in Scratch and in Output.
struct Touched {
  Ranges scratch, output;
  void add(const Slice& sl) {
    if (sl.count == 0) return;
    if (sl.buf == Buf::Scratch) scratch.emplace_back(sl.offset, sl.end());
    if (sl.buf == Buf::Output) output.emplace_back(sl.offset, sl.end());
  }
  void add(const Step& st) {
    for (const Transfer& t : st.xfers) add(t.slice);
    for (const LocalOp& op : st.ops) {
      add(op.dst);
      add(op.a);
      if (op.kind == OpKind::Reduce) add(op.b);
    }
  }
  void merge() {
    mergeRanges(scratch);
    mergeRanges(output);
  }
};

// A step source that can tell what a rank's steps after step k touch (the streamed check's).
class Liveness {
 public:
  virtual ~Liveness() = default;
  // Called at the completion of step k, which the source holds.
  virtual Touched touchedAfter(std::uint32_t r, std::uint32_t k) = 0;
};

class Verifier final : public ReplayObserver {
 public:
  // scratch: each rank's scratchCount(). live: when given, Scratch and Output elements that no
  // later step of their rank touches (and the final check does not read) are folded into their
  // neighbours' runs once a rank's buffers hold many runs.
  Verifier(const Problem& pb, StepSource& src, const std::vector<std::uint64_t>& scratch,
           const VerifyOptions& opt, Liveness* live = nullptr)
      : pb_(pb),
        src_(src),
        live_(live),
        opt_(withScanOrder(opt, pb.coll)),
        p_(pb.ranks),
        sets_(p_, opt.setGarbageBytes),
        mem_(p_),
        words_((p_ + 63) / 64),
        foldAt_(p_, kFoldRuns) {
    // Only a Barrier's result is what its ranks have heard of: the others' data says it.
    if (pb.coll == Collective::Barrier) {
      heard_.assign(std::size_t{p_} * words_, 0);
      heardIn_.assign(std::size_t{p_} * words_, 0);
    }
    for (std::uint32_t r = 0; r < p_; ++r) {
      if (!heard_.empty()) heardRow(heard_, r)[r / 64] |= std::uint64_t{1} << (r % 64);
      for (int b = 0; b < kNumBufs; ++b) {
        const Buf buf = static_cast<Buf>(b);
        const std::uint64_t n = buf == Buf::Scratch ? scratch[r] : pb.bufferCount(buf, r);
        mem_[r][static_cast<std::size_t>(b)] = IntervalMap(n);
      }
      seedInputs(r);
    }
  }

  std::vector<VerifyIssue> run() {
    // What the replay finds (mismatched, unmatched, stuck transfers) comes first and is never
    // crowded out by what it causes (at 1024 ranks one lost message leaves hundreds of ranks
    // reading what never arrived, more than maxIssues).
    const auto problems = replay(src_, *this);
    std::vector<VerifyIssue> caused = std::move(issues_);
    issues_.clear();
    for (const ReplayProblem& rp : problems) {
      Kind k = Kind::Deadlock;
      switch (rp.kind) {
        case ReplayProblem::Kind::SizeMismatch:
          k = Kind::SizeMismatch;
          break;
        case ReplayProblem::Kind::UnmatchedSend:
        case ReplayProblem::Kind::UnmatchedRecv:
        case ReplayProblem::Kind::BadPeer:
          k = Kind::UnmatchedTransfer;
          break;
        case ReplayProblem::Kind::Deadlock:
          k = Kind::Deadlock;
          break;
      }
      add(k, rp.rank, rp.step, rp.message);
    }
    for (VerifyIssue& i : caused)
      if (issues_.size() < opt_.maxIssues) issues_.push_back(std::move(i));
    if (!issues_.empty()) return std::move(issues_);
    for (std::uint32_t r = 0; r < p_; ++r)
      if (src_.steps(r) == 0) finish(r);
    trimFinals();
    return std::move(finals_);
  }

  // ---- replay hooks ----

  void posted(std::uint32_t r, std::uint32_t step) override {
    collectSets();
    const Step& st = src_.step(r, step);
    for (const Transfer& t : st.xfers) {
      const auto what = [&t] { return toString(t); };
      if (!inBounds(r, step, t.slice, what)) continue;
      if (t.dir == Dir::Send) {
        checkInit(r, step, t.slice, what);
      } else if (t.slice.buf == Buf::Input) {
        add(Kind::InputWrite, r, step,
            fmt::format("rank {} step {}: {} writes the user's input buffer", r, step, what()));
      } else {
        checkResultWrite(r, step, t.slice, what);
      }
    }
    checkHazards(r, step, st);
  }

  // A send carries what its slice holds when it is posted. The sender's memory cannot change
  // between posting and matching (it changes when the sender's step completes, which waits for
  // this match, or by a receive of the same step landing on the slice, a transfer hazard), so
  // the data is read here and written straight into the receiver: a receive lands before the
  // step's local ops, and no other transfer of its step touches its slice (else a hazard).
  // Nothing is held per transfer in flight.
  void transferred(const XferRef& snd, const Transfer& ts, const XferRef& rcv,
                   const Transfer& t) override {
    if (t.slice.count != ts.slice.count) return;  // reported by the replay
    // Which end copies follows from the flag: ends that disagree would wait for each other.
    if (t.push != ts.push)
      add(Kind::UnmatchedTransfer, rcv.rank, rcv.step,
          fmt::format("rank {} step {}: {} meets rank {}'s {}: only one end is a push", rcv.rank,
                      rcv.step, toString(t), snd.rank, toString(ts)));
    if (fits(snd.rank, ts.slice) && fits(rcv.rank, t.slice) && t.slice.count > 0)
      buf(rcv.rank, t.slice.buf)
          .write(t.slice.offset, buf(snd.rank, ts.slice.buf).read(ts.slice.offset, ts.slice.count));
    // What the sender has heard of when it posted (unchanged since, for the same reason) reaches
    // the receiver when its step completes.
    if (!heard_.empty()) {
      const std::uint64_t* from = heardRow(heard_, snd.rank);
      std::uint64_t* into = heardRow(heardIn_, rcv.rank);
      for (std::uint32_t w = 0; w < words_; ++w) into[w] |= from[w];
    }
  }

  void completed(std::uint32_t r, std::uint32_t step) override {
    collectSets();
    if (!heard_.empty()) {
      std::uint64_t* h = heardRow(heard_, r);
      const std::uint64_t* in = heardRow(heardIn_, r);
      for (std::uint32_t w = 0; w < words_; ++w) h[w] |= in[w];
    }
    for (const LocalOp& op : src_.step(r, step).ops) runOp(r, step, op);
    if (step + 1 == src_.steps(r))
      finish(r);
    else
      foldDead(r, step);
  }

 private:
  IntervalMap& buf(std::uint32_t r, Buf b) { return mem_[r][static_cast<std::size_t>(b)]; }

  // Between two replay events every rank set in use sits in some rank's buffers: the moment to
  // drop the partial sums nothing holds any more (RankSets::collect).
  void collectSets() {
    if (!sets_.collectWanted()) return;
    std::vector<bool> live = sets_.liveMarks();
    for (const auto& bufs : mem_)
      for (const IntervalMap& m : bufs) m.markSets(live);
    sets_.collect(live);
  }

  // Scratch and Output elements that no later step of the rank reads or writes, and that the
  // final check does not read, are given their live neighbour's value (IntervalMap::absorbDead):
  // nothing observes them again, and the runs left follow the partial sums still live. Done when
  // the rank's two buffers have doubled their runs since the last fold (at least kFoldRuns), so a
  // schedule whose runs are all live costs a few folds, not one per step.
  void foldDead(std::uint32_t r, std::uint32_t step) {
    if (live_ == nullptr) return;
    IntervalMap &scratch = buf(r, Buf::Scratch), &output = buf(r, Buf::Output);
    if (scratch.runs() + output.runs() < foldAt_[r]) return;
    Touched t = live_->touchedAfter(r, step);
    t.add(finalRead(r));
    t.merge();
    scratch.absorbDead(t.scratch);
    output.absorbDead(t.output);
    foldAt_[r] = std::max(kFoldRuns, 2 * (scratch.runs() + output.runs()));
  }
  // The part of Output checkFinal() reads: a ReduceScatter's result slice (its other blocks hold
  // partial sums in place), all of it for the other collectives (read or not: what stays live
  // only costs runs).
  Slice finalRead(std::uint32_t r) const {
    if (pb_.coll == Collective::ReduceScatter) return pb_.resultSlice(r);
    return Slice{Buf::Output, 0, pb_.bufferCount(Buf::Output, r)};
  }

  // A rank that has run its last step is checked at once and its buffers released (nothing
  // reads them: every send it posted has met its receive), so the state held follows the ranks
  // still running. The issues found are kept apart, reported only when the replay finds no
  // problem, in rank order as a check of every rank at the end would give them.
  void finish(std::uint32_t r) {
    std::vector<VerifyIssue> caused;
    std::swap(caused, issues_);
    checkFinal(r);
    for (VerifyIssue& i : issues_) finals_.push_back(std::move(i));
    issues_ = std::move(caused);
    if (finals_.size() > 4 * opt_.maxIssues) trimFinals();
    for (IntervalMap& m : mem_[r]) m = IntervalMap();
  }
  void trimFinals() {
    std::stable_sort(finals_.begin(), finals_.end(),
                     [](const VerifyIssue& a, const VerifyIssue& b) { return a.rank < b.rank; });
    if (finals_.size() > opt_.maxIssues) finals_.resize(opt_.maxIssues);
  }
  std::uint64_t* heardRow(std::vector<std::uint64_t>& v, std::uint32_t r) {
    return v.data() + std::size_t{r} * words_;
  }

  // Within a step every transfer is in flight at once: a receive must not land where another
  // transfer of the same step reads or writes. Sorted by offset, an overlap is a slice starting
  // before the furthest end seen so far: O(x log x) for x transfers, one report for every
  // transfer that starts inside an earlier one (with that one, or the one reaching furthest,
  // as the witness) when either of the two is a receive.
  void checkHazards(std::uint32_t r, std::uint32_t step, const Step& st) {
    const auto& x = st.xfers;
    if (x.size() < 2) return;
    std::vector<std::uint32_t> order;
    bool anyRecv = false;
    for (std::uint32_t i = 0; i < x.size(); ++i)
      if (x[i].slice.count > 0) {
        order.push_back(i);
        anyRecv = anyRecv || x[i].dir == Dir::Recv;
      }
    if (!anyRecv) return;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      const Slice &sa = x[a].slice, &sb = x[b].slice;
      return std::tie(sa.buf, sa.offset, a) < std::tie(sb.buf, sb.offset, b);
    });
    std::vector<std::pair<std::uint32_t, std::uint32_t>> hits;  // (receive, other)
    constexpr std::uint32_t kNone = ~0u;
    std::uint32_t far = kNone, farRecv = kNone;  // reaching furthest: any, and a receive
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::uint32_t i = order[k];
      const Slice& sl = x[i].slice;
      if (k > 0 && x[order[k - 1]].slice.buf != sl.buf) far = farRecv = kNone;
      const bool isRecv = x[i].dir == Dir::Recv;
      if (isRecv && far != kNone && x[far].slice.end() > sl.offset) {
        if (x[far].dir == Dir::Recv)
          hits.emplace_back(std::min(i, far), std::max(i, far));
        else
          hits.emplace_back(i, far);
      } else if (!isRecv && farRecv != kNone && x[farRecv].slice.end() > sl.offset) {
        hits.emplace_back(farRecv, i);
      }
      if (far == kNone || sl.end() > x[far].slice.end()) far = i;
      if (isRecv && (farRecv == kNone || sl.end() > x[farRecv].slice.end())) farRecv = i;
    }
    std::sort(hits.begin(), hits.end());
    for (const auto& [i, j] : hits)
      add(Kind::TransferHazard, r, step,
          fmt::format("rank {} step {}: {} overwrites {} while {} is in flight", r, step,
                      toString(x[i]), toString(x[j].slice), toString(x[j])));
  }

  void add(Kind k, std::uint32_t r, std::uint32_t step, std::string msg) {
    if (issues_.size() < opt_.maxIssues) issues_.push_back({k, r, step, std::move(msg)});
  }

  Value contribution(std::uint32_t rank, std::int64_t delta) {
    return {sets_.single(rank), delta, Value::kOrdered};
  }

  // Where each rank's input sits before the first step.
  void seedInputs(std::uint32_t r) {
    const Problem& pb = pb_;
    const std::uint64_t n = pb.total();
    const auto at = [&](std::uint32_t i) { return static_cast<std::int64_t>(pb.blocks.offset(i)); };
    switch (pb.coll) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce:
      case Collective::Scan:
      case Collective::Exscan:
        if (pb.bufferCount(Buf::Input, r) > 0)
          buf(r, Buf::Input).fill(0, n, contribution(r, 0));
        else
          buf(r, Buf::Output).fill(0, n, contribution(r, 0));
        break;
      case Collective::AllGather:
        if (pb.inPlace)
          buf(r, Buf::Output)
              .fill(pb.blocks.offset(r), pb.blocks.count(r), contribution(r, -at(r)));
        else
          buf(r, Buf::Input).fill(0, pb.blocks.count(r), contribution(r, 0));
        break;
      case Collective::Broadcast:
        if (r == pb.root) buf(r, Buf::Output).fill(0, n, contribution(r, 0));
        break;
      case Collective::Scatter:
        if (r == pb.root)
          buf(r, pb.inPlace ? Buf::Output : Buf::Input).fill(0, n, contribution(r, 0));
        break;
      case Collective::AllToAll:
        buf(r, pb.inPlace ? Buf::Output : Buf::Input).fill(0, n, contribution(r, 0));
        break;
      case Collective::Gather:
        if (r == pb.root && pb.inPlace)
          buf(r, Buf::Output)
              .fill(pb.blocks.offset(r), pb.blocks.count(r), contribution(r, -at(r)));
        else
          buf(r, Buf::Input).fill(0, pb.blocks.count(r), contribution(r, 0));
        break;
      case Collective::AllToAllV: {
        const std::uint64_t row = pb.pairs.sendBlocks(r).total();
        buf(r, pb.inPlace ? Buf::Output : Buf::Input).fill(0, row, contribution(r, 0));
        break;
      }
      case Collective::Barrier:
        break;
    }
  }

  // The write contract: Output is written only inside the rank's result.
  template <class What>
  void checkResultWrite(std::uint32_t r, std::uint32_t step, const Slice& sl, const What& what) {
    if (sl.buf != Buf::Output || sl.count == 0) return;
    // Kept per rank (a slice or two each): an AllToAllV's costs O(p) to compute, once per
    // receive that was O(p^3) over a 4096-rank mesh or pairwise exchange (minutes).
    if (allowed_.empty()) allowed_.resize(p_);
    if (!allowed_[r]) allowed_[r] = pb_.writableOutput(r);
    const std::vector<Slice>& allowed = *allowed_[r];
    std::string where;
    for (const Slice& a : allowed) {
      if (sl.offset >= a.offset && sl.end() <= a.end()) return;
      where += (where.empty() ? "" : ", ") + toString(a);
    }
    add(Kind::OutsideResult, r, step,
        fmt::format("rank {} step {}: {} writes {} outside its result {}", r, step, what(),
                    toString(sl), where.empty() ? "(none)" : where));
  }

  bool fits(std::uint32_t r, const Slice& sl) {
    return sl.count == 0 || sl.end() <= mem_[r][static_cast<std::size_t>(sl.buf)].size();
  }

  template <class What>
  bool inBounds(std::uint32_t r, std::uint32_t step, const Slice& sl, const What& what) {
    if (fits(r, sl)) return true;
    add(Kind::OutOfBounds, r, step,
        fmt::format("rank {} step {}: {} reaches {} but {} holds {} elements", r, step, what(),
                    sl.end(), name(sl.buf), mem_[r][static_cast<std::size_t>(sl.buf)].size()));
    return false;
  }

  template <class What>
  std::vector<Piece> readInit(std::uint32_t r, std::uint32_t step, const Slice& sl,
                              const What& what) {
    std::vector<Piece> pieces = buf(r, sl.buf).read(sl.offset, sl.count);
    for (const Piece& p : pieces) {
      if (!p.v.uninit()) continue;
      add(Kind::UninitializedRead, r, step,
          fmt::format("rank {} step {}: {} reads {}[{}+{}] before anything was written there", r,
                      step, what(), name(sl.buf), sl.offset + p.begin, p.end - p.begin));
      break;
    }
    return pieces;
  }

  // readInit without keeping the pieces: what a posted send checks.
  template <class What>
  void checkInit(std::uint32_t r, std::uint32_t step, const Slice& sl, const What& what) {
    if (const auto u = buf(r, sl.buf).firstUninit(sl.offset, sl.count))
      add(Kind::UninitializedRead, r, step,
          fmt::format("rank {} step {}: {} reads {}[{}+{}] before anything was written there", r,
                      step, what(), name(sl.buf), sl.offset + u->begin, u->end - u->begin));
  }

  void runOp(std::uint32_t r, std::uint32_t step, const LocalOp& op) {
    const auto what = [&op] { return toString(op); };
    if (op.dst.count != op.a.count || (op.kind == OpKind::Reduce && op.b.count != op.a.count)) {
      add(Kind::OverlappingOp, r, step,
          fmt::format("rank {} step {}: {} mixes slice lengths", r, step, what()));
      return;
    }
    if (!inBounds(r, step, op.dst, what) || !inBounds(r, step, op.a, what) ||
        (op.kind == OpKind::Reduce && !inBounds(r, step, op.b, what)))
      return;
    if (op.dst.buf == Buf::Input && op.dst.count > 0) {
      add(Kind::InputWrite, r, step,
          fmt::format("rank {} step {}: {} writes the user's input buffer", r, step, what()));
      return;
    }
    checkResultWrite(r, step, op.dst, what);
    // A destination may be an operand exactly, never a shifted overlap of one.
    const auto partial = [&](const Slice& x) { return op.dst.overlaps(x) && !(op.dst == x); };
    if (partial(op.a) || (op.kind == OpKind::Reduce && partial(op.b))) {
      add(Kind::OverlappingOp, r, step,
          fmt::format("rank {} step {}: {} writes a slice overlapping its source", r, step,
                      what()));
      return;
    }
    std::vector<Piece> a = readInit(r, step, op.a, what);
    if (op.kind == OpKind::Copy) {
      buf(r, op.dst.buf).write(op.dst.offset, a);
      return;
    }
    std::vector<Piece> b = readInit(r, step, op.b, what);
    buf(r, op.dst.buf).write(op.dst.offset, combine(r, step, what, a, b));
  }

  // Element-wise a (+) b over two piece lists covering the same length.
  template <class What>
  std::vector<Piece> combine(std::uint32_t r, std::uint32_t step, const What& what,
                             const std::vector<Piece>& a, const std::vector<Piece>& b) {
    std::vector<Piece> out;
    std::size_t i = 0, j = 0;
    bool reportedMix = false, reportedDup = false, reportedOrder = false;
    while (i < a.size() && j < b.size()) {
      const std::uint64_t beg = std::max(a[i].begin, b[j].begin);
      const std::uint64_t end = std::min(a[i].end, b[j].end);
      const Value &x = a[i].v, &y = b[j].v;
      Value v;
      if (x.uninit() || y.uninit()) {
        v = Value{};  // already reported as an uninitialized read
      } else {
        v.set = sets_.unite(x.set, y.set);
        v.delta = x.delta;
        v.flags = static_cast<std::uint8_t>((x.flags | y.flags) & (Value::kDup | Value::kMixed));
        if (x.delta != y.delta) {
          v.flags |= Value::kMixed;
          if (!reportedMix)
            add(Kind::WrongPosition, r, step,
                fmt::format("rank {} step {}: {} combines input elements {} and {} at the same "
                            "position",
                            r, step, what(), beg + static_cast<std::uint64_t>(x.delta),
                            beg + static_cast<std::uint64_t>(y.delta)));
          reportedMix = true;
        }
        if (sets_.intersects(x.set, y.set)) {
          v.flags |= Value::kDup;
          if (!reportedDup)
            add(Kind::DuplicateContribution, r, step,
                fmt::format("rank {} step {}: {} counts rank(s) {} twice", r, step, what(),
                            sets_.common(x.set, y.set)));
          reportedDup = true;
        }
        const bool ordered = (x.flags & Value::kOrdered) && (y.flags & Value::kOrdered) &&
                             sets_.max(x.set) < sets_.min(y.set);
        if (ordered) v.flags |= Value::kOrdered;
        if (!ordered && opt_.requireRankOrder && !reportedOrder) {
          add(Kind::RankOrder, r, step,
              fmt::format("rank {} step {}: {} puts ranks {} left of ranks {}", r, step, what(),
                          sets_.toString(x.set), sets_.toString(y.set)));
          reportedOrder = true;
        }
      }
      out.push_back({beg, end, v});
      if (a[i].end == end) ++i;
      if (b[j].end == end) ++j;
    }
    return out;
  }

  // The output each rank must hold at the end, as runs of expected values.
  void checkFinal(std::uint32_t r) {
    const Problem& pb = pb_;
    const auto at = [&](std::uint32_t i) { return static_cast<std::int64_t>(pb.blocks.offset(i)); };
    const std::uint64_t n = pb.total();
    switch (pb.coll) {
      case Collective::AllReduce:
        expect(r, 0, n, sets_.all(), 0);
        break;
      case Collective::ReduceScatter: {
        const Slice res = pb.resultSlice(r);
        expect(r, res.offset, res.count, sets_.all(),
               at(r) - static_cast<std::int64_t>(res.offset));
        break;
      }
      case Collective::AllGather:
        for (std::uint32_t i = 0; i < p_; ++i)
          expect(r, pb.blocks.offset(i), pb.blocks.count(i), sets_.single(i), -at(i));
        break;
      case Collective::Broadcast:
        expect(r, 0, n, sets_.single(pb.root), 0);
        break;
      case Collective::Reduce:
        if (r == pb.root) expect(r, 0, n, sets_.all(), 0);
        break;
      case Collective::Scatter:
        // In place the root's output is the send buffer: all of it must be left as it was.
        if (r == pb.root && pb.inPlace)
          expect(r, 0, n, sets_.single(r), 0);
        else
          expect(r, 0, pb.blocks.count(r), sets_.single(pb.root), at(r));
        break;
      case Collective::AllToAll:
        // Block i comes from rank i: its element e is rank i's input element offset(r) + e.
        for (std::uint32_t i = 0; i < p_; ++i)
          expect(r, pb.blocks.offset(i), pb.blocks.count(i), sets_.single(i), at(r) - at(i));
        break;
      case Collective::Gather:
        if (r == pb.root)
          for (std::uint32_t i = 0; i < p_; ++i)
            expect(r, pb.blocks.offset(i), pb.blocks.count(i), sets_.single(i), -at(i));
        break;
      case Collective::AllToAllV: {
        // Block i of r's column comes from rank i: element e is rank i's row element at the
        // offset of its block for r, plus e.
        const Blocks col = pb.pairs.recvBlocks(r);
        for (std::uint32_t i = 0; i < p_; ++i) {
          const auto from = static_cast<std::int64_t>(sendOffset(i, r));
          expect(r, col.offset(i), col.count(i), sets_.single(i),
                 from - static_cast<std::int64_t>(col.offset(i)));
        }
        break;
      }
      case Collective::Barrier:
        break;
      case Collective::Scan:
        expect(r, 0, n, prefix(r + 1), 0);
        break;
      case Collective::Exscan:
        if (r > 0) expect(r, 0, n, prefix(r), 0);
        break;
    }
    // Every collective's last step depends on every rank having entered it: for most the data
    // says so; for Barrier it is all there is.
    if (!heard_.empty()) {
      const std::uint64_t* h = heardRow(heard_, r);
      std::vector<std::uint64_t> missing(words_, 0);
      bool any = false;
      for (std::uint32_t i = 0; i < p_; ++i)
        if (!((h[i / 64] >> (i % 64)) & 1)) {
          missing[i / 64] |= std::uint64_t{1} << (i % 64);
          any = true;
        }
      if (any)
        add(Kind::MissingContribution, r, src_.steps(r),
            fmt::format("rank {} leaves the barrier having heard only of ranks {}; missing {}", r,
                        prov::RankSets::format(h, p_), prov::RankSets::format(missing.data(), p_)));
    }
  }

  // The set of ranks 0..k-1.
  std::uint32_t prefix(std::uint32_t k) { return sets_.range(0, k); }

  void expect(std::uint32_t r, std::uint64_t off, std::uint64_t count, std::uint32_t set,
              std::int64_t delta) {
    const std::uint32_t last = src_.steps(r);
    const std::string where = fmt::format("rank {} final out[{}+{}]", r, off, count);
    if (count == 0) return;
    if (off + count > buf(r, Buf::Output).size()) {
      add(Kind::OutOfBounds, r, last, where + ": the output buffer is too small");
      return;
    }
    // Relative to the slice start, element i must hold input index off + i + delta.
    const std::int64_t want = static_cast<std::int64_t>(off) + delta;
    for (const Piece& p : buf(r, Buf::Output).read(off, count)) {
      const std::string at =
          fmt::format("rank {} final out[{}+{}]", r, off + p.begin, p.end - p.begin);
      if (p.v.uninit()) {
        add(Kind::NotWritten, r, last, at + ": never written");
      } else if (p.v.delta != want || (p.v.flags & Value::kMixed)) {
        add(Kind::WrongPosition, r, last,
            fmt::format("{}: holds input elements starting at {}, expected {}", at,
                        p.v.delta + static_cast<std::int64_t>(p.begin),
                        want + static_cast<std::int64_t>(p.begin)));
      } else if (p.v.set != set) {
        const std::string missing = sets_.difference(set, p.v.set);
        const std::string extra = sets_.difference(p.v.set, set);
        add(missing != "none" ? Kind::MissingContribution : Kind::DuplicateContribution, r, last,
            fmt::format("{}: contributions of ranks {}; missing {}, unexpected {}", at,
                        sets_.toString(p.v.set), missing, extra));
      } else if (p.v.flags & Value::kDup) {
        add(Kind::DuplicateContribution, r, last, at + ": some rank is counted twice");
      } else if (opt_.requireRankOrder && !(p.v.flags & Value::kOrdered)) {
        add(Kind::RankOrder, r, last, at + ": not reduced in rank order");
      }
    }
  }

  static constexpr std::size_t kFoldRuns = 64;
  const Problem& pb_;
  StepSource& src_;
  Liveness* live_;
  VerifyOptions opt_;
  std::uint32_t p_;
  prov::RankSets sets_;
  std::vector<std::array<IntervalMap, kNumBufs>> mem_;
  // Barrier only: per rank a bitset row of the ranks it has heard from (directly or through
  // others), and of those its current step's receives bring when the step completes.
  std::uint32_t words_;
  std::vector<std::uint64_t> heard_, heardIn_;
  std::vector<VerifyIssue> issues_, finals_;
  std::vector<std::size_t> foldAt_;  // per rank, the runs at which foldDead() looks again
  std::vector<std::optional<std::vector<Slice>>> allowed_;  // writableOutput(), per rank

  // AllToAllV: pb.pairs.sendBlocks(i).offset(r), asked for every pair by the final checks.
  // Through sendBlocks (a row built for each pair) that was O(p^3): 4096 ranks, minutes. Equal
  // pairs (the sweep's) are each * r; other matrices get every row's offsets once, p * p as the
  // matrix itself.
  std::uint64_t sendOffset(std::uint32_t i, std::uint32_t r) {
    if (!pairsScanned_) {
      pairsScanned_ = true;
      const PairCounts& pc = pb_.pairs;
      const std::uint64_t each = pc.count(0, 0);
      bool equal = true;
      for (std::uint32_t a = 0; a < p_ && equal; ++a)
        for (std::uint32_t b = 0; b < p_ && equal; ++b) equal = pc.count(a, b) == each;
      if (equal)
        equalPairs_ = each;
      else
        for (std::uint32_t a = 0; a < p_; ++a) {
          const Blocks row = pc.sendBlocks(a);
          for (std::uint32_t b = 0; b < p_; ++b) rowOffsets_.push_back(row.offset(b));
        }
    }
    return equalPairs_ ? *equalPairs_ * r : rowOffsets_[std::size_t{i} * p_ + r];
  }
  bool pairsScanned_ = false;
  std::optional<std::uint64_t> equalPairs_;
  std::vector<std::uint64_t> rowOffsets_;
};

// A pushed receive's slice is open to its sender from the start of the step before
// (Transfer::push): nothing of that step may touch it. Checked on each rank's whole schedule
// apart from the replay (whose step windows hold one step at a time).
void checkExposures(const RankSchedule& rs, std::uint32_t r, std::vector<VerifyIssue>& out) {
  for (std::size_t k = 1; k < rs.steps.size(); ++k)
    for (const Transfer& t : rs.steps[k].xfers) {
      if (!t.push || t.dir != Dir::Recv) continue;
      const Step& prev = rs.steps[k - 1];
      std::string by;
      for (const Transfer& y : prev.xfers)
        if (by.empty() && y.slice.overlaps(t.slice)) by = toString(y);
      for (const LocalOp& op : prev.ops)
        if (by.empty() && (op.dst.overlaps(t.slice) || op.a.overlaps(t.slice) ||
                           (op.kind == OpKind::Reduce && op.b.overlaps(t.slice))))
          by = toString(op);
      if (!by.empty())
        out.push_back({VerifyIssue::Kind::TransferHazard, r, static_cast<std::uint32_t>(k),
                       fmt::format("rank {} step {}: {} is open to its sender from step {}, "
                                   "where {} touches it",
                                   r, k, toString(t), k - 1, by)});
    }
}

// Steps generated on demand: each rank keeps a window of consecutive steps (about `perRank`
// transfers and ops, at least one step) and is generated again when the replay moves past it.
class GeneratedSteps final : public StepSource, public Liveness {
 public:
  GeneratedSteps(const Problem& pb, const RankGenerator& gen, std::size_t heldItems)
      : pb_(pb),
        gen_(gen),
        perRank_(std::max<std::size_t>(64, heldItems / std::max(1u, pb.ranks))),
        ranks_(pb.ranks) {
    for (std::uint32_t r = 0; r < pb.ranks; ++r) {
      RankSchedule all = whole(r);
      checkExposures(all, r, exposures_);
      ranks_[r].steps = static_cast<std::uint32_t>(all.steps.size());
      scratch_.push_back(scratchCount(all));
      keep(r, std::move(all), 0);
      release(r, false);
    }
  }
  const std::vector<std::uint64_t>& scratch() const { return scratch_; }
  std::vector<VerifyIssue>& exposures() { return exposures_; }
  std::uint32_t ranks() const override { return pb_.ranks; }
  std::uint32_t steps(std::uint32_t r) const override { return ranks_[r].steps; }
  const Step& step(std::uint32_t r, std::uint32_t k) override {
    Window& w = ranks_[r];
    if (k < w.base || k >= w.base + w.held.size()) keep(r, whole(r), k);
    return w.held[k - w.base];
  }
  RankSchedule whole(std::uint32_t r) override {
    RankSchedule s = withPrivateInput(pb_, r, gen_);
    prune(s);
    // Storage dropped before the previous generation goes back to the allocator only now, below
    // the steps just generated, so the next generation reuses it (see dropped_).
    std::swap(dropped_, older_);
    dropped_.clear();
    return s;
  }
  Touched touchedAfter(std::uint32_t r, std::uint32_t k) override {
    step(r, k);  // the window holding k
    Window& w = ranks_[r];
    if (!w.laterKnown) {  // asked for at most once per window, by a rank holding many runs
      RankSchedule all = whole(r);
      for (std::size_t j = w.base + w.held.size(); j < all.steps.size(); ++j)
        w.later.add(all.steps[j]);
      dropped_.push_back(std::move(all.steps));
      w.later.merge();
      w.later.scratch.shrink_to_fit();
      w.later.output.shrink_to_fit();
      w.laterKnown = true;
    }
    Touched t = w.later;
    for (std::size_t j = k + 1 - w.base; j < w.held.size(); ++j) t.add(w.held[j]);
    return t;
  }
  // A window over the rank's share (one step of a one-step mesh: 2p transfers) is dropped while
  // the rank waits, and generated again when its step completes: held for every rank at once it
  // would be p^2 transfers. A finished rank's window is never read again.
  void release(std::uint32_t r, bool finished) override {
    Window& w = ranks_[r];
    // Only a window of one step can be over the share (keep() stops before it); dropping the
    // others would regenerate a ring's schedule at every step.
    if (finished || (w.held.size() == 1 && w.items > perRank_)) {
      dropped_.push_back(std::move(w.held));
      w.held = {};
      w.later = {};
      w.laterKnown = false;
      w.items = 0;
    }
  }

 private:
  struct Window {
    std::uint32_t steps = 0, base = 0;
    std::size_t items = 0;  // steps, transfers and ops held
    std::vector<Step> held;
    // What the steps after the window touch, merged; computed when first asked for (a rank
    // whose buffers hold few runs never asks, and every rank holding O(p) ranges at once
    // would be what the folding saves).
    Touched later;
    bool laterKnown = false;
  };
  void keep(std::uint32_t r, RankSchedule all, std::uint32_t from) {
    Window& w = ranks_[r];
    std::uint32_t to = from;
    // A step that would take the window over the share ends it (unless it is the first), so
    // only a window of one step is ever over the share, and release() can tell it apart: in
    // place, a ReduceScatter's first step copies the input aside and NB's next step has 1.5p
    // transfers and ops, a window held by every rank while it waits (p = 2048: 485 MB).
    const auto size = [&](std::size_t k) {
      return 1 + all.steps[k].xfers.size() + all.steps[k].ops.size();
    };
    for (w.items = 0; to < all.steps.size() && (to == from || w.items + size(to) <= perRank_); ++to)
      w.items += size(to);
    w.base = from;
    w.later = {};
    w.laterKnown = false;
    w.held.assign(std::make_move_iterator(all.steps.begin() + from),
                  std::make_move_iterator(all.steps.begin() + to));
    dropped_.push_back(std::move(all.steps));
  }

  const Problem& pb_;
  const RankGenerator& gen_;
  std::size_t perRank_;
  std::vector<Window> ranks_;
  std::vector<std::uint64_t> scratch_;
  std::vector<VerifyIssue> exposures_;
  // Steps dropped (released windows, what a generation held outside its window), freed two
  // generations later. A one-step mesh's step at 4096 ranks (8190 transfers, 330 KB) is generated
  // again several times a rank; freed at once it sat at the top of the heap, which glibc gave
  // back to the kernel just before the next generation asked for as much again: 1.1 M page
  // faults and 8 s of system CPU (mesh_alltoall at 4096, against 19 s user). Freed behind newer
  // steps, it is reused instead. Between two generations nothing new is held, so what waits
  // here was held before: the bound stays the windows' plus one rank's schedule.
  std::vector<std::vector<Step>> dropped_, older_;
};

}  // namespace

std::vector<VerifyIssue> verify(const Schedule& s, const VerifyOptions& opt) {
  if (s.ranks.size() != s.problem.ranks)
    return {{VerifyIssue::Kind::OutOfBounds, 0, 0,
             fmt::format("the schedule has {} rank schedules for a problem of {} ranks",
                         s.ranks.size(), s.problem.ranks)}};
  HeldSteps src(s.ranks);
  std::vector<std::uint64_t> scratch;
  std::vector<VerifyIssue> exposures;
  for (std::uint32_t r = 0; r < s.ranks.size(); ++r) {
    scratch.push_back(scratchCount(s.ranks[r]));
    checkExposures(s.ranks[r], r, exposures);
  }
  if (!exposures.empty()) return exposures;
  return Verifier(s.problem, src, scratch, opt).run();
}

std::vector<VerifyIssue> verifyGenerated(const Problem& pb, const RankGenerator& gen,
                                         const VerifyOptions& opt, std::size_t heldItems) {
  GeneratedSteps src(pb, gen, heldItems);
  if (!src.exposures().empty()) return std::move(src.exposures());
  return Verifier(pb, src, src.scratch(), opt, &src).run();
}

}  // namespace hccl::algo
