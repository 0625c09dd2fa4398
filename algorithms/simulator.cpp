#include "algorithms/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace hccl::algo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

struct End {
  std::uint32_t rank, step, index;
};

// What the simulation needs of a rank's schedule, and no more: a whole communicator's
// RankSchedules (slices, local ops) at 32768 ranks take gigabytes, these a tenth.
struct CompactXfer {
  std::uint64_t count = 0;
  std::uint32_t peer = 0;
  std::uint8_t level = 0;
  bool send = false;
};
struct CompactStep {
  std::uint32_t first = 0, size = 0;  // its transfers in CompactSchedule::xfers
  std::uint64_t reduced = 0;          // bytes its Reduce ops write
  std::uint8_t level = 0;             // the highest level of its transfers
};
struct CompactSchedule {
  std::vector<CompactStep> steps;
  std::vector<CompactXfer> xfers;

  // bundle: a step's transfers with one peer, in one direction, on one level become one (their
  // counts summed), moved as one flow (SimOptions::bundle says why).
  CompactSchedule(const RankSchedule& s, std::size_t elem, bool bundle) {
    steps.reserve(s.steps.size());
    std::unordered_map<std::uint64_t, std::uint32_t> at;  // bundle key -> index in xfers
    for (const Step& step : s.steps) {
      const auto first = static_cast<std::uint32_t>(xfers.size());
      CompactStep c{first, 0, 0, 0};
      // Few transfers: a linear search over the step's bundles beats hashing.
      const bool hashed = bundle && step.xfers.size() > 16;
      at.clear();
      for (const Transfer& t : step.xfers) {
        c.level = std::max(c.level, t.level);
        const CompactXfer x{t.slice.count, t.peer, t.level, t.dir == Dir::Send};
        std::uint32_t found = kNone;
        if (hashed) {
          const std::uint64_t k =
              (std::uint64_t{t.peer} << 9) | (std::uint64_t{t.level} << 1) | (x.send ? 1u : 0u);
          const auto [it, added] = at.try_emplace(k, static_cast<std::uint32_t>(xfers.size()));
          if (!added) found = it->second;
        } else if (bundle) {
          for (std::uint32_t i = first; i < xfers.size() && found == kNone; ++i)
            if (xfers[i].peer == x.peer && xfers[i].send == x.send && xfers[i].level == x.level)
              found = i;
        }
        if (found == kNone)
          xfers.push_back(x);
        else
          xfers[found].count += x.count;
      }
      c.size = static_cast<std::uint32_t>(xfers.size()) - first;
      for (const LocalOp& op : step.ops)
        if (op.kind == OpKind::Reduce) c.reduced += op.dst.count * elem;
      steps.push_back(c);
    }
    xfers.shrink_to_fit();
  }
  const CompactXfer& xfer(std::uint32_t step, std::uint32_t index) const {
    return xfers[steps[step].first + index];
  }
};

// Ends posted and not yet matched between one sender and one receiver, oldest first: only one
// side waits at a time (a new end meets the other side's oldest).
struct PairQueue {
  std::vector<End> waiting;
  std::size_t head = 0;
  bool sends = false;  // the waiting ends are the sender's
};

// At most: its link, two ports, two NICs.
constexpr std::size_t kMaxResources = 5;

struct Flow {
  End snd{}, rcv{};
  double remaining = 0;   // bytes
  double rate = 0;        // bytes per second now
  double since = 0;       // when `remaining` was last brought up to date
  std::uint64_t seq = 0;  // creation order: flows re-share in it, so ties break as they always did
  std::uint32_t version = 0;  // of its pending end event; kept across reuses of the slot
  // Resources it counts on (its simulated ends'), and those it only reads its share from (an
  // outside end's, through its representative), as indices into resources_.
  std::array<std::uint32_t, kMaxResources> counts{}, reads{};
  std::uint8_t numCounts = 0, numReads = 0;
  std::uint8_t level = 0;
  bool sndSimulated = true, rcvSimulated = true;
  bool endPending = false;  // an end event of the current version is in the heap
};

