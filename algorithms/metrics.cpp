#include "algorithms/metrics.hpp"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/replay.hpp"

namespace hccl::algo {

CostParams CostParams::uniform(double alpha, double beta, double gamma) {
  CostParams p;
  p.alpha.fill(alpha);
  p.beta.fill(beta);
  p.gamma = gamma;
  return p;
}

std::uint64_t Metrics::steps() const {
  std::uint64_t s = 0;
  for (const LevelCost& l : level) s += l.steps;
  return s;
}

std::uint64_t Metrics::bytes() const {
  std::uint64_t b = 0;
  for (const LevelCost& l : level) b += l.bytes;
  return b;
}

double addStep(const Step& step, std::size_t elem, const CostParams& params, Metrics& path) {
  // Bytes per (level, peer, direction); a level's cost is set by its busiest peer-direction.
  // A step has few transfers (a handful, p-1 for a full mesh): a sorted vector beats a map.
  struct Load {
    std::uint8_t level;
    std::uint32_t peer;
    Dir dir;
    std::uint64_t bytes;
  };
  std::vector<Load> load;
  load.reserve(step.xfers.size());
  const bool few = step.xfers.size() <= 16;
  for (const Transfer& t : step.xfers) {
    const std::uint64_t b = t.slice.count * elem;
    auto it = few ? std::find_if(load.begin(), load.end(),
                                 [&](const Load& l) {
                                   return l.level == t.level && l.peer == t.peer && l.dir == t.dir;
                                 })
                  : load.end();
    if (it != load.end())
      it->bytes += b;
    else
      load.push_back({t.level, t.peer, t.dir, b});
  }
  if (!few) {
    const auto key = [](const Load& l) { return std::tie(l.level, l.peer, l.dir); };
    std::sort(load.begin(), load.end(),
              [&](const Load& a, const Load& b) { return key(a) < key(b); });
    std::size_t w = 0;
    for (std::size_t i = 0; i < load.size(); ++i) {
      if (w > 0 && key(load[w - 1]) == key(load[i]))
        load[w - 1].bytes += load[i].bytes;
      else
        load[w++] = load[i];
    }
    load.resize(w);
  }
  StepLoad sl;
  for (const Load& ld : load) sl.add(ld.level, ld.dir, ld.bytes);
  // Posts on a link with broadcast slots: a slice the step already posted to another peer is not
  // written again, and the step's round is the post's if all its transfers on the level are posts.
  std::array<bool, kNumLevels> plain{};
  for (std::size_t i = 0; i < step.xfers.size(); ++i) {
    const Transfer& t = step.xfers[i];
    const std::uint8_t l = std::min<std::uint8_t>(t.level, kNumLevels - 1);
    if (!t.post || !params.posts[l]) {
      plain[l] = true;
      continue;
    }
    if (t.dir != Dir::Send) continue;
    for (std::size_t j = 0; j < i; ++j) {
      const Transfer& u = step.xfers[j];
      if (u.post && u.dir == Dir::Send && u.level == t.level && u.slice == t.slice) {
        sl.total[l][0] -= t.slice.count * elem;
        break;
      }
    }
  }
  for (std::size_t l = 0; l < kNumLevels; ++l) sl.postsOnly[l] = sl.used[l] && !plain[l];
  for (const Transfer& t : step.xfers)
    if (t.push && t.dir == Dir::Send) sl.addPushed(t.level, t.slice.count * elem);
  for (const LocalOp& op : step.ops)
    if (op.kind == OpKind::Reduce) sl.reduced += op.dst.count * elem;
  return addStepLoad(sl, params, path);
}

void StepLoad::add(std::uint8_t level, Dir dir, std::uint64_t bytes) {
  const std::uint8_t l = std::min<std::uint8_t>(level, kNumLevels - 1);
  used[l] = true;
  busiest[l] = std::max(busiest[l], bytes);
  total[l][dir == Dir::Send ? 0 : 1] += bytes;
}

void StepLoad::addPushed(std::uint8_t level, std::uint64_t bytes) {
  const std::uint8_t l = std::min<std::uint8_t>(level, kNumLevels - 1);
  pushed[l] = std::max(pushed[l], bytes);
}

double addStepLoad(const StepLoad& sl, const CostParams& params, Metrics& path) {
  std::array<std::uint64_t, kNumLevels> busiest = sl.busiest;
  for (std::size_t l = 0; l < kNumLevels; ++l) {
    const std::uint64_t load = params.halfDuplex[l] ? sl.total[l][0] + sl.total[l][1]
                                                    : std::max(sl.total[l][0], sl.total[l][1]);
    const double shared = static_cast<double>(load) / params.links[l];
    if (shared > static_cast<double>(busiest[l]))
      busiest[l] = static_cast<std::uint64_t>(shared + 0.5);
  }
  int dominant = -1;
  double comm = 0;
  for (int l = 0; l < kNumLevels; ++l) {
    if (!sl.used[static_cast<std::size_t>(l)]) continue;
    const auto i = static_cast<std::size_t>(l);
    double c = sl.postsOnly[i]
                   ? params.alpha[i] + params.beta[i] * static_cast<double>(busiest[i]) +
                         (sl.busiest[i] > params.stepFrom[i] ? params.postStep[i] : 0.0)
                   : params.linkTime(i, sl.busiest[i], busiest[i]);
    // The memory term: the pushed send streamed from the cache is not read from memory.
    const std::uint64_t inlineUpTo =
        params.stepFrom[i] == CostParams::kNever ? 0 : params.stepFrom[i];
    if (params.memory[i] > 0 && sl.pushed[i] > inlineUpTo)
      c -= std::min(params.memory[i], params.beta[i]) * static_cast<double>(sl.pushed[i]);
    if (dominant < 0 || c > comm) {
      comm = c;
      dominant = l;
    }
  }
  double t = 0;
  if (dominant >= 0) {
    LevelCost& lc = path.level[static_cast<std::size_t>(dominant)];
    lc.steps += 1;
    lc.bytes += busiest[static_cast<std::size_t>(dominant)];
    t += comm;
  }
  path.reducedBytes += sl.reduced;
  return t + params.gamma * static_cast<double>(sl.reduced);
}

Metrics stepDelta(const StepLoad& load, const CostParams& params) {
  Metrics delta;
  delta.time = addStepLoad(load, params, delta);
  return delta;
}

Metrics rankPath(const RankSchedule& rs, std::size_t elemSize, const CostParams& params) {
  Metrics m;
  for (const Step& st : rs.steps) m.time += addStep(st, elemSize, params, m);
  return m;
}

namespace {

// A point in simulated time and the path of steps that led to it.
struct Timed {
  double t = 0;
  Metrics path;
};

const Timed& later(const Timed& a, const Timed& b) {
  return b.t > a.t ? b : a;
}

class CriticalPath final : public ReplayObserver {
 public:
  CriticalPath(const Schedule& s, std::size_t elemSize, const CostParams& params)
      : s_(s),
        elem_(elemSize),
        params_(params),
        clock_(s.ranks.size()),
        start_(s.ranks.size()),
        posted_(s.ranks.size()) {}

