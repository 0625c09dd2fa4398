// The numbers behind automatic selection: per hierarchy level the alpha (startup) and beta
// (per byte) of the link class that carries it, gamma (per byte reduced) per datatype and op,
// optional size rules, and HCCL's default rules for `hccl_rules` selection. Built-in defaults
// ship as data (algorithms/data/cost_model.json and hccl_rules.json, embedded; printed by
// `hccl_info tuning`); a tuning file with the same schema overrides any part of them; the
// calibration tool writes such a file from measurements on the machine at hand.
//
// Tuning file schema (every member optional; unknown members are reported as warnings):
//   {
//     "version": 1,
//     "description": "free text, e.g. where and when it was measured",
//     "levels": {                                  // level0 = same server (HCCS class),
//       "level1": {"alpha_us": 20.0,               //   level1/level2 = between servers / pods
//                  "bandwidth_GBps": 1.25,         // beta = 1 / bandwidth
//                  "links": 1}                     // peers a rank can feed at full speed at once
//     },
//     "link_classes": {                            // a level's link when it rides another
//       "shm": {"alpha_us": 0.3,                   //   class: "shm", the shared-memory link
//               "bandwidth_GBps": 8.0,             //   (slots, single copy) that carries
//               "step_us": 20.0,                   //   level0 unless level0_link=tagged;
//               "step_from_bytes": 16360,          //   step_us: added to a step whose largest
//               "half_duplex": true,               //   message exceeds step_from_bytes (any
//               "memory_GBps": 8.0,                //   level or class may carry both);
//               "stream_from_bytes": 65536,        //   stream_from_bytes: LinkParams::streamFrom
//               "post_step_us": 4.0,               //   post_step_us: LinkParams::postStep
//               "single_copy": {                   //   single_copy: per collective, the posts
//                 "allgather": [524288, 4194304]}, //   [from, below) bytes: see LinkParams
//               "fast_single_copy": {              //   fast_single_copy: stream_from_bytes and
//                 "below_ratio": 2.5,              //   single_copy where the link's CMA took at
//                 "single_copy": {...}}}           //   most below_ratio times a memcpy
//     },                                           //   half_duplex: sends and receives share
//                                                  //   the bandwidth (default false);
//                                                  //   memory_GBps: the memory-traffic term
//                                                  //   (LinkParams::memory; 0 or absent: none)
//     "gamma": {                                   // reduction throughput in GB/s of output
//       "fp32": {"sum": 12.0, "*": 10.0},          //   per type, per op; "*" = any
//       "*": {"*": 8.0}
//     },
//     "rules": [                                   // first match wins, before the model
//       {"collective": "allreduce", "level": 1, "min_bytes": 0, "max_bytes": 65536,
//        "algorithm": "H-D_R"}
//     ],
//     "hccl_rules": [                              // HCCL's defaults (hccl_rules.hpp); a list
//       {"level": 1, "algorithm": "ring"}          //   here replaces the built-in one
//     ]
//   }
// Rules naming an unknown collective or algorithm are warned about and skipped, so one file can
// serve several versions of coll_hccl.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_result.hpp"
#include "algorithms/hccl_rules.hpp"
#include "algorithms/metrics.hpp"
#include "algorithms/types.hpp"