// A shared capacity: a pair link, a rank's port, a server's NIC.
struct Resource {
  double capacity = kInf;  // bytes per second
  std::vector<std::uint32_t> flows, readers;
  std::uint32_t users = 0;  // flows created on it and not finished (pair links are recycled)
};

enum class Kind : std::uint8_t { Post, FlowStart, FlowEnd };

struct Event {
  double time;
  std::uint64_t order;  // ties in posting order, so the run is deterministic
  Kind kind;
  std::uint32_t id;  // simulated rank's index (Post) or flow
  std::uint32_t version;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

struct StepTimes {
  double posted = 0, end = 0;
  std::uint8_t level = 0;
  bool transfers = false;
};

struct RankState {
  RankState(std::uint32_t r, CompactSchedule s) : rank(r), schedule(std::move(s)) {}
  std::uint32_t rank = 0;
  CompactSchedule schedule;
  std::uint32_t step = 0;
  std::size_t remaining = 0;  // transfers of the current step not done
  std::vector<StepTimes> times;
};

// An outside rank's schedule as its matches need it: its transfers sorted by peer and
// direction, each group in step order.
struct OutsideRank {
  CompactSchedule schedule;
  struct ByPeer {
    std::uint32_t peer;
    bool send;
    std::uint32_t step, index;
  };
  std::vector<ByPeer> byPeer;
};

class Simulation {
 public:
  Simulation(const SimRanks& in, std::size_t elem, const ClusterModel& m, const SimOptions& o)
      : in_(in), elem_(elem), m_(m), o_(o) {}

  SimResult run() {
    const std::size_t p = in_.serverOf.size();
    if (in_.rep.size() != p) {
      out_.error = fmt::format("{} ranks but representatives given for {}", p, in_.rep.size());
      return out_;
    }
    index_.assign(p, kNone);
    ranks_.reserve(in_.simulated.size());
    for (std::uint32_t r : in_.simulated) {
      if (r >= p || index_[r] != kNone) {
        out_.error = fmt::format("simulated rank {} is out of range or repeated", r);
        return out_;
      }
      index_[r] = static_cast<std::uint32_t>(ranks_.size());
      ranks_.emplace_back(r, in_.whole ? CompactSchedule(in_.whole->ranks[r], elem_, o_.bundle)
                                       : CompactSchedule(in_.schedule(r), elem_, o_.bundle));
    }
    for (std::uint32_t r = 0; r < p; ++r)
      if (in_.rep[r] >= p || index_[in_.rep[r]] == kNone) {
        out_.error = fmt::format("rank {}'s representative {} is not simulated", r, in_.rep[r]);
        return out_;
      }
    std::uint32_t servers = 0;
    for (std::uint32_t s : in_.serverOf) servers = std::max(servers, s + 1);
    portIndex_.assign(ranks_.size() * kNumLevels * 2, kNone);
    nicIndex_.assign(std::size_t{servers} * 3, kNone);
    out_.finish.assign(ranks_.size(), 0);
    for (std::uint32_t i = 0; i < ranks_.size(); ++i) push(0, Kind::Post, i, 0);
    while (!events_.empty() && out_.error.empty()) {
      std::pop_heap(events_.begin(), events_.end(), std::greater<>());
      const Event e = events_.back();
      events_.pop_back();
      now_ = e.time;
      switch (e.kind) {
        case Kind::Post:
          post(e.id);
          break;
        case Kind::FlowStart:
          start(e.id);
          break;
        case Kind::FlowEnd:
          if (flows_[e.id].version == e.version) {
            flows_[e.id].endPending = false;
            finish(e.id);
          } else {
            --stale_;
          }
          break;
      }
    }
    if (out_.error.empty()) reportStuck();
    std::uint32_t last = 0;
    for (std::uint32_t i = 0; i < out_.finish.size(); ++i)
      if (out_.finish[i] > out_.time) out_.time = out_.finish[last = i];
    if (!ranks_.empty()) out_.phases = phasesOf(ranks_[last]);
    out_.flows = created_;
    return out_;
  }

 private:
  void push(double t, Kind k, std::uint32_t id, std::uint32_t version) {
    events_.push_back({t, order_++, k, id, version});
    std::push_heap(events_.begin(), events_.end(), std::greater<>());
  }

