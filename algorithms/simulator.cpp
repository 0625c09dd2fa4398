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
  double beta = 0;
  double remaining = 0;  // bytes
  double rate = 0;       // bytes per second now
  double since = 0;      // when `remaining` was last brought up to date
  std::uint32_t version = 0;
  std::vector<std::uint64_t> resources;
};

// A shared capacity: a pair link, a rank's port, a server's NIC.
struct Resource {
  double capacity = kInf;  // bytes per second
  std::vector<std::uint32_t> flows;
};

enum class Kind : std::uint8_t { Post, FlowStart, FlowEnd };

struct Event {
  double time;
  std::uint64_t order;  // ties in posting order, so the run is deterministic
  Kind kind;
  std::uint32_t id;  // rank (Post) or flow
  std::uint32_t version;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

struct RankState {
  std::uint32_t step = 0;
  std::size_t remaining = 0;  // transfers of the current step not done
  double posted = 0;
};

class Simulation {
 public:
  Simulation(const Schedule& s, std::size_t elem, const std::vector<std::uint32_t>& serverOf,
             const ClusterModel& m, const SimOptions& o)
      : s_(s), elem_(elem), server_(serverOf), m_(m), o_(o), ranks_(s.ranks.size()) {}

  SimResult run() {
    const auto p = static_cast<std::uint32_t>(s_.ranks.size());
    if (server_.size() < p) {
      out_.error = fmt::format("{} ranks but servers given for {}", p, server_.size());
      return out_;
    }
    out_.finish.assign(p, 0);
    for (std::uint32_t r = 0; r < p; ++r) push(0, Kind::Post, r, 0);
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
    for (double f : out_.finish) out_.time = std::max(out_.time, f);
    out_.flows = flows_.size();
    if (o_.recordTimeline)
      for (const Flow& f : flows_) out_.flowLog.push_back(f.log);
    return out_;
  }

 private:
  void push(double t, Kind k, std::uint32_t id, std::uint32_t version) {
    events_.push({t, order_++, k, id, version});
  }

  void post(std::uint32_t r) {
    RankState& st = ranks_[r];
    const auto& steps = s_.ranks[r].steps;
    if (st.step >= steps.size()) {
      out_.finish[r] = now_;
      return;
    }
    const Step& step = steps[st.step];
    st.posted = now_;
    st.remaining = step.xfers.size();
    for (std::uint32_t i = 0; i < step.xfers.size(); ++i) match({r, st.step, i});
    if (step.xfers.empty()) stepDone(r);
  }

  const Transfer& xfer(const End& e) const { return s_.ranks[e.rank].steps[e.step].xfers[e.index]; }

  void match(const End& me) {
    const Transfer& t = xfer(me);
    if (t.peer >= s_.ranks.size()) {
      out_.error = fmt::format("rank {} step {} names peer {} of {}", me.rank, me.step, t.peer,
                               s_.ranks.size());
      return;
    }
    const bool send = t.dir == Dir::Send;
    const std::uint64_t src = send ? me.rank : t.peer, dst = send ? t.peer : me.rank;
    PairQueue& q = pairs_[(src << 32) | dst];
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
    newFlow(snd, rcv);
  }

  void newFlow(const End& snd, const End& rcv) {
    const Transfer& t = xfer(snd);
    const std::uint8_t level = std::min<std::uint8_t>(t.level, kNumLevels - 1);
    const ClusterModel::Level& L = m_.level[level];
    Flow f;
    f.log = {snd.rank, rcv.rank, snd.step, rcv.step, level, t.slice.count * elem_, now_, 0, 0};
    f.beta = L.beta;
    f.remaining = static_cast<double>(f.log.bytes);
    const double link = L.beta > 0 ? 1.0 / L.beta : kInf;
    // Resource ids: kind in the top byte, then level, then the entity.
    const auto id = [](std::uint64_t kind, std::uint64_t lvl, std::uint64_t what) {
      return (kind << 56) | (lvl << 48) | what;
    };
    f.resources.push_back(id(1, level, (std::uint64_t{snd.rank} << 24) ^ rcv.rank));
    capacity(f.resources.back(), link);
    if (std::isfinite(L.links)) {
      f.resources.push_back(id(2, level, snd.rank));
      capacity(f.resources.back(), L.links * link);
      f.resources.push_back(id(3, level, rcv.rank));
      capacity(f.resources.back(), L.links * link);
    }
    const std::uint32_t from = server_[snd.rank], to = server_[rcv.rank];
    if (level >= 1 && from != to && std::isfinite(m_.nicBandwidth)) {
      f.resources.push_back(id(m_.fullDuplex ? 4 : 6, 0, from));
      f.resources.push_back(id(m_.fullDuplex ? 5 : 6, 0, to));
      for (std::size_t i = f.resources.size() - 2; i < f.resources.size(); ++i)
        capacity(f.resources[i], m_.nicBandwidth);
    }
    flows_.push_back(std::move(f));
    ends_.push_back({snd, rcv});
    push(now_ + L.alpha, Kind::FlowStart, static_cast<std::uint32_t>(flows_.size() - 1), 0);
  }

  void capacity(std::uint64_t res, double c) { resources_[res].capacity = c; }

  void start(std::uint32_t id) {
    Flow& f = flows_[id];
    f.log.start = now_;
    f.since = now_;
    levelActive(f.log.level, +1);
    for (std::uint64_t res : f.resources) resources_[res].flows.push_back(id);
    reshare(f.resources);
  }

  void finish(std::uint32_t id) {
    Flow& f = flows_[id];
    f.log.end = now_;
    f.remaining = 0;
    levelActive(f.log.level, -1);
    for (std::uint64_t res : f.resources) {
      auto& v = resources_[res].flows;
      v.erase(std::find(v.begin(), v.end(), id));
    }
    reshare(f.resources);
    for (const End& e : {ends_[id].first, ends_[id].second}) {
      RankState& st = ranks_[e.rank];
      if (--st.remaining == 0) stepDone(e.rank);
    }
  }

  // Every flow on `changed` resources runs at its new share from now on.
  void reshare(const std::vector<std::uint64_t>& changed) {
    std::vector<std::uint32_t> touched;
    for (std::uint64_t res : changed)
      for (std::uint32_t f : resources_[res].flows) touched.push_back(f);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
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

  void stepDone(std::uint32_t r) {
    RankState& st = ranks_[r];
    const Step& step = s_.ranks[r].steps[st.step];
    std::uint64_t reduced = 0;
    for (const LocalOp& op : step.ops)
      if (op.kind == OpKind::Reduce) reduced += op.dst.count * elem_;
    const double end = now_ + m_.gamma * static_cast<double>(reduced);
    if (o_.recordTimeline) out_.stepLog.push_back({r, st.step, st.posted, now_, end});
    ++st.step;
    push(end, Kind::Post, r, 0);
  }

  void reportStuck() {
    for (std::uint32_t r = 0; r < ranks_.size(); ++r)
      if (ranks_[r].step < s_.ranks[r].steps.size()) {
        out_.error = fmt::format("rank {} never completes step {}: a transfer has no partner", r,
                                 ranks_[r].step);
        return;
      }
  }

  const Schedule& s_;
  std::size_t elem_;
  const std::vector<std::uint32_t>& server_;
  const ClusterModel& m_;
  SimOptions o_;
  std::vector<RankState> ranks_;
  std::unordered_map<std::uint64_t, PairQueue> pairs_;
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
  return Simulation(s, elemSize, serverOf, model, options).run();
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