namespace hccl::algo {

struct LinkParams {
  double alpha = 0;  // seconds per step
  double beta = 0;   // seconds per byte
  // How many peers a rank can drive at full speed at once. HCCL's formulas assume one link per
  // peer (Mesh moves n/p per step); shared memory or a single NIC serialises a rank's transfers.
  double links = std::numeric_limits<double>::infinity();
  // Seconds a step adds when one of its messages to or from a peer exceeds stepFrom bytes: the
  // round a link runs for what it does not carry inline. On the shared-memory link (the general
  // executor's block round: the writer publishes a descriptor, the reader copies with CMA and
  // releases, the writer's step ends on that release) it is what makes a schedule of more rounds,
  // Mesh Reduce's ReduceScatter + Gather at two ranks, cost what the machine takes for it.
  double step = 0;
  std::uint64_t stepFrom = std::numeric_limits<std::uint64_t>::max();
  // Whether a rank's sends and receives share the bandwidth (added before dividing over `links`).
  // The shared-memory link's are both copies through the server's one memory system: at 1x2,
  // Mesh Reduce's ReduceScatter (both ranks copy half the vector at once) took as long as a ring
  // Reduce's whole-vector copy, so its Gather made it 1.1-2.4x slower at every size from 64 KiB
  // to 64 MiB (OSU osu_reduce, np=2), where full-duplex costing chose it from 1 MiB.
  bool halfDuplex = false;
  // Seconds per byte of memory traffic a step's copies no longer make (0: no such term). On the
  // half-duplex shared-memory link beta prices every byte a rank moves as traffic through memory:
  // read from memory where it is sent from (the peer's single copy reads it), written into memory
  // where it is received. A pushed send (Transfer::push) that the executor streams piece by piece
  // from the cache of the op that has just computed it is not read from memory: at two ranks
  // fullmesh_push reads n and writes n per rank where Mesh and the ring (RS+AG) read 1.5n and
  // write n. metrics.hpp credits such a step this much per streamed byte (at most the byte's
  // beta). hccl_calibrate measures it as Mesh's AllReduce minus fullmesh_push's over the bytes
  // streamed. The default, 8 GB/s (the link's bandwidth: a streamed byte costs its send no memory
  // time), is what the measurements say: OSU at 16 MiB (fullmesh_push 0.78 of the ring's time:
  // ~1.1 ms saved for 8 MiB streamed, 7.8 GB/s) and hccl_calibrate (11.1 GB/s against a
  // measured bandwidth of 12.5 GB/s: 4 MiB 0.75, 16 MiB 0.81 of Mesh's time).
  double memory = 0;
  // The shared-memory link only: a blocking call the slots run (a group that is its server's
  // whole set of ranks, every step sending one slice to every peer: any two-rank schedule, Mesh
  // one-shot, AllGather, Bcast; engine/slot_executor.hpp) streams its posts of at least this many
  // bytes through the slots, chunk by chunk in a pipeline (a reduction reducing each chunk
  // straight from the slot), instead of leaving the call to the general executor's single copy
  // (0: never). The slots are copied into and out of, but no page of a user buffer is pinned per
  // call, where CMA pins every 4 KiB page of both directions (perf at 16 MiB, np=2:
  // follow_page_pte 15-16% of fullmesh_push's time). Both ranks copy in lockstep, chunk by
  // chunk, where CMA reads a peer's memory whether it runs or not: measured with OSU 5.7 at np=2
  // (4 rounds, load 20) 1.15-2.0x faster than fullmesh_push on the executor from 1 to 32 MiB and
  // 0.91x at 64 MiB; at load 53-58 (one perf run) 0.58x at 16 MiB, half its time waiting for a
  // descheduled peer. A choice of path, not priced by the metrics: at 1xL the model's algorithms
  // cost their steps as the executor runs them.
  std::uint64_t streamFrom = 0;
  // Per collective, the sizes [from, below) of a post of a copy-only call on the shared-memory
  // slots (Bcast, AllGather, Gather, Scatter, AllToAll: engine/slot_executor.hpp) that travel
  // as a descriptor of the writer's buffer that readers copy once (CMA) instead of a stream
  // through the slots (two copies in user space, the slot in cache); an empty range: never (the
  // slots, streamed from streamFrom). An execution choice, not a term of the selection's costs.
  // Which is faster is the kernel's CMA against two memcpys, and how much of the copying the
  // ranks share. On this VM's kernel CMA moved 16 MiB in 2.4-2.6 ms where memcpy took 0.6-0.8
  // (pinning 4 KiB pages: follow_page_pte and the copy per page in the profile) but 512 KiB at
  // ~20 GB/s. A Bcast stream has the root copy in while the reader copies out: it matched or
  // beat the block at every size (OSU np=2, 64 KiB-64 MiB: 16 MiB 3x). In an AllGather every
  // rank posts and receives, so a stream is three copies a rank against the block's CMA and
  // one memcpy: the block was faster from 512 KiB to 2 MiB (OSU np=2, 6 rounds: 0.52-0.84x for
  // the stream), the stream below (1.1-1.3x) and from 4 MiB (1.1-1.6x). With 16 slots of 64 KiB
  // a channel (since) the AllGather stream won at every size there, so the class's defaults
  // give AllToAll [512 KiB, 4 MiB) (measured with 64 slots of 16 KiB) and nothing else; a machine
  // whose CMA is fast takes fastSingleCopy's (below).
  struct ByteRange {
    std::uint64_t from = 0, below = 0;
    bool contains(std::uint64_t n) const { return n >= from && n < below; }
    bool empty() const { return below <= from; }
  };
  std::array<ByteRange, kNumCollectives> singleCopy{};
  // streamFrom and singleCopy for a machine whose single copy is fast: the defaults above are
  // one VM's, where CMA took 3.5 times a memcpy's time (16 MiB); on another 2-core VM it took
  // 1.4-1.8 times (256 KiB-16 MiB), and there one copy beat the slots' two for AllGather from
  // 16 KiB and Bcast from 16 KiB to 1 MiB (a Bcast stream overlaps its two copies on two cores),
  // and reductions beat the executor's single copy on the slots' stream only from posts of 2-4
  // MiB (hccl_calibrate: AllReduce 4 MiB, 2 MiB posts, 0.97 of the executor's time; np=2
  // hccl_bench with posts streamed from 4 MiB against 64 KiB: ReduceScatter 256 KiB-4 MiB 1.4-1.6x
  // faster, AllReduce 256 KiB 1.6x, 4 MiB 0.92x; 4 MiB kept). Copies between a full window (1 MiB
  // at two ranks) and 4 MiB then run on the executor's single copy. The shared-memory link
  // times a CMA read against a memcpy as it is set up (tl::ShmLink::copyRatio, the same on every
  // rank of a server); at most belowRatio, these fields replace the class's, the ones not given
  // keep it. belowRatio 0 (a calibrated tuning file, which measured the machine, writes that):
  // never. Schema: "fast_single_copy": {"below_ratio": 2.5, "stream_from_bytes": ...,
  // "single_copy": {...}}.
  struct FastSingleCopy {
    double belowRatio = 0;
    std::optional<std::uint64_t> streamFrom;
    std::array<std::optional<ByteRange>, kNumCollectives> singleCopy{};
  } fastSingleCopy{};
  // Where posts travel on a link whose single copy took copyRatio times a memcpy (0: not
  // measured): the class's streamFrom and singleCopy, or fastSingleCopy's.
  struct Paths {
    std::uint64_t streamFrom = 0;
    std::array<ByteRange, kNumCollectives> singleCopy{};
    bool fast = false;  // fastSingleCopy's
  };
  Paths pathsFor(double copyRatio) const;
  // The shared-memory link only: its broadcast slots write a post (Transfer::post: one slice to
  // several peers, Mesh one-shot Broadcast at more than two ranks) once, every reader copying it
  // from the writer's slot or, above a slot, from the writer's memory (a descriptor, one CMA
  // read each, no request): priced as one write of the slice and each reader's copy, and a post
  // above stepFrom adds postStep instead of `step` (the general executor's block round, which
  // the post does not run). posts: postStep is given (post_step_us; absent: posts are priced as
  // sends to every peer). Measured with OSU 5.7 osu_bcast at np=4 on 2 cores (one-shot forced by
  // a tuning rule, 8 rounds): the one-shot's time above a slot less its alpha and its bytes at
  // the link's bandwidth, 32-256 KiB: 7.5, 6.7, 2.3, 1.0 us; 2.5 is the low end as the model
  // prices Mesh (general executor) at 5-10 us for 16-32 KiB where OSU measured 19-20 (README).
  bool posts = false;
  double postStep = 0;
};

struct SizeRule {
  Collective coll;
  int level;
  std::uint64_t minBytes = 0, maxBytes = std::numeric_limits<std::uint64_t>::max();  // [min, max]
  Algorithm algorithm;
};

// The link class name of the shared-memory link (ucx_tl/shm_link.hpp) in tuning documents.
inline constexpr const char* kSharedMemoryClass = "shm";

class CostModel {
 public:
  std::array<LinkParams, kNumLevels> level{};
  // The shared-memory link's numbers (slots for small messages, one CMA copy for large ones),
  // which level0 uses instead of level[0] (UCX tagged messages) when it rides that link.
  std::optional<LinkParams> sharedMemory;
  // Level0 rides the shared-memory link (withLevel0OnSharedMemory), whose blocking calls the
  // engine runs on its slots: a condition of sequence rules (generators.hpp), not a number.
  bool level0SharedMemory = false;
  std::vector<SizeRule> rules;
  std::vector<HcclRule> hcclRules;  // HCCL's default selection, for hccl_rules mode
  std::string source = "built-in defaults";