  // A re-shared flow's earlier end event stays in the heap, stale: NB at 512x8 re-shares a flow
  // dozens of times. When they are most of the heap, drop them; events are popped in (time,
  // order) order, unique, so the heap's shape never changes which comes next.
  void dropStale() {
    if (stale_ < 4096 || stale_ * 2 < events_.size()) return;
    std::erase_if(events_, [this](const Event& e) {
      return e.kind == Kind::FlowEnd && flows_[e.id].version != e.version;
    });
    std::make_heap(events_.begin(), events_.end(), std::greater<>());
    stale_ = 0;
  }

  bool simulated(std::uint32_t r) const { return index_[r] != kNone; }
  RankState& state(std::uint32_t r) { return ranks_[index_[r]]; }

  void post(std::uint32_t i) {
    RankState& st = ranks_[i];
    const auto& steps = st.schedule.steps;
    if (st.step >= steps.size()) {
      out_.finish[i] = now_;
      return;
    }
    const CompactStep& step = steps[st.step];
    st.times.push_back({now_, 0, step.level, step.size != 0});
    st.remaining = step.size;
    const std::uint32_t r = st.rank, at = st.step;
    for (std::uint32_t x = 0; x < step.size && out_.error.empty(); ++x) match({r, at, x});
    // Outside ends whose representative step this is can start now.
    if (auto w = waiting_.find(key(r, at)); w != waiting_.end()) {
      const std::vector<std::pair<End, std::uint32_t>> ends = std::move(w->second);
      waiting_.erase(w);
      for (const auto& [e, theirs] : ends) mirrorFlow(e, theirs);
    }
    if (step.size == 0) stepDone(i);
  }

  static std::uint64_t key(std::uint64_t a, std::uint64_t b) { return (a << 32) | b; }
  const CompactXfer& xfer(const End& e) { return state(e.rank).schedule.xfer(e.step, e.index); }

  void match(const End& me) {
    const CompactXfer& t = xfer(me);
    if (t.peer >= index_.size()) {
      out_.error = fmt::format("rank {} step {} names peer {} of {}", me.rank, me.step, t.peer,
                               index_.size());
      return;
    }
    if (!simulated(t.peer)) return outside(me);
    const bool send = t.send;
    const std::uint64_t src = send ? me.rank : t.peer, dst = send ? t.peer : me.rank;
    const auto it = pairs_.try_emplace(key(src, dst)).first;
    PairQueue& q = it->second;
    if (q.head == q.waiting.size() || q.sends == send) {
      if (q.head == q.waiting.size()) {
        q.waiting.clear();
        q.head = 0;
        q.sends = send;
      }
      q.waiting.push_back(me);
      return;
    }
    const End other = q.waiting[q.head++];
    if (q.head == q.waiting.size()) pairs_.erase(it);
    const End& snd = send ? me : other;
    const End& rcv = send ? other : me;
    if (xfer(snd).count != xfer(rcv).count) {
      out_.error = fmt::format("rank {} step {} sends {} elements to rank {}, which receives {}",
                               snd.rank, snd.step, xfer(snd).count, rcv.rank, xfer(rcv).count);
      return;
    }
    newFlow(snd, rcv, true, true, xfer(snd).count);
  }

  OutsideRank& outsideRank(std::uint32_t b) {
    auto it = outside_.find(b);
    if (it != outside_.end()) return it->second;
    OutsideRank o{CompactSchedule(in_.schedule(b), elem_, o_.bundle), {}};
    const auto& steps = o.schedule.steps;
    o.byPeer.reserve(o.schedule.xfers.size());
    for (std::uint32_t s = 0; s < steps.size(); ++s)
      for (std::uint32_t x = 0; x < steps[s].size; ++x) {
        const CompactXfer& t = o.schedule.xfer(s, x);
        o.byPeer.push_back({t.peer, t.send, s, x});
      }
    std::stable_sort(o.byPeer.begin(), o.byPeer.end(), byPeerOrder);
    return outside_.emplace(b, std::move(o)).first->second;
  }

