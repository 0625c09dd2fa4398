// grad_avg: one data-parallel training step after another, as a framework would issue them.
//
// Per step, every rank
//   1. averages each layer's gradient: MPI_Allreduce(MPI_IN_PLACE, SUM), then divides by the size
//      (layers from 1 KiB to 32 MiB of float, largest first, as backpropagation produces them);
//   2. runs a sharded optimizer step (ZeRO-1 style) on the flattened gradients:
//      MPI_Reduce_scatter_block(SUM) gives each rank its shard of the summed gradient, the rank
//      updates its shard of the parameters, MPI_Allgather puts the full parameters back together;
//   3. shares a small metrics record with everybody: MPI_Allgather.
// Each call's result is checked against what this rank computes on its own. Gradients are
// multiples of 1/16 below 32 in magnitude, so every partial sum is exact in float (for fewer than
// 32768 ranks) whatever order the reduction takes: the checks are exact, with no tolerance.
//
// Rank 0 prints one line per call, flushed before the next call starts, so that a component's own
// per-call trace (e.g. --mca coll_hccl_verbose 1) lands between them in order. Exits 1 if any
// check fails.
#include <mpi.h>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/mpi_env.hpp"
#include "common/size_text.hpp"

namespace {

struct Layer {
  const char* name;
  std::size_t count;  // floats
};

// A small transformer's gradients, in the order backpropagation hands them over.
constexpr std::array<Layer, 10> kModel{{
    {"lm_head.bias", 1001},  // odd count: not a multiple of any rank count > 1
    {"ln_f.weight", 768},
    {"block.mlp.fc2.weight", 2359296},
    {"block.mlp.fc1.weight", 2359296},
    {"block.attn.proj.weight", 589824},
    {"block.attn.qkv.weight", 1769472},
    {"block.ln_1.bias", 256},  // 1 KiB
    {"wpe.weight", 196608},
    {"wte.weight", 8388608},  // 32 MiB
    {"wte.bias", 3},          // fewer elements than ranks from np=4 on
}};

struct Settings {
  int steps = 2;
  std::size_t maxLayerBytes = std::size_t{32} << 20;
};

// Deterministic gradient value: a multiple of 1/16 in [-32, 32).
float gradient(int rank, std::size_t layer, int step, std::size_t i) {
  const std::size_t k = static_cast<std::size_t>(rank) * 131 + layer * 31 +
                        static_cast<std::size_t>(step) * 17 + i * 7;
  return static_cast<float>(static_cast<int>(k % 1024) - 512) / 16.0f;
}

// The average every rank must obtain: the exact sum, divided by the size in float.
float expectedAverage(int nranks, std::size_t layer, int step, std::size_t i) {
  double sum = 0.0;
  for (int r = 0; r < nranks; ++r) sum += static_cast<double>(gradient(r, layer, step, i));
  return static_cast<float>(sum) / static_cast<float>(nranks);
}

float initialParameter(std::size_t i) {
  return static_cast<float>(i % 64) / 16.0f;
}
constexpr float kLearningRate = 0.5f;

struct Metrics {
  float loss;
  float gradNorm;
  float samplesPerSecond;
  float rank;
};

Metrics metricsOf(int rank, int step) {
  return Metrics{2.5f - 0.125f * static_cast<float>(step) + 0.0625f * static_cast<float>(rank),
                 1.0f + 0.25f * static_cast<float>(rank % 4), 1000.0f + static_cast<float>(rank),
                 static_cast<float>(rank)};
}

class Demo {
 public:
  Demo(const Settings& s, int rank, int size, MPI_Comm control)
      : settings_(s), rank_(rank), size_(size), control_(control) {
    for (std::size_t l = 0; l < kModel.size(); ++l) {
      if (kModel[l].count * sizeof(float) <= settings_.maxLayerBytes) layers_.push_back(l);
    }
    std::size_t total = 0;
    for (std::size_t l : layers_) total += kModel[l].count;
    const auto n = static_cast<std::size_t>(size_);
    shard_ = (total + n - 1) / n;  // the flat buffer is padded to a multiple of the size
    flatCount_ = total;
    // Allocated (and touched) once, as a framework keeps its gradient buckets: the calls then
    // time communication, not first-touch page faults.
    for (std::size_t l : layers_) grads_.emplace_back(kModel[l].count, 0.0f);
    flat_.assign(shard_ * n, 0.0f);
    expected_.assign(shard_ * n, 0.0f);
    shardBuf_.assign(shard_, 0.0f);
    params_.assign(shard_, 0.0f);
    gathered_.assign(shard_ * n, 0.0f);
  }