  // Seconds per byte of output for reducing with `op` on `type`.
  double gamma(DataType type, ReduceOp op) const;
  void setGamma(std::optional<DataType> type, std::optional<ReduceOp> op, double secondsPerByte);

  // The metrics parameters for a reduction of `type` with `op` (gamma 0 for copy-only calls).
  CostParams params(std::optional<DataType> type, std::optional<ReduceOp> op) const;

  // The first size rule for (collective, level, bytes), if any.
  std::optional<Algorithm> rule(Collective c, int lvl, std::uint64_t bytes) const;

  // This model with level0 on the shared-memory link: level[0] = sharedMemory, when given, and
  // level0SharedMemory set.
  CostModel withLevel0OnSharedMemory() const;

  // The model as a tuning document (what --tuning prints and calibration writes).
  std::string toJson() const;
  // A short digest of every number, so ranks can check they decide alike.
  std::uint64_t fingerprint() const;

 private:
  // Seconds per byte; index kNumDataTypes / kNumReduceOps = the "*" wildcard.
  std::array<std::array<std::optional<double>, kNumReduceOps + 1>, kNumDataTypes + 1> gamma_{};
};

// The built-in defaults, from measurements on the 2-core Debian VMs this project is developed on
// (shared memory level0; TCP or RoCE-class level1/2 with HCCL's own 60 us latency assumption
// scaled to TCP).
const CostModel& defaultCostModel();

// Applies a tuning document on top of `base`. Errors (unreadable file, invalid JSON, a value of
// the wrong type or range) name the file, the member and what is expected; unknown names become
// warnings and are skipped.
ConfigResult<CostModel> applyTuning(const CostModel& base, const std::string& jsonText,
                                    const std::string& origin, std::vector<std::string>& warnings);
// A tuning file is read only if it is a regular file of at most this size (opened without
// blocking: a FIFO or a directory is named as such).
inline constexpr std::uint64_t kMaxTuningFileBytes = std::uint64_t{4} << 20;
ConfigResult<CostModel> loadTuningFile(const CostModel& base, const std::string& path,
                                       std::vector<std::string>& warnings);

}  // namespace hccl::algo
