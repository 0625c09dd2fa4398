#include "algorithms/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

namespace hccl::algo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct End {
  std::uint32_t rank, step, index;
};

struct PairQueue {
  std::deque<End> sends, recvs;  // posted, not yet matched, oldest first
};

struct Flow {
  SimFlow log;
  double remaining = 0;  // bytes
  double rate = 0;       // bytes per second now
  double since = 0;      // when `remaining` was last brought up to date
  std::uint32_t version = 0;
  // Resources it counts on (its simulated ends'), and those it only reads its share from (an
  // outside end's, through its representative).
  std::vector<std::uint64_t> resources, reads;
  bool sndSimulated = true, rcvSimulated = true;
};

// A shared capacity: a pair link, a rank's port, a server's NIC.
struct Resource {
  double capacity = kInf;  // bytes per second
  std::vector<std::uint32_t> flows, readers;
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
  std::uint32_t rank = 0;
  const RankSchedule* schedule = nullptr;
  RankSchedule own;  // when generated
  std::uint32_t step = 0;
  std::size_t remaining = 0;  // transfers of the current step not done
  std::vector<StepTimes> times;
};

// An outside rank's schedule as its matches need it: per peer and direction, the steps of its
// transfers in order.
struct OutsideRank {
  RankSchedule schedule;
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> byPeer;
};

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

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
    ranks_.reserve(in_.simulated.size());  // schedules point into it
    for (std::uint32_t r : in_.simulated) {
      if (r >= p || index_[r] != kNone) {
        out_.error = fmt::format("simulated rank {} is out of range or repeated", r);
        return out_;
      }
      index_[r] = static_cast<std::uint32_t>(ranks_.size());
      RankState& st = ranks_.emplace_back();
      st.rank = r;
      if (in_.whole) {
        st.schedule = &in_.whole->ranks[r];
      } else {
        st.own = in_.schedule(r);
        st.schedule = &st.own;
      }
    }
    for (std::uint32_t r = 0; r < p; ++r)
      if (in_.rep[r] >= p || index_[in_.rep[r]] == kNone) {
        out_.error = fmt::format("rank {}'s representative {} is not simulated", r, in_.rep[r]);
        return out_;
      }
    out_.finish.assign(ranks_.size(), 0);
    for (std::uint32_t i = 0; i < ranks_.size(); ++i) push(0, Kind::Post, i, 0);
    while (!events_.empty() && out_.error.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      switch (e.kind) {
        case Kind::Post:
          post(e.id);
          break;
        case Kind::FlowStart:
          start(e.id);
          break;
        case Kind::FlowEnd:
          if (flows_[e.id].version == e.version) finish(e.id);
          break;
      }
    }
    if (out_.error.empty()) reportStuck();
    std::uint32_t last = 0;
    for (std::uint32_t i = 0; i < out_.finish.size(); ++i)
      if (out_.finish[i] > out_.time) out_.time = out_.finish[last = i];
    if (!ranks_.empty()) out_.phases = phasesOf(ranks_[last]);
    out_.flows = flows_.size();
    if (o_.recordTimeline)
      for (const Flow& f : flows_) out_.flowLog.push_back(f.log);
    return out_;
  }

 private:
  void push(double t, Kind k, std::uint32_t id, std::uint32_t version) {
    events_.push({t, order_++, k, id, version});
  }

  bool simulated(std::uint32_t r) const { return index_[r] != kNone; }
  RankState& state(std::uint32_t r) { return ranks_[index_[r]]; }

  void post(std::uint32_t i) {
    RankState& st = ranks_[i];
    const auto& steps = st.schedule->steps;
    if (st.step >= steps.size()) {
      out_.finish[i] = now_;
      return;
    }
    const Step& step = steps[st.step];
    StepTimes times{now_, 0, 0, !step.xfers.empty()};
    for (const Transfer& t : step.xfers) times.level = std::max(times.level, t.level);
    st.times.push_back(times);
    st.remaining = step.xfers.size();
    const std::uint32_t r = st.rank, at = st.step;
    for (std::uint32_t x = 0; x < step.xfers.size() && out_.error.empty(); ++x) match({r, at, x});
    // Outside ends whose representative step this is can start now.
    if (auto w = waiting_.find(key(r, at)); w != waiting_.end()) {
      const std::vector<End> ends = std::move(w->second);
      waiting_.erase(w);
      for (const End& e : ends) mirrorFlow(e);
    }
    if (step.xfers.empty()) stepDone(i);
  }

  static std::uint64_t key(std::uint64_t a, std::uint64_t b) { return (a << 32) | b; }
  // Ranks and steps below 2^24, transfers of a step below 2^16.
  static std::uint64_t endKey(const End& e) {
    return (std::uint64_t{e.rank} << 40) | (std::uint64_t{e.step} << 16) | e.index;
  }

  const Transfer& xfer(const End& e) {
    return state(e.rank).schedule->steps[e.step].xfers[e.index];
  }

  void match(const End& me) {
    const Transfer& t = xfer(me);
    if (t.peer >= index_.size()) {
      out_.error = fmt::format("rank {} step {} names peer {} of {}", me.rank, me.step, t.peer,
                               index_.size());
      return;
    }
    if (!simulated(t.peer)) return outside(me);
    const bool send = t.dir == Dir::Send;
    const std::uint64_t src = send ? me.rank : t.peer, dst = send ? t.peer : me.rank;
    PairQueue& q = pairs_[key(src, dst)];
    std::deque<End>& theirs = send ? q.recvs : q.sends;
    if (theirs.empty()) {
      (send ? q.sends : q.recvs).push_back(me);
      return;
    }
    const End other = theirs.front();
    theirs.pop_front();
    const End& snd = send ? me : other;
    const End& rcv = send ? other : me;
    if (xfer(snd).slice.count != xfer(rcv).slice.count) {
      out_.error =
          fmt::format("rank {} step {} sends {} elements to rank {}, which receives {}", snd.rank,
                      snd.step, xfer(snd).slice.count, rcv.rank, xfer(rcv).slice.count);
      return;
    }
    newFlow(snd, rcv, true, true, xfer(snd).slice.count);
  }

  OutsideRank& outsideRank(std::uint32_t b) {
    auto it = outside_.find(b);
    if (it != outside_.end()) return it->second;
    OutsideRank o{in_.schedule(b), {}};
    for (std::uint32_t s = 0; s < o.schedule.steps.size(); ++s) {
      const auto& xs = o.schedule.steps[s].xfers;
      for (std::uint32_t x = 0; x < xs.size(); ++x)
        o.byPeer[key(xs[x].peer, xs[x].dir == Dir::Send)].emplace_back(s, x);
    }
    return outside_.emplace(b, std::move(o)).first->second;
  }

  // `me`'s peer b is not simulated: find the step of b's schedule that matches it, and start the
  // flow when b's representative posts that step.
  void outside(const End& me) {
    const Transfer& t = xfer(me);
    const std::uint32_t b = t.peer, rb = in_.rep[b];
    const bool send = t.dir == Dir::Send;
    const std::uint32_t k = matched_[(key(me.rank, b) << 1) | send]++;
    OutsideRank& o = outsideRank(b);
    const auto it = o.byPeer.find(key(me.rank, !send));
    if (it == o.byPeer.end() || it->second.size() <= k) {
      out_.error =
          fmt::format("rank {} step {}: rank {} has no matching transfer", me.rank, me.step, b);
      return;
    }
    const auto [step, index] = it->second[k];
    const Transfer& theirs = o.schedule.steps[step].xfers[index];
    if (theirs.slice.count != t.slice.count) {
      out_.error = fmt::format("rank {} step {} {} {} elements, rank {} {}", me.rank, me.step,
                               send ? "sends" : "receives", t.slice.count, b, theirs.slice.count);
      return;
    }
    const auto& repSteps = state(rb).schedule->steps;
    if (step >= repSteps.size() ||
        repSteps[step].xfers.size() != o.schedule.steps[step].xfers.size()) {
      out_.error = fmt::format(
          "rank {} step {} differs from its representative {}'s: the servers are not symmetric", b,
          step, rb);
      return;
    }
    partnerStep_[endKey(me)] = step;
    if (state(rb).times.size() > step)
      mirrorFlow(me);
    else
      waiting_[key(rb, step)].push_back(me);
  }

  void mirrorFlow(const End& me) {
    const Transfer& t = xfer(me);
    const End other{t.peer, partnerStep_[endKey(me)], 0};
    if (t.dir == Dir::Send)
      newFlow(me, other, true, false, t.slice.count);
    else
      newFlow(other, me, false, true, t.slice.count);
  }

  void newFlow(const End& snd, const End& rcv, bool sndSim, bool rcvSim, std::uint64_t count) {
    const Transfer& t = xfer(sndSim ? snd : rcv);
    const std::uint8_t level = std::min<std::uint8_t>(t.level, kNumLevels - 1);
    const ClusterModel::Level& L = m_.level[level];
    Flow f;
    f.log = {snd.rank, rcv.rank, snd.step, rcv.step, level, count * elem_, now_, 0, 0};
    f.remaining = static_cast<double>(f.log.bytes);
    f.sndSimulated = sndSim;
    f.rcvSimulated = rcvSim;
    const double link = L.beta > 0 ? 1.0 / L.beta : kInf;
    // Resource ids: kind in the top byte, then level, then the entity.
    const auto id = [](std::uint64_t kind, std::uint64_t lvl, std::uint64_t what) {
      return (kind << 56) | (lvl << 48) | what;
    };
    const auto add = [&](std::uint64_t res, double c, bool counts) {
      resources_[res].capacity = c;
      (counts ? f.resources : f.reads).push_back(res);
    };
    const std::uint32_t sndAt = sndSim ? snd.rank : in_.rep[snd.rank];
    const std::uint32_t rcvAt = rcvSim ? rcv.rank : in_.rep[rcv.rank];
    add(id(1, level, (std::uint64_t{snd.rank} << 24) ^ rcv.rank), link, true);
    if (std::isfinite(L.links)) {
      add(id(2, level, sndAt), L.links * link, sndSim);
      add(id(3, level, rcvAt), L.links * link, rcvSim);
    }
    if (level >= 1 && in_.serverOf[snd.rank] != in_.serverOf[rcv.rank] &&
        std::isfinite(m_.nicBandwidth)) {
      add(id(m_.fullDuplex ? 4 : 6, 0, in_.serverOf[sndAt]), m_.nicBandwidth, sndSim);
      add(id(m_.fullDuplex ? 5 : 6, 0, in_.serverOf[rcvAt]), m_.nicBandwidth, rcvSim);
    }
    flows_.push_back(std::move(f));
    ends_.push_back({snd, rcv});
    push(now_ + L.alpha, Kind::FlowStart, static_cast<std::uint32_t>(flows_.size() - 1), 0);
  }

  void start(std::uint32_t id) {
    Flow& f = flows_[id];
    f.log.start = now_;
    f.since = now_;
    levelActive(f.log.level, +1);
    for (std::uint64_t res : f.resources) resources_[res].flows.push_back(id);
    for (std::uint64_t res : f.reads) resources_[res].readers.push_back(id);
    reshare(f.resources);
    if (!f.reads.empty()) reshareFlows({id});
  }

  static void drop(std::vector<std::uint32_t>& v, std::uint32_t id) {
    v.erase(std::find(v.begin(), v.end(), id));
  }

  void finish(std::uint32_t id) {
    Flow& f = flows_[id];
    f.log.end = now_;
    f.remaining = 0;
    levelActive(f.log.level, -1);
    for (std::uint64_t res : f.resources) drop(resources_[res].flows, id);
    for (std::uint64_t res : f.reads) drop(resources_[res].readers, id);
    reshare(f.resources);
    if (f.sndSimulated) endDone(ends_[id].first);
    if (f.rcvSimulated) endDone(ends_[id].second);
  }

  void endDone(const End& e) {
    RankState& st = state(e.rank);
    if (--st.remaining == 0) stepDone(index_[e.rank]);
  }

  // Every flow on `changed` resources (counting or reading) runs at its new share from now on.
  void reshare(const std::vector<std::uint64_t>& changed) {
    std::vector<std::uint32_t> touched;
    for (std::uint64_t res : changed) {
      const Resource& r = resources_[res];
      touched.insert(touched.end(), r.flows.begin(), r.flows.end());
      touched.insert(touched.end(), r.readers.begin(), r.readers.end());
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    reshareFlows(touched);
  }

  void reshareFlows(const std::vector<std::uint32_t>& touched) {
    for (std::uint32_t id : touched) {
      Flow& f = flows_[id];
      if (std::isfinite(f.rate) && f.rate > 0) f.remaining -= f.rate * (now_ - f.since);
      f.remaining = std::max(0.0, f.remaining);
      f.since = now_;
      double rate = kInf;
      for (std::uint64_t res : f.resources) {
        const Resource& r = resources_[res];
        rate = std::min(rate, r.capacity / static_cast<double>(r.flows.size()));
      }
      // An outside end's share: its representative's flows are its images, this flow not
      // among them.
      for (std::uint64_t res : f.reads) {
        const Resource& r = resources_[res];
        rate = std::min(rate,
                        r.capacity / static_cast<double>(std::max<std::size_t>(1, r.flows.size())));
      }
      f.rate = rate;
      const double left = f.remaining <= 0 || !std::isfinite(rate) ? 0 : f.remaining / rate;
      push(now_ + left, Kind::FlowEnd, id, ++f.version);
    }
  }

  void levelActive(std::uint8_t level, int delta) {
    int& n = active_[level];
    if (n == 0 && delta > 0) busySince_[level] = now_;
    n += delta;
    if (n == 0) out_.busy[level] += now_ - busySince_[level];
  }

  void stepDone(std::uint32_t i) {
    RankState& st = ranks_[i];
    const Step& step = st.schedule->steps[st.step];
    std::uint64_t reduced = 0;
    for (const LocalOp& op : step.ops)
      if (op.kind == OpKind::Reduce) reduced += op.dst.count * elem_;
    const double end = now_ + m_.gamma * static_cast<double>(reduced);
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
      if (st.step < st.schedule->steps.size()) {
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
  std::unordered_map<std::uint64_t, PairQueue> pairs_;
  std::unordered_map<std::uint32_t, OutsideRank> outside_;
  std::unordered_map<std::uint64_t, std::uint32_t> matched_;      // (rank, peer, dir): matched
  std::unordered_map<std::uint64_t, std::uint32_t> partnerStep_;  // outside end's step
  std::unordered_map<std::uint64_t, std::vector<End>> waiting_;   // (rep, step): ends
  std::unordered_map<std::uint64_t, Resource> resources_;
  std::vector<Flow> flows_;
  std::vector<std::pair<End, End>> ends_;  // per flow: its send and receive end
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
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