  void printHeader(const examples::HostLayout& hosts) const {
    std::size_t smallest = SIZE_MAX;
    std::size_t largest = 0;
    for (std::size_t l : layers_) {
      smallest = std::min(smallest, kModel[l].count * sizeof(float));
      largest = std::max(largest, kModel[l].count * sizeof(float));
    }
    fmt::print("# grad_avg: data-parallel training step imitation on MPI_COMM_WORLD\n");
    fmt::print("# np {} on {} host(s); {}\n", size_, hosts.hosts, examples::libraryVersion());
    fmt::print("# {} layers of float gradients, {} .. {}, {} step(s); checks are exact\n",
               layers_.size(), examples::formatSize(smallest), examples::formatSize(largest),
               settings_.steps);
    fmt::print(
        "# time = slowest rank's wall time for the call, ranks lined up by a barrier before it\n");
    fmt::print("#{:>4}  {:<22}{:<26}{:>10}{:>12}{:>12}  {}\n", "step", "call", "buffer", "count",
               "bytes", "time(us)", "check");
    std::fflush(stdout);
  }

  // Returns the number of failed checks (same on every rank).
  int runStep(int step) {
    int failures = 0;
    for (std::size_t k = 0; k < layers_.size(); ++k) failures += averageLayer(step, k);
    failures += shardedUpdate(step);
    failures += shareMetrics(step);
    return failures;
  }

 private:
  int averageLayer(int step, std::size_t k) {
    const std::size_t l = layers_[k];
    const Layer& layer = kModel[l];
    std::vector<float>& g = grads_[k];
    for (std::size_t i = 0; i < layer.count; ++i) g[i] = gradient(rank_, l, step, i);
    const double start = alignedStart();
    MPI_Allreduce(MPI_IN_PLACE, g.data(), static_cast<int>(layer.count), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - start;
    const float n = static_cast<float>(size_);
    for (float& v : g) v /= n;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < layer.count; ++i) {
      if (g[i] != expectedAverage(size_, l, step, i)) ++wrong;
    }
    return report(step, "allreduce(sum)/size", layer.name, layer.count, seconds, wrong);
  }

  int shardedUpdate(int step) {
    // The flat gradient holds each rank's own (not yet averaged) gradients, layer after layer:
    // a sharded optimizer reduce-scatters them instead of allreducing.
    std::vector<float>& flat = flat_;
    std::vector<float>& expected = expected_;
    std::size_t offset = 0;
    for (std::size_t k = 0; k < layers_.size(); ++k) {
      const std::size_t count = kModel[layers_[k]].count;
      for (std::size_t i = 0; i < count; ++i) {
        flat[offset + i] = gradient(rank_, layers_[k], step, i);
        expected[offset + i] = expectedAverage(size_, layers_[k], step, i);
      }
      offset += count;
    }
    std::vector<float>& shard = shardBuf_;
    double start = alignedStart();
    MPI_Reduce_scatter_block(flat.data(), shard.data(), static_cast<int>(shard_), MPI_FLOAT,
                             MPI_SUM, MPI_COMM_WORLD);
    double seconds = MPI_Wtime() - start;
    const std::size_t mine = static_cast<std::size_t>(rank_) * shard_;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < shard_; ++i) {
      shard[i] /= static_cast<float>(size_);
      if (shard[i] != expected[mine + i]) ++wrong;
    }
    int failures =
        report(step, "reduce_scatter_block", "flat grads, 1 shard/rank", shard_, seconds, wrong);

    // Parameters restart from the same values each step, so the check needs no history.
    std::vector<float>& params = params_;
    for (std::size_t i = 0; i < shard_; ++i) {
      params[i] = initialParameter(mine + i) - kLearningRate * shard[i];
    }
    std::vector<float>& all = gathered_;
    start = alignedStart();
    MPI_Allgather(params.data(), static_cast<int>(shard_), MPI_FLOAT, all.data(),
                  static_cast<int>(shard_), MPI_FLOAT, MPI_COMM_WORLD);
    seconds = MPI_Wtime() - start;
    wrong = 0;
    for (std::size_t i = 0; i < flatCount_; ++i) {
      if (all[i] != initialParameter(i) - kLearningRate * expected[i]) ++wrong;
    }
    failures += report(step, "allgather", "updated parameter shards", shard_, seconds, wrong);
    return failures;
  }