  static bool byPeerOrder(const OutsideRank::ByPeer& a, const OutsideRank::ByPeer& b) {
    return a.peer != b.peer ? a.peer < b.peer : a.send < b.send;
  }

  // `me`'s peer b is not simulated: find the step of b's schedule that matches it, and start the
  // flow when b's representative posts that step.
  void outside(const End& me) {
    const CompactXfer& t = xfer(me);
    const std::uint32_t b = t.peer, rb = in_.rep[b];
    const bool send = t.send;
    const std::uint32_t k = matched_[(key(me.rank, b) << 1) | send]++;
    OutsideRank& o = outsideRank(b);
    const auto [lo, hi] = std::equal_range(o.byPeer.begin(), o.byPeer.end(),
                                           OutsideRank::ByPeer{me.rank, !send, 0, 0}, byPeerOrder);
    if (hi - lo <= static_cast<std::ptrdiff_t>(k)) {
      out_.error =
          fmt::format("rank {} step {}: rank {} has no matching transfer", me.rank, me.step, b);
      return;
    }
    const std::uint32_t step = lo[k].step, index = lo[k].index;
    const CompactXfer& theirs = o.schedule.xfer(step, index);
    if (theirs.count != t.count) {
      out_.error = fmt::format("rank {} step {} {} {} elements, rank {} {}", me.rank, me.step,
                               send ? "sends" : "receives", t.count, b, theirs.count);
      return;
    }
    const auto& repSteps = state(rb).schedule.steps;
    if (step >= repSteps.size() || repSteps[step].size != o.schedule.steps[step].size) {
      out_.error = fmt::format(
          "rank {} step {} differs from its representative {}'s: the servers are not symmetric", b,
          step, rb);
      return;
    }
    if (state(rb).times.size() > step)
      mirrorFlow(me, step);
    else
      waiting_[key(rb, step)].push_back({me, step});
  }

  // `me`'s flow with an outside rank, whose end is its step `theirs`.
  void mirrorFlow(const End& me, std::uint32_t theirs) {
    const CompactXfer& t = xfer(me);
    const End other{t.peer, theirs, 0};
    if (t.send)
      newFlow(me, other, true, false, t.count);
    else
      newFlow(other, me, false, true, t.count);
  }

  // The index of a resource, made on first use: ports and NICs by position, pair links (which
  // come and go with their flows) through a map.
  std::uint32_t resource(std::uint32_t& slot, double capacity) {
    if (slot == kNone) {
      if (freeResources_.empty()) {
        slot = static_cast<std::uint32_t>(resources_.size());
        resources_.emplace_back();
      } else {
        slot = freeResources_.back();
        freeResources_.pop_back();
      }
    }
    resources_[slot].capacity = capacity;
    ++resources_[slot].users;
    return slot;
  }