  Metrics run() {
    replay(s_.ranks, *this);
    const Timed* last = &clock_.front();
    for (const Timed& c : clock_) last = &later(*last, c);
    Metrics m = last->path;
    m.time = last->t;
    return m;
  }

  void posted(std::uint32_t r, std::uint32_t) override {
    posted_[r] = clock_[r];
    start_[r] = clock_[r];
  }

  void matched(const XferRef& snd, const XferRef& rcv) override {
    // A transfer starts once both ends are posted.
    start_[snd.rank] = later(start_[snd.rank], posted_[rcv.rank]);
    start_[rcv.rank] = later(start_[rcv.rank], posted_[snd.rank]);
  }

  void completed(std::uint32_t r, std::uint32_t stepIndex) override {
    Timed now = start_[r];
    now.t += addStep(s_.ranks[r].steps[stepIndex], elem_, params_, now.path);
    clock_[r] = std::move(now);
  }

 private:
  const Schedule& s_;
  std::size_t elem_;
  CostParams params_;
  std::vector<Timed> clock_;   // when each rank finished its last completed step
  std::vector<Timed> start_;   // when the current step can start
  std::vector<Timed> posted_;  // when the current step was posted
};

}  // namespace

Metrics criticalPath(const Schedule& s, std::size_t elemSize, const CostParams& params) {
  if (s.ranks.empty()) return {};
  return CriticalPath(s, elemSize, params).run();
}

}  // namespace hccl::algo
