// A timed, event-by-event run of a whole schedule over a model of the cluster: what a call is
// predicted to take, and where the time goes.
//
// The cost formulas (metrics.hpp) price each step alone and assume every transfer has its links
// to itself. A real server sends all its ranks' inter-server traffic through one NIC, so eight
// ranks each sending to another server share it eight ways. The simulator models that:
//  - a rank posts a step; its transfers to one peer in one direction on one level move as one
//    flow (SimOptions::bundle), which starts once both of its ends are posted, plus the level's
//    alpha (startup) and, for more than stepFrom bytes, the level's step cost (the formula's
//    CostParams::linkTime()), then moves its bytes;
//  - flows share bandwidth equally on every resource they cross, and run at the smallest share:
//    the flow's own link (1 / beta of its level), the sending rank's and the receiving rank's
//    port per level (`links` x 1 / beta, one direction each), and for inter-server levels the
//    sending and the receiving server's NIC (`nicBandwidth`, per direction when full duplex,
//    both directions together when not);
//  - a step completes when its last flow does; its reductions then take gamma per byte, and the
//    rank posts its next step.
// With one flow per resource this is exactly the critical path of metrics.hpp (tested); with
// sharing it predicts what the formulas cannot.
//
// Symmetry (simulateRepresentatives()): where every server of a class runs the same timeline
// (sim_symmetry.hpp says when), only the representative servers' ranks are simulated. A transfer
// between a simulated rank a and an outside rank b stands for the whole orbit of its images: b's
// end is taken to be posted when b's representative rep(b) posts the step matching b's own (b's
// schedule, generated on demand, names the step), and the flow counts on a's resources while it
// reads its share of b's resources from rep(b)'s (the flows rep(b) itself runs are the images of
// b's). tests/algorithms/sim_symmetry_test.cpp checks this against the whole simulation.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/schedule.hpp"

namespace hccl::algo {

struct ClusterModel {
  struct Level {
    double alpha = 0;  // seconds before a transfer's first byte moves
    double beta = 0;   // seconds per byte of one flow at full speed
    double links = std::numeric_limits<double>::infinity();  // flows a rank runs at full speed
    // Seconds added to the startup of a flow of more than stepFrom bytes: the round a link runs
    // for a message it does not carry inline (CostParams::step/stepFrom, the cost model's
    // step_us, 34 us on the shared-memory link).
    double step = 0;
    std::uint64_t stepFrom = std::numeric_limits<std::uint64_t>::max();
    // A rank's sends and receives on this level share its `links` (the cost model's
    // half_duplex, CostParams::halfDuplex): one port per rank instead of one per direction.
    bool halfDuplex = false;
  };
  std::array<Level, kNumLevels> level{};
  // Bytes per second through one server's NIC, shared by every inter-server (level >= 1) flow
  // that leaves or enters the server. Infinity: every rank has its own NIC.
  double nicBandwidth = std::numeric_limits<double>::infinity();
  bool fullDuplex = true;
  double gamma = 0;  // seconds per byte reduced
};

// One flow, for timelines: a transfer from `src` to `dst` between `start` (first byte) and `end`.
struct SimFlow {
  std::uint32_t src = 0, dst = 0;
  std::uint32_t srcStep = 0, dstStep = 0;
  std::uint8_t level = 0;
  std::uint64_t bytes = 0;
  double posted = 0;  // both ends posted
  double start = 0, end = 0;
};

// One step of one rank: posted, transfers done, local ops done.
struct SimStep {
  std::uint32_t rank = 0, step = 0;
  double posted = 0, transfersDone = 0, end = 0;
};

// A run of consecutive steps of one rank on the same level (steps without transfers join the
// run before them): the composition's phases as the slowest simulated rank went through them.
struct SimPhase {
  std::uint8_t level = 0;
  std::uint32_t firstStep = 0, steps = 0;
  double start = 0, end = 0;
};

struct SimResult {
  double time = 0;                        // when the last rank finished
  std::vector<double> finish;             // per simulated rank (simulate(): per rank)
  std::vector<SimPhase> phases;           // of the rank that finished last
  std::array<double, kNumLevels> busy{};  // per level: time some flow of that level was moving
  std::uint64_t flows = 0;
  std::vector<SimFlow> flowLog;  // with recordTimeline
  std::vector<SimStep> stepLog;
  std::string error;  // non-empty: the schedule does not run (unmatched or mismatched transfers)
};

struct SimOptions {
  bool recordTimeline = false;
  // A step's transfers between the same two ranks in the same direction on the same level move
  // as one flow of their summed bytes. They start together and cross the same resources, so
  // alone they end when their sum is through either way; but NB's strided blocks are hundreds of
  // runs to one peer per step, and as separate flows every event re-rated all of them (NB at
  // 512x8 took minutes). One flow per pair is also what a real link does (one connection per
  // peer), what the cost formula's per-peer-direction load assumes (step cost included), and
  // what makes NB's timeline the same on every server (a wrapped run no longer counts twice on
  // a shared NIC). Off: the flows as the schedule lists them (tests compare the two).
  bool bundle = true;
};

// `serverOf[r]` names rank r's server; ranks of one server share its NIC.
SimResult simulate(const Schedule& s, std::size_t elemSize,
                   const std::vector<std::uint32_t>& serverOf, const ClusterModel& model,
                   const SimOptions& options = {});

// What a run over representative ranks needs: every rank's server and representative (a rank of
// a simulated server, at the same position in it; itself when simulated), the simulated ranks,
// and any rank's schedule (called once per simulated rank and per outside peer).
struct SimRanks {
  std::vector<std::uint32_t> serverOf, rep, simulated;
  std::function<RankSchedule(std::uint32_t)> schedule;
  const Schedule* whole = nullptr;  // every rank's schedule, when there is one (no copies)
};
SimResult simulateRepresentatives(const SimRanks& ranks, std::size_t elemSize,
                                  const ClusterModel& model, const SimOptions& options = {});

// The timeline as Chrome trace-event JSON (chrome://tracing, Perfetto): a process per server, a
// thread per rank with its steps as slices, and every flow as an async slice on the sending rank
// (category "level<n>"). Times in microseconds.
std::string chromeTrace(const SimResult& r, const std::vector<std::uint32_t>& serverOf,
                        const std::string& title);

}  // namespace hccl::algo