  void newFlow(const End& snd, const End& rcv, bool sndSim, bool rcvSim, std::uint64_t count) {
    const CompactXfer& t = xfer(sndSim ? snd : rcv);
    const std::uint8_t level = std::min<std::uint8_t>(t.level, kNumLevels - 1);
    const ClusterModel::Level& L = m_.level[level];
    std::uint32_t id;
    if (freeFlows_.empty()) {
      id = static_cast<std::uint32_t>(flows_.size());
      flows_.emplace_back();
    } else {
      id = freeFlows_.back();
      freeFlows_.pop_back();
    }
    Flow& f = flows_[id];
    const std::uint32_t version = f.version;
    f = Flow{};
    f.version = version;
    f.snd = snd;
    f.rcv = rcv;
    f.seq = created_++;
    f.level = level;
    const std::uint64_t bytes = count * elem_;
    f.remaining = static_cast<double>(bytes);
    f.sndSimulated = sndSim;
    f.rcvSimulated = rcvSim;
    if (o_.recordTimeline)
      out_.flowLog.push_back({snd.rank, rcv.rank, snd.step, rcv.step, level, bytes, now_, 0, 0});
    const double link = L.beta > 0 ? 1.0 / L.beta : kInf;
    const auto add = [&](std::uint32_t& slot, double c, bool counts) {
      const std::uint32_t res = resource(slot, c);
      if (counts)
        f.counts[f.numCounts++] = res;
      else
        f.reads[f.numReads++] = res;
    };
    const std::uint32_t sndAt = sndSim ? snd.rank : in_.rep[snd.rank];
    const std::uint32_t rcvAt = rcvSim ? rcv.rank : in_.rep[rcv.rank];
    // Link ids: level, then the pair.
    const std::uint64_t linkId =
        (std::uint64_t{level} << 48) | ((std::uint64_t{snd.rank} << 24) ^ rcv.rank);
    add(links_.try_emplace(linkId, kNone).first->second, link, true);
    if (std::isfinite(L.links)) {
      add(portIndex_[(index_[sndAt] * kNumLevels + level) * 2], L.links * link, sndSim);
      add(portIndex_[(index_[rcvAt] * kNumLevels + level) * 2 + (L.halfDuplex ? 0 : 1)],
          L.links * link, rcvSim);
    }
    if (level >= 1 && in_.serverOf[snd.rank] != in_.serverOf[rcv.rank] &&
        std::isfinite(m_.nicBandwidth)) {
      // Per direction when full duplex (the sender's out, the receiver's in), else one.
      add(nicIndex_[in_.serverOf[sndAt] * 3 + (m_.fullDuplex ? 0 : 2)], m_.nicBandwidth, sndSim);
      add(nicIndex_[in_.serverOf[rcvAt] * 3 + (m_.fullDuplex ? 1 : 2)], m_.nicBandwidth, rcvSim);
    }
    // A message the level's link does not carry inline costs it a round first (the cost model's
    // step_us above step_from_bytes, CostParams::linkTime()): per flow, so a step whose flows
    // run side by side pays it once, as the formula does.
    const double startup = L.alpha + (bytes > L.stepFrom ? L.step : 0.0);
    push(now_ + startup, Kind::FlowStart, id, 0);
  }

  void start(std::uint32_t id) {
    Flow& f = flows_[id];
    if (o_.recordTimeline) out_.flowLog[f.seq].start = now_;
    f.since = now_;
    levelActive(f.level, +1);
    for (std::uint8_t i = 0; i < f.numCounts; ++i) resources_[f.counts[i]].flows.push_back(id);
    for (std::uint8_t i = 0; i < f.numReads; ++i) resources_[f.reads[i]].readers.push_back(id);
    reshare(f.counts.data(), f.numCounts);
    if (f.numReads != 0) {
      touched_.assign(1, id);
      reshareFlows();
    }
  }

  static void drop(std::vector<std::uint32_t>& v, std::uint32_t id) {
    v.erase(std::find(v.begin(), v.end(), id));
  }

  void finish(std::uint32_t id) {
    Flow& f = flows_[id];
    if (o_.recordTimeline) out_.flowLog[f.seq].end = now_;
    f.remaining = 0;
    levelActive(f.level, -1);
    for (std::uint8_t i = 0; i < f.numCounts; ++i) drop(resources_[f.counts[i]].flows, id);
    for (std::uint8_t i = 0; i < f.numReads; ++i) drop(resources_[f.reads[i]].readers, id);
    reshare(f.counts.data(), f.numCounts);
    // The pair link goes back to the pool when its last flow is done; ports and NICs stay.
    const std::uint32_t link = f.counts[0];
    for (std::uint8_t i = 0; i < f.numCounts; ++i) --resources_[f.counts[i]].users;
    for (std::uint8_t i = 0; i < f.numReads; ++i) --resources_[f.reads[i]].users;
    if (resources_[link].users == 0) {
      const std::uint64_t linkId =
          (std::uint64_t{f.level} << 48) | ((std::uint64_t{f.snd.rank} << 24) ^ f.rcv.rank);
      links_.erase(linkId);
      freeResources_.push_back(link);
    }
    const End snd = f.snd, rcv = f.rcv;
    const bool sndSim = f.sndSimulated, rcvSim = f.rcvSimulated;
    freeFlows_.push_back(id);
    if (sndSim) endDone(snd);
    if (rcvSim) endDone(rcv);
  }

  void endDone(const End& e) {
    RankState& st = state(e.rank);
    if (--st.remaining == 0) stepDone(index_[e.rank]);
  }

