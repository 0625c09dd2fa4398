// Timing of schedule steps over a transport, for hccl_calibrate.
//
// A step is what the executor runs: every rank posts all of its transfers, waits for all of them,
// then goes on. The probe times steps in which rank 0 exchanges `bytes` with each of its partners
// at once (one send and one receive per partner, as a ring or mesh step does) and each partner
// exchanges with rank 0; other ranks only join the barriers. Steps follow each other back to back;
// rank 0 times each one, and a sample's value is the lower quartile of its steps: the cost of one
// step, alpha + beta * bytes in the model's terms when there is one partner. Not the mean: on a
// shared machine a step whose peer was descheduled lasts a time slice (milliseconds) that has
// nothing to do with the link, and on a loaded one most steps can be such. On a quiet machine
// step times are tight and the lower quartile is within a few percent of the median.
//
// Every member of the group calls every function with the same arguments; the numbers are
// rank 0's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/generators.hpp"
#include "coll_hccl/tools/calibrate_group.hpp"
#include "ucx_tl/shm_link.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::calib {

struct StepTiming {
  std::size_t bytes = 0;
  double seconds = 0;            // per step: the median of the samples
  std::vector<double> samples;   // per step (a sample's lower quartile), one per repetition
  std::uint64_t iterations = 0;  // steps per sample, as planned
};

class StepProbe {
 public:
  // maxBytes: the largest message to be timed; limit: how long a step may take before it is an
  // error. yieldWhileWaiting: give up the CPU now and then while a step waits, for ranks that
  // are threads of one process (their partner may need this very CPU); processes spin, as the
  // engine's progress loop does.
  StepProbe(tl::Transport& transport, Sync& sync, std::size_t maxBytes,
            std::chrono::milliseconds limit, bool yieldWhileWaiting = false);

  // Steps per sample so that one sample lasts about `sampleSeconds` (at least 8) at the pilot's
  // fastest step time; agreed by all.
  std::uint64_t iterationsFor(std::span<const int> partners, std::size_t bytes,
                              double sampleSeconds);
  // One sample after a barrier: the lower quartile of `iterations` step times, or of the steps
  // run within `budgetSeconds` when they are slower than the pilot promised (at least 8).
  double sample(std::span<const int> partners, std::size_t bytes, std::uint64_t iterations,
                double budgetSeconds);
  // The time budget of a sample planned to last `sampleSeconds`: 4 times that, at least 50 ms,
  // so that a few time slices lost to other processes still leave steps to time.
  static double budget(double sampleSeconds);
  // `repeat` samples at one size, each within budget(sampleSeconds); their median.
  StepTiming measure(std::span<const int> partners, std::size_t bytes, int repeat,
                     double sampleSeconds);

 private:
  void step(std::span<const int> peers, std::size_t bytes);
  std::vector<int> peersOf(std::span<const int> partners) const;

  tl::Transport& t_;
  Sync& sync_;
  std::chrono::milliseconds limit_;
  bool yield_;
  std::vector<std::vector<std::byte>> sendBuf_, recvBuf_;  // per peer rank
  std::vector<tl::Completion> done_;
  std::vector<double> times_;  // of the current sample's steps
  std::uint32_t seq_ = 0;
  std::uint32_t msg_ = 0;
};

// Two schedules of one two-rank fp32 sum problem, timed against each other through the general
// executor: calls back to back, as OSU and an application's loop issue them; per schedule the
// median over `repeat` samples (taken alternately, so drift hits both alike) of a sample's
// lower-quartile call time on rank 0. A pair is data: its name in the measurement file and the
// names of its two schedules.
struct SchedulePair {
  const char* key;  // the measurement's JSON key
  Collective coll;
  const char* aName;
  algo::RankSchedule (*a)(const algo::Problem&, std::uint32_t);
  const char* bName;
  algo::RankSchedule (*b)(const algo::Problem&, std::uint32_t);
};

// What step_us stands for: a Reduce to rank 0 by the ring's one round (rank 1's whole vector read
// and reduced by the root) and by Mesh's two (ReduceScatter of halves, both ranks reading and
// reducing at once, then the Gather of rank 1's half).
inline constexpr SchedulePair kReduceRounds{
    "shm_rounds", Collective::Reduce, "ring", algo::ringReduce, "mesh", algo::meshReduce};
// The memory traffic a push saves (cost_model.hpp's memory_GBps): AllReduce by Mesh (RS, then
// each rank reads its peer's result block) and by fullmesh_push (RS whose reduced pieces the rank
// writes into its peer from the cache).
inline constexpr SchedulePair kPushes{"shm_push", Collective::AllReduce,
                                      "mesh",     algo::meshAllReduce,
                                      "push",     algo::meshPushAllReduce};

struct PairTiming {
  std::size_t bytes = 0;
  double a = 0, b = 0;  // seconds per call of the pair's schedules a and b
};
PairTiming timePair(tl::Transport& transport, Sync& sync, const SchedulePair& pair,
                    std::size_t bytes, int repeat, double sampleSeconds);

// Where posts stream through the slots (cost_model.hpp's stream_from_bytes): fp32 sum AllReduce
// of `bytes` at two ranks by fullmesh_push through the executor (the single copy, CMA) and as the
// engine runs it on the link's slots, streamed (engine/slot_executor.hpp), timed alike.
struct StreamTiming {
  std::size_t bytes = 0;
  double executor = 0, slots = 0;  // seconds per call
};
StreamTiming timeStream(tl::Transport& transport, tl::ShmLink& link, Sync& sync, std::size_t bytes,
                        int repeat, double sampleSeconds);

// Where a copy-only call's posts travel as a block (cost_model.hpp's single_copy): a two-rank
// call of `coll` (AllGather by Mesh, or Bcast from rank 0 by Mesh) whose posts are `postBytes`
// each, on the link's slots as the engine compiles it, once with every post above the window
// streamed through the slots (two copies in user space) and once with every post a block its
// reader copies once (CMA), timed alike.
struct CopyPathTiming {
  std::size_t postBytes = 0;
  double streamed = 0, block = 0;  // seconds per call
};
CopyPathTiming timeCopyPaths(tl::ShmLink& link, Sync& sync, Collective coll, std::size_t postBytes,
                             int repeat, double sampleSeconds);

double median(std::vector<double> v);
double lowerQuartile(std::vector<double> v);

}  // namespace hccl::calib