  int shareMetrics(int step) {
    const Metrics mine = metricsOf(rank_, step);
    std::vector<Metrics> all(static_cast<std::size_t>(size_));
    constexpr int kFloats = sizeof(Metrics) / sizeof(float);
    const double start = alignedStart();
    MPI_Allgather(&mine, kFloats, MPI_FLOAT, all.data(), kFloats, MPI_FLOAT, MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - start;
    std::size_t wrong = 0;
    double loss = 0.0;
    for (int r = 0; r < size_; ++r) {
      const Metrics want = metricsOf(r, step);
      const Metrics& got = all[static_cast<std::size_t>(r)];
      if (got.loss != want.loss || got.gradNorm != want.gradNorm ||
          got.samplesPerSecond != want.samplesPerSecond || got.rank != want.rank) {
        ++wrong;
      }
      loss += static_cast<double>(got.loss);
    }
    const int failures =
        report(step, "allgather", "metrics (16 B per rank)", kFloats, seconds, wrong);
    if (rank_ == 0) {
      fmt::print("#{:>4}  mean loss over ranks {:.4f}\n", step, loss / size_);
      std::fflush(stdout);
    }
    return failures;
  }

  // Ranks leave their checks at different times; lining them up first keeps that skew out of the
  // time reported for the next call.
  double alignedStart() const {
    MPI_Barrier(control_);
    return MPI_Wtime();
  }

  // Folds every rank's time and wrong count onto rank 0 over the control communicator, prints
  // one line there, and returns 1 on every rank if any rank saw a wrong element.
  int report(int step, const std::string& call, const std::string& buffer, std::size_t count,
             double seconds, std::size_t wrong) {
    std::array<double, 2> mine{seconds, static_cast<double>(wrong)};
    std::array<double, 2> worst{};
    MPI_Allreduce(mine.data(), worst.data(), 2, MPI_DOUBLE, MPI_MAX, control_);
    const bool ok = worst[1] == 0.0;
    if (rank_ == 0) {
      fmt::print("{:>5}  {:<22}{:<26}{:>10}{:>12}{:>12.1f}  {}\n", step, call, buffer, count,
                 examples::formatSize(count * sizeof(float)), worst[0] * 1e6,
                 ok ? "OK" : fmt::format("FAIL ({} wrong on the worst rank)", worst[1]));
      std::fflush(stdout);
    }
    return ok ? 0 : 1;
  }

  Settings settings_;
  int rank_;
  int size_;
  MPI_Comm control_;
  std::vector<std::size_t> layers_;
  std::size_t shard_ = 0;
  std::size_t flatCount_ = 0;
  std::vector<std::vector<float>> grads_;  // one bucket per layer
  std::vector<float> flat_;                // all gradients, padded to n shards
  std::vector<float> expected_;            // the averages this rank expects, same layout
  std::vector<float> shardBuf_;
  std::vector<float> params_;
  std::vector<float> gathered_;
};

constexpr const char* kUsage =
    "usage: grad_avg [--steps N] [--max-layer-bytes SIZE]\n"
    "  Data-parallel training step imitation on MPI_COMM_WORLD: per-layer allreduce of gradients,\n"
    "  a sharded optimizer step (reduce_scatter_block + allgather), a metrics allgather; every\n"
    "  result is checked exactly. Exits 1 if a check fails.\n"
    "  --steps N               training steps, 1..1000 (default 2)\n"
    "  --max-layer-bytes SIZE  leave out layers larger than SIZE (default 32M; K, M, G suffixes)\n";

// Returns -1 to run, otherwise the exit code (0 after --help, 2 after a usage error). Two options
// do not justify CLI11, whose inlined string code trips g++ 12's -Wnull-dereference here.
int parse(int argc, char** argv, bool print, Settings& s) {
  auto fail = [print](const std::string& message) {
    if (print) fmt::print(stderr, "grad_avg: {}\n{}", message, kUsage);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      if (print) fmt::print("{}", kUsage);
      return 0;
    }
    if (arg != "--steps" && arg != "--max-layer-bytes") return fail("unknown option '" + arg + "'");
    if (i + 1 >= argc) return fail(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--steps") {
      int steps = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), steps);
      if (ec != std::errc{} || end != value.data() + value.size() || steps < 1 || steps > 1000) {
        return fail("--steps '" + value + "' is not a whole number from 1 to 1000");
      }
      s.steps = steps;
    } else {
      const auto bytes = examples::parseSize(value);
      if (!bytes || *bytes < 4) {
        return fail("--max-layer-bytes '" + value +
                    "' is not a size of at least 4 bytes (examples: 4096, 64K, 32M)");
      }
      s.maxLayerBytes = *bytes;
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Settings settings;
  int status = parse(argc, argv, rank == 0, settings);
  if (status < 0) {
    // Bookkeeping (times, check verdicts) avoids coll_hccl, so only the demo's own calls show up
    // in its trace (unless coll_hccl is the only coll component).
    MPI_Comm control = examples::controlComm(MPI_COMM_WORLD);
    Demo demo(settings, rank, size, control);
    const examples::HostLayout hosts = examples::hostLayout(control);
    if (rank == 0) demo.printHeader(hosts);
    int failures = 0;
    for (int step = 1; step <= settings.steps; ++step) failures += demo.runStep(step);
    if (rank == 0) {
      fmt::print("# {}\n",
                 failures == 0 ? "all checks OK" : fmt::format("{} check(s) FAILED", failures));
      std::fflush(stdout);
    }
    MPI_Comm_free(&control);
    status = failures == 0 ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}