  // Every flow on `changed` resources (counting or reading) runs at its new share from now on.
  void reshare(const std::uint32_t* changed, std::size_t n) {
    touched_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const Resource& r = resources_[changed[i]];
      touched_.insert(touched_.end(), r.flows.begin(), r.flows.end());
      touched_.insert(touched_.end(), r.readers.begin(), r.readers.end());
    }
    // In creation order: events at equal times then come in the order they always did.
    std::sort(touched_.begin(), touched_.end(),
              [this](std::uint32_t a, std::uint32_t b) { return flows_[a].seq < flows_[b].seq; });
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    reshareFlows();
  }

  void reshareFlows() {
    for (std::uint32_t id : touched_) {
      Flow& f = flows_[id];
      if (std::isfinite(f.rate) && f.rate > 0) f.remaining -= f.rate * (now_ - f.since);
      f.remaining = std::max(0.0, f.remaining);
      f.since = now_;
      double rate = kInf;
      for (std::uint8_t i = 0; i < f.numCounts; ++i) {
        const Resource& r = resources_[f.counts[i]];
        rate = std::min(rate, r.capacity / static_cast<double>(r.flows.size()));
      }
      // An outside end's share: its representative's flows are its images, this flow not
      // among them.
      for (std::uint8_t i = 0; i < f.numReads; ++i) {
        const Resource& r = resources_[f.reads[i]];
        rate = std::min(rate,
                        r.capacity / static_cast<double>(std::max<std::size_t>(1, r.flows.size())));
      }
      f.rate = rate;
      const double left = f.remaining <= 0 || !std::isfinite(rate) ? 0 : f.remaining / rate;
      if (f.endPending) ++stale_;
      f.endPending = true;
      push(now_ + left, Kind::FlowEnd, id, ++f.version);
    }
    dropStale();
  }

  void levelActive(std::uint8_t level, int delta) {
    int& n = active_[level];
    if (n == 0 && delta > 0) busySince_[level] = now_;
    n += delta;
    if (n == 0) out_.busy[level] += now_ - busySince_[level];
  }

  void stepDone(std::uint32_t i) {
    RankState& st = ranks_[i];
    const CompactStep& step = st.schedule.steps[st.step];
    const double end = now_ + m_.gamma * static_cast<double>(step.reduced);
    st.times.back().end = end;
    if (o_.recordTimeline)
      out_.stepLog.push_back({st.rank, st.step, st.times.back().posted, now_, end});
    ++st.step;
    push(end, Kind::Post, i, 0);
  }

  static std::vector<SimPhase> phasesOf(const RankState& st) {
    std::vector<SimPhase> out;
    bool typed = false;  // the last phase has a step with transfers (its level is known)
    for (std::uint32_t s = 0; s < st.times.size(); ++s) {
      const StepTimes& t = st.times[s];
      if (out.empty() || (t.transfers && typed && t.level != out.back().level)) {
        out.push_back({t.level, s, 0, t.posted, t.end});
        typed = false;
      }
      SimPhase& ph = out.back();
      if (t.transfers && !typed) {
        ph.level = t.level;
        typed = true;
      }
      ++ph.steps;
      ph.end = t.end;
    }
    return out;
  }

  void reportStuck() {
    for (const RankState& st : ranks_)
      if (st.step < st.schedule.steps.size()) {
        out_.error = fmt::format("rank {} never completes step {}: a transfer has no partner",
                                 st.rank, st.step);
        return;
      }
  }

  const SimRanks& in_;
  std::size_t elem_;
  const ClusterModel& m_;
  SimOptions o_;
  std::vector<std::uint32_t> index_;  // per rank: its simulated index, or kNone
  std::vector<RankState> ranks_;
  std::unordered_map<std::uint64_t, PairQueue> pairs_;  // (sender, receiver): unmatched ends
  std::unordered_map<std::uint32_t, OutsideRank> outside_;
  std::unordered_map<std::uint64_t, std::uint32_t> matched_;  // (rank, peer, dir): matched
  // (rep, step): ends with an outside rank, and that rank's step, waiting for rep to post it
  std::unordered_map<std::uint64_t, std::vector<std::pair<End, std::uint32_t>>> waiting_;
  // Resources: the pair links with flows (by level and pair), each simulated rank's send and
  // receive port per level, each server's NIC out, in and shared (half duplex).
  std::vector<Resource> resources_;
  std::vector<std::uint32_t> freeResources_;
  std::unordered_map<std::uint64_t, std::uint32_t> links_;
  std::vector<std::uint32_t> portIndex_, nicIndex_;
  // Flows not finished; a finished flow's slot is reused (timelines keep their log by seq).
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> freeFlows_;
  std::uint64_t created_ = 0;
  std::vector<std::uint32_t> touched_;  // reshare()'s flows
  std::vector<Event> events_;           // a min-heap on (time, order)
  std::size_t stale_ = 0;               // end events superseded by a later one of their flow
  std::uint64_t order_ = 0;
  double now_ = 0;
  std::array<int, kNumLevels> active_{};
  std::array<double, kNumLevels> busySince_{};
  SimResult out_;
};

}  // namespace

SimResult simulate(const Schedule& s, std::size_t elemSize,
                   const std::vector<std::uint32_t>& serverOf, const ClusterModel& model,
                   const SimOptions& options) {
  const auto p = static_cast<std::uint32_t>(s.ranks.size());
  if (serverOf.size() < p) {
    SimResult r;
    r.error = fmt::format("{} ranks but servers given for {}", p, serverOf.size());
    return r;
  }
  SimRanks in;
  in.serverOf.assign(serverOf.begin(), serverOf.begin() + p);
  in.rep.resize(p);
  for (std::uint32_t r = 0; r < p; ++r) in.rep[r] = r;
  in.simulated = in.rep;
  in.whole = &s;
  return Simulation(in, elemSize, model, options).run();
}

SimResult simulateRepresentatives(const SimRanks& ranks, std::size_t elemSize,
                                  const ClusterModel& model, const SimOptions& options) {
  return Simulation(ranks, elemSize, model, options).run();
}

std::string chromeTrace(const SimResult& r, const std::vector<std::uint32_t>& serverOf,
                        const std::string& title) {
  using nlohmann::json;
  constexpr double kUs = 1e6;
  json events = json::array();
  std::vector<bool> named(serverOf.size(), false);
  for (std::size_t rank = 0; rank < serverOf.size(); ++rank) {
    const std::uint32_t server = serverOf[rank];
    if (server < named.size() && !named[server]) {
      named[server] = true;
      events.push_back({{"ph", "M"},
                        {"name", "process_name"},
                        {"pid", server},
                        {"tid", 0},
                        {"args", {{"name", fmt::format("server {}", server)}}}});
    }
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", server},
                      {"tid", rank},
                      {"args", {{"name", fmt::format("rank {}", rank)}}}});
  }
  for (const SimStep& s : r.stepLog) {
    events.push_back({{"ph", "X"},
                      {"name", fmt::format("step {}", s.step)},
                      {"cat", "step"},
                      {"pid", serverOf[s.rank]},
                      {"tid", s.rank},
                      {"ts", s.posted * kUs},
                      {"dur", (s.end - s.posted) * kUs},
                      {"args", {{"transfers_done_us", s.transfersDone * kUs}}}});
  }
  std::uint64_t id = 0;
  for (const SimFlow& f : r.flowLog) {
    const json common = {{"cat", fmt::format("level{}", f.level)},
                         {"name", fmt::format("{} -> {}", f.src, f.dst)},
                         {"pid", serverOf[f.src]},
                         {"tid", f.src},
                         {"id", id++}};
    json b = common, e = common;
    b["ph"] = "b";
    b["ts"] = f.start * kUs;
    b["args"] = {{"bytes", f.bytes},
                 {"step", f.srcStep},
                 {"peer_step", f.dstStep},
                 {"waited_for_partner_us", (f.start - f.posted) * kUs}};
    e["ph"] = "e";
    e["ts"] = f.end * kUs;
    events.push_back(std::move(b));
    events.push_back(std::move(e));
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"title", title}, {"predicted_us", r.time * kUs}}}};
  return doc.dump();
}

}  // namespace hccl::algo
