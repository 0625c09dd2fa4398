// hccl_calibrate: measures the cost model's numbers on the machine at hand and writes them as a
// tuning file (schema: algorithms/cost_model.hpp), so that automatic selection reflects this
// machine rather than the built-in guesses.
//
//   hccl_calibrate --output tuning.json            measure (a minute or so) and write
//   hccl_calibrate --quick                         seconds: fewer sizes and repetitions
//   mpirun --mca coll_hccl_tuning_file tuning.json ...   use it (or hccl_info table --tuning)
//
// What it measures
//   alpha, beta per link class. Over the product's transport, tl::UcxTransport: the tool forks
//   2 processes (3 to estimate `links`) joined pairwise by socketpairs, which carry the
//   all-gather that bootstraps UCX, and times schedule steps between rank 0 and rank 1 (see
//   calibrate_links.hpp: both post one send and one receive of m bytes and wait for both, as a
//   ring step does; steps back to back, time per step). First with every process on one server
//   (the HCCS class: shared memory) -> level0; then with every process on its own server (the
//   RoCE class: verbs, or tcp on a machine without RDMA) -> level1 and level2, which one machine
//   cannot tell apart. Then the shared-memory link (ucx_tl/shm_link.hpp: slots for small
//   messages, one CMA copy for large ones), which carries level0 unless level0_link=tagged, over
//   the HCCS class as the engine builds it -> link_classes.shm. Sizes: 0 B and powers of 4 from
//   64 B to --max-size (--quick: powers of 16); at each size the median of --repeat samples, a
//   sample being the lower quartile of the times of its steps (thousands of them for small
//   messages), which leaves out the steps whose peer the scheduler had put aside: they measure the
//   other tenants, not the link. If UCX cannot be set up (or with --inprocess) the in-process
//   transport is timed instead, with threads, for level0 only; level1/2 then keep their defaults.
//   links (level0): with 3 processes on one server, rank 0 steps with one peer, then with two
//   peers at once (alternating, 1 MiB each). With L links a step with k peers costs
//   alpha + beta * m * max(1, k / L), so L = 2 (t1 - alpha) / (t2 - alpha), kept within [1, 2]:
//   3 processes cannot show more than 2. Shared memory copies on the CPUs of both sides, so
//   expect 1 unless the machine has idle cores and a zero-copy transport. Only measured when the
//   machine has at least 3 CPUs (--links auto): with fewer, the 3 processes take turns on the CPUs
//   and a two-peer step measures the scheduler (a pipelined shared-memory transfer needs both
//   sides running at once), not the links. Not measured, links is written as 1, as the defaults
//   assume.
//   memory_GBps (link_classes.shm, two processes with single copy only): fp32 sum AllReduce at
//   two ranks through the executor by Mesh and by fullmesh_push, 4 MiB and 16 MiB (up to
//   --max-size), alternating; what the push saves over the bytes it streams from the cache
//   (n/2 a rank), median over the sizes: the rate of the memory read the model credits a
//   streamed push (cost_model.hpp, LinkParams::memory). No saving measured: 0, the term off.
//   Not with --quick (seconds of memory-sized calls).
//   stream_from_bytes (link_classes.shm, two processes with single copy only): fp32 sum
//   AllReduce at two ranks, fullmesh_push on the executor against the same schedule streamed on
//   the slots, 32 KiB to 16 MiB; written as the post (half the AllReduce) of the smallest size
//   from which the stream wins at every larger one. single_copy for allgather and broadcast:
//   two-rank AllGather and Bcast on the slots, each post streamed against each post a block its
//   reader copies once (CMA), posts of 16 KiB to 16 MiB; written as the longest run of sizes the
//   block wins. Calls back to back, as a training loop issues them: a Bcast stream lets the root
//   go while its reader still copies, which OSU's barrier after every call hides, so OSU can
//   favour the block at sizes where this favours the stream. With any of these measured the file
//   also writes fast_single_copy.below_ratio 0: the set-up's guess from the copy speed
//   (cost_model.hpp) must not replace what was measured. Not with --quick.
//   gamma: engine::kernel(type, op) over --gamma-size bytes (dst = a (+) dst, as the executor
//   reduces), median of --repeat runs, for every pair MPI defines (--quick: the common ones), in
//   GB/s of output; "<type>": {"*"} is the median of the type's ops and "*": {"*"} of all.
//
// The fit
//   t(m) = alpha + beta * m by least squares of the relative error (calibrate_fit.hpp): every
//   size has an equal say, so alpha follows small messages and beta large ones, where plain least
//   squares would let the largest messages decide alone and give alpha as their noise. alpha is
//   kept >= 0. A time inflated by an interruption (residual near -100%) hardly moves the line.
//   The report shows each size's measured and fitted time and the residuals; a large
//   residual means the link is not one straight line (e.g. UCX's eager/rendezvous switch) and
//   the model is a compromise there.
//
// Output: the tuning document on stdout or --output FILE; the report on stderr. The document is
// checked with algo::applyTuning before it is written. The machine is noisy (hypervisor core
// migration, other tenants): compare runs, and do not read small differences into it.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>

#include "algorithms/cost_model.hpp"
#include "coll_hccl/tools/calibrate_fit.hpp"
#include "coll_hccl/tools/calibrate_gamma.hpp"
#include "coll_hccl/tools/calibrate_group.hpp"
#include "coll_hccl/tools/calibrate_links.hpp"
#include "coll_hccl/tools/size_option.hpp"
#include "ucx_tl/inproc.hpp"
#include "ucx_tl/shm_link.hpp"
#include "ucx_tl/shm_transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace {

using namespace hccl;
using namespace hccl::calib;
using nlohmann::json;
using namespace std::chrono_literals;
using LinkParamsRange = algo::LinkParams::ByteRange;

struct Plan {
  std::vector<std::size_t> sizes;
  std::size_t maxBytes = 0;
  std::size_t linksBytes = 0;
  int repeat = 7;
  double sampleSeconds = 0.02;
  bool links = true;  // measure level0 links with a third process
  std::chrono::milliseconds stepLimit{30000};
  // Reduce sizes for the shared-memory link's step_us (block sizes, up to maxBytes).
  std::vector<std::size_t> roundSizes{std::size_t{64} << 10, std::size_t{256} << 10,
                                      std::size_t{1} << 20};
  // AllReduce sizes for memory_GBps: larger than the caches, so that memory is what they read.
  std::vector<std::size_t> pushSizes{std::size_t{4} << 20, std::size_t{16} << 20};
  // AllReduce streamed through the slots against the executor (stream_from_bytes).
  std::vector<std::size_t> streamSizes{std::size_t{32} << 10,  std::size_t{64} << 10,
                                       std::size_t{256} << 10, std::size_t{1} << 20,
                                       std::size_t{4} << 20,   std::size_t{16} << 20};
  // Post sizes of AllGather and Bcast, streamed against blocks (single_copy).
  std::vector<std::size_t> copySizes{std::size_t{16} << 10,  std::size_t{64} << 10,
                                     std::size_t{256} << 10, std::size_t{1} << 20,
                                     std::size_t{4} << 20,   std::size_t{16} << 20};
};

// The collectives whose single_copy range the calibration measures.
constexpr std::array kCopyCollectives{Collective::AllGather, Collective::Broadcast};

// One link class's timings, as rank 0 saw them.
struct ClassTimings {
  std::string carriers;  // what carried the link: "posix/memory", "tcp/lo", "in-process"
  std::vector<StepTiming> points;
};

struct LinksTimings {
  std::size_t bytes = 0;
  std::vector<double> one, two;  // seconds per step with one peer, with two peers at once
};

struct Measurements {
  std::string transport;  // "UCX" or "in-process"
  std::string why;        // why in-process, when it is
  ClassTimings level0;
  std::optional<ClassTimings> level1;
  std::optional<ClassTimings> shm;      // the shared-memory link (link class "shm")
  std::vector<PairTiming> shmRounds;    // kReduceRounds: Reduce by one round and by two (step_us)
  std::vector<PairTiming> shmPush;      // kPushes: AllReduce by Mesh and by push (memory_GBps)
  std::vector<StreamTiming> shmStream;  // AllReduce on the executor and streamed on the slots
  // Per kCopyCollectives entry: posts streamed against blocks.
  std::array<std::vector<CopyPathTiming>, kCopyCollectives.size()> shmCopyPaths;
  std::size_t shmInline = 0;  // the largest message it carries inline
  std::string shmWhy;         // why not, when it could not be set up
  std::optional<LinksTimings> links;
};

json toJson(const ClassTimings& c) {
  json pts = json::array();
  for (const StepTiming& p : c.points)
    pts.push_back({{"bytes", p.bytes}, {"iterations", p.iterations}, {"samples", p.samples}});
  return {{"carriers", c.carriers}, {"points", pts}};
}

ClassTimings classFrom(const json& j) {
  ClassTimings c;
  c.carriers = j.at("carriers").get<std::string>();
  for (const json& p : j.at("points")) {
    StepTiming t;
    t.bytes = p.at("bytes").get<std::size_t>();
    t.iterations = p.at("iterations").get<std::uint64_t>();
    t.samples = p.at("samples").get<std::vector<double>>();
    t.seconds = median(t.samples);
    c.points.push_back(std::move(t));
  }
  return c;
}

std::vector<PairTiming> pairsFrom(const json& j, const SchedulePair& pair) {
  std::vector<PairTiming> rows;
  for (const json& r : j.value(pair.key, json::array()))
    rows.push_back({r.at("bytes").get<std::size_t>(), r.at(pair.aName).get<double>(),
                    r.at(pair.bName).get<double>()});
  return rows;
}

ClassTimings timeSizes(StepProbe& probe, const Plan& plan) {
  ClassTimings c;
  const int partner[] = {1};
  for (std::size_t m : plan.sizes)
    c.points.push_back(probe.measure(partner, m, plan.repeat, plan.sampleSeconds));
  return c;
}

LinksTimings timeLinks(StepProbe& probe, const Plan& plan) {
  LinksTimings l;
  l.bytes = plan.linksBytes;
  const int one[] = {1};
  const int two[] = {1, 2};
  const std::uint64_t n1 = probe.iterationsFor(one, l.bytes, plan.sampleSeconds);
  const std::uint64_t n2 = probe.iterationsFor(two, l.bytes, plan.sampleSeconds);
  for (int k = 0; k < plan.repeat; ++k) {  // alternating, so drift hits both alike
    l.one.push_back(probe.sample(one, l.bytes, n1, StepProbe::budget(plan.sampleSeconds)));
    l.two.push_back(probe.sample(two, l.bytes, n2, StepProbe::budget(plan.sampleSeconds)));
  }
  return l;
}

std::string carriers(tl::UcxTransport& t, int peer) {
  const tl::LinkReport r = t.linkReport(peer);
  if (!r.error.empty()) throw std::runtime_error(r.error);
  return fmt::format("{}", fmt::join(r.transports, " "));
}

// A forked member: both link classes over UCX; rank 0 returns its timings as JSON.
std::string ucxMember(MeshMember& m, const Plan& plan) {
  json out;
  for (const tl::LinkClass cls : {tl::LinkClass::Hccs, tl::LinkClass::Roce}) {
    std::vector<int> serverOf;
    for (int r = 0; r < m.size(); ++r) serverOf.push_back(cls == tl::LinkClass::Hccs ? 0 : r);
    tl::UcxOptions options;
    options.timeout = plan.stepLimit;
    tl::UcxTransport t(m.rank(), serverOf, m.allGatherFn(), options);
    std::string how = m.rank() == 0 ? carriers(t, 1) : std::string();
    StepProbe probe(t, m, plan.maxBytes, plan.stepLimit);
    ClassTimings c = timeSizes(probe, plan);
    c.carriers = how;
    out[cls == tl::LinkClass::Hccs ? "level0" : "level1"] = toJson(c);
    if (cls == tl::LinkClass::Hccs && m.size() >= 3) {
      const LinksTimings l = timeLinks(probe, plan);
      out["links"] = {{"bytes", l.bytes}, {"one", l.one}, {"two", l.two}};
    }
    m.barrier();  // nobody tears down while a peer still needs it
  }
  // The shared-memory link over the HCCS class, built as the engine builds level0's: steps
  // between rank 0 and rank 1 in its slots (small) and by one CMA copy (large).
  try {
    const std::vector<int> serverOf(static_cast<std::size_t>(m.size()), 0);
    tl::UcxOptions options;
    options.timeout = plan.stepLimit;
    auto base = std::make_shared<tl::UcxTransport>(m.rank(), serverOf, m.allGatherFn(), options);
    tl::ShmOptions so;  // as the engine's at two ranks (setup::shmOptions): 16 slots of 64 KiB
    so.slotBytes = 65536 + 64;
    so.slotsPerChannel = 16;
    so.timeout = options.timeout;
    auto link = std::make_shared<tl::ShmLink>(m.rank(), serverOf, m.allGatherFn(), so);
    tl::ShmTransport t(base, link);
    StepProbe probe(t, m, plan.maxBytes, plan.stepLimit);
    ClassTimings c = timeSizes(probe, plan);
    c.carriers = fmt::format("the shared-memory link ({} B slots, single copy: {})",
                             link->slotBytes(), tl::name(link->singleCopy()));
    out["shm"] = toJson(c);
    out["shm_inline"] = t.inlineBytes();
    // Two-rank schedules: with a third member (links) it would have to idle through them.
    const bool pairs = m.size() == 2 && link->singleCopy() != tl::SingleCopy::None;
    const auto timePairs = [&](const SchedulePair& pair, const std::vector<std::size_t>& sizes,
                               std::size_t above) {
      json rows = json::array();
      for (std::size_t bytes : sizes) {
        if (!pairs || bytes <= above || bytes > plan.maxBytes) continue;
        const PairTiming pt = timePair(t, m, pair, bytes, plan.repeat, plan.sampleSeconds);
        rows.push_back({{"bytes", pt.bytes}, {pair.aName, pt.a}, {pair.bName, pt.b}});
      }
      out[pair.key] = rows;
    };
    // The rounds at block sizes (above what a slot carries inline): what step_us stands for.
    timePairs(kReduceRounds, plan.roundSizes, t.inlineBytes());
    timePairs(kPushes, plan.pushSizes, 0);
    json streams = json::array();
    if (pairs) {
      for (std::size_t bytes : plan.streamSizes) {
        if (bytes > plan.maxBytes) continue;
        const StreamTiming st = timeStream(t, *link, m, bytes, plan.repeat, plan.sampleSeconds);
        streams.push_back({{"bytes", st.bytes}, {"executor", st.executor}, {"slots", st.slots}});
      }
    }
    out["shm_stream"] = streams;
    for (Collective coll : kCopyCollectives) {
      json rows = json::array();
      for (std::size_t post : pairs ? plan.copySizes : std::vector<std::size_t>{}) {
        if (post > plan.maxBytes) continue;
        const CopyPathTiming ct =
            timeCopyPaths(*link, m, coll, post, plan.repeat, plan.sampleSeconds);
        rows.push_back(
            {{"post_bytes", ct.postBytes}, {"streamed", ct.streamed}, {"block", ct.block}});
      }
      out["shm_copy_paths"][std::string(name(coll))] = rows;
    }
    m.barrier();
  } catch (const tl::UcxError& e) {  // every rank alike: ShmLink agrees on its outcome
    out["shm_error"] = e.what();
  }
  return out.dump();
}

Measurements measureOverUcx(const Plan& plan, std::chrono::milliseconds deadline,
                            std::string& error) {
  const ForkedRun run = runForked(plan.links ? 3 : 2, deadline,
                                  [&plan](MeshMember& m) { return ucxMember(m, plan); });
  Measurements ms;
  if (!run.ok) {
    error = run.error;
    return ms;
  }
  const json j = json::parse(run.output);
  ms.transport = "UCX";
  ms.level0 = classFrom(j.at("level0"));
  ms.level1 = classFrom(j.at("level1"));
  if (j.contains("shm")) {
    ms.shm = classFrom(j.at("shm"));
    ms.shmInline = j.value("shm_inline", std::size_t{0});
    ms.shmRounds = pairsFrom(j, kReduceRounds);
    ms.shmPush = pairsFrom(j, kPushes);
    for (const json& sj : j.value("shm_stream", json::array()))
      ms.shmStream.push_back({sj.at("bytes").get<std::size_t>(), sj.at("executor").get<double>(),
                              sj.at("slots").get<double>()});
    for (std::size_t c = 0; c < kCopyCollectives.size(); ++c) {
      const json paths = j.value("shm_copy_paths", json::object());
      for (const json& row : paths.value(std::string(name(kCopyCollectives[c])), json::array()))
        ms.shmCopyPaths[c].push_back({row.at("post_bytes").get<std::size_t>(),
                                      row.at("streamed").get<double>(),
                                      row.at("block").get<double>()});
    }
  } else
    ms.shmWhy = j.value("shm_error", std::string("not measured"));
  if (j.contains("links")) {
    const json& l = j.at("links");
    ms.links =
        LinksTimings{l.at("bytes").get<std::size_t>(), l.at("one").get<std::vector<double>>(),
                     l.at("two").get<std::vector<double>>()};
  }
  return ms;
}

// The fallback: two threads over the in-process transport, level0 only.
Measurements measureInProcess(const Plan& plan) {
  constexpr int kRanks = 2;
  tl::InProcFabric fabric(kRanks, tl::InProcOptions{plan.stepLimit});
  ThreadSync sync(kRanks);
  Measurements ms;
  ms.transport = "in-process";
  std::string firstError;
  std::mutex mu;
  auto rankMain = [&](int r) {
    try {
      StepProbe probe(fabric.endpoint(r), sync, plan.maxBytes, plan.stepLimit, true);
      ClassTimings c = timeSizes(probe, plan);
      if (r == 0) ms.level0 = std::move(c);
    } catch (const std::exception& e) {
      {
        std::lock_guard lk(mu);
        if (firstError.empty()) firstError = fmt::format("rank {}: {}", r, e.what());
      }
      fabric.abort("a rank failed");  // the other's transfers fail too, and it leaves as well
      sync.leave();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rankMain, r);
  for (std::thread& t : threads) t.join();
  if (!firstError.empty()) throw std::runtime_error("in-process measurement: " + firstError);
  ms.level0.carriers = "in-process transport (threads)";
  return ms;
}

// ---- report -----------------------------------------------------------------------------------

std::string timeText(double s) {
  if (s < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string bytesText(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

LineFit fitAndReport(const std::string& title, const ClassTimings& c, int repeat, bool verbose) {
  std::vector<double> x, y;
  for (const StepTiming& p : c.points) {
    x.push_back(static_cast<double>(p.bytes));
    y.push_back(p.seconds);
  }
  const LineFit f = fitLine(x, y);
  fmt::print(
      stderr,
      "{} over {}: time per step (lower quartile of a sample's steps, median of {} samples)\n",
      title, c.carriers, repeat);
  fmt::print(stderr, "  {:>9} {:>12} {:>12} {:>9} {:>7} {:>10}\n", "bytes", "measured", "fitted",
             "residual", "spread", "steps");
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const StepTiming& p = c.points[i];
    const auto [lo, hi] = std::ranges::minmax(p.samples);
    fmt::print(stderr, "  {:>9} {:>12} {:>12} {:>8.1f}% {:>6.0f}% {:>10}\n", bytesText(p.bytes),
               timeText(p.seconds), timeText(f.alpha + f.beta * x[i]), 100 * f.residuals[i],
               100 * (hi - lo) / p.seconds, p.iterations);
    if (verbose) {
      std::string all;
      for (double s : p.samples) all += " " + timeText(s);
      fmt::print(stderr, "  {:>9} samples:{}\n", "", all);
    }
  }
  fmt::print(stderr,
             "  fit: alpha {}, beta {:.4f} ns/B ({:.3f} GB/s); relative residuals: rms {:.1f}%, "
             "worst {:.1f}%{}\n\n",
             timeText(f.alpha), f.beta * 1e9, 1e-9 / f.beta, 100 * f.rms, 100 * f.worst,
             f.alphaClamped ? " (the free fit wanted alpha < 0; alpha held at 0)" : "");
  return f;
}

// The table both estimates print: per size the pair's two call times and what was derived from
// them.
template <class Show>
void printPairTable(std::string_view what, const std::array<std::string_view, 3>& heads,
                    const std::vector<PairTiming>& rows, const std::vector<double>& derived,
                    Show show) {
  fmt::print(stderr,
             "{} at two ranks through the executor (lower quartile of back-to-back calls, "
             "median of samples)\n  {:>9} {:>12} {:>12} {:>12}\n",
             what, "bytes", heads[0], heads[1], heads[2]);
  for (std::size_t i = 0; i < rows.size(); ++i)
    fmt::print(stderr, "  {:>9} {:>12} {:>12} {:>12}\n", bytesText(rows[i].bytes),
               timeText(rows[i].a), timeText(rows[i].b), show(derived[i]));
}

// step_us of the shared-memory link: what a step moving a block costs beyond alpha + beta m, as
// the general executor runs it. With it, the model prices a two-rank Reduce on the half-duplex
// link (cost_model.hpp: the ReduceScatter's two halves, one each way, cost their sum) at
//   ring (one round):  alpha + step + n beta + n gamma
//   mesh (two rounds): 2 (alpha + step) + (3n/2) beta + (n/2) gamma
// so step = (mesh - ring) measured - alpha - (n/2) beta + (n/2) gamma at each size; written:
// their median (at least 0). It stands for all the machine adds to a round (the writer's wait for
// the release, the CMA call's page pinning, the peer's freshly written lines), so read it as a
// fit to where the second round stops paying, not as a latency.
double estimateStep(const std::vector<PairTiming>& rounds, const LineFit& f, double gamma) {
  std::vector<double> steps;
  for (const PairTiming& r : rounds) {
    const double half = static_cast<double>(r.bytes) / 2;
    steps.push_back((r.b - r.a) - f.alpha - f.beta * half + gamma * half);
  }
  printPairTable("shared-memory link rounds: fp32 sum Reduce", {"ring (1)", "mesh (2)", "step"},
                 rounds, steps, [](double s) { return timeText(s); });
  const double step = std::max(0.0, median(steps));
  fmt::print(stderr, "  -> step_us {:.4g} (median, at least 0)\n\n", step * 1e6);
  return step;
}

// memory_GBps of the shared-memory link: a streamed push reads n/2 a rank from the cache where
// Mesh's AllGather reads it from memory (the rest of the two calls is alike), so the rate is
// (n/2) / (mesh - push) at each size; written: the median, 0 (no term) when the push saved
// nothing.
double estimateMemory(const std::vector<PairTiming>& pushes) {
  std::vector<double> rates;
  for (const PairTiming& p : pushes) {
    const double saved = p.a - p.b;
    rates.push_back(saved > 0 ? static_cast<double>(p.bytes) / 2 / saved / 1e9 : 0.0);
  }
  printPairTable("shared-memory link pushes: fp32 sum AllReduce",
                 {"fullmesh", "pushed", "GB/s saved"}, pushes, rates,
                 [](double r) { return fmt::format("{:.3g}", r); });
  const double m = median(rates);
  fmt::print(stderr, "  -> memory_GBps {:.4g} (median; 0: the term off)\n\n", m);
  return m;
}

// stream_from_bytes of the shared-memory link: the post of the smallest measured size from which
// the slots' streamed AllReduce is at least as fast as the executor's at every larger measured
// size (a two-rank AllReduce's posts are halves: stream_from_bytes compares a post's bytes); 0
// (off) where the slots never win at the largest.
std::uint64_t estimateStreamFrom(const std::vector<StreamTiming>& streams) {
  fmt::print(stderr,
             "shared-memory link streaming: fp32 sum AllReduce at two ranks, fullmesh_push on the "
             "executor and streamed on the slots\n  {:>9} {:>12} {:>12}\n",
             "bytes", "executor", "slots");
  std::uint64_t from = 0;
  for (const StreamTiming& s : streams) {
    fmt::print(stderr, "  {:>9} {:>12} {:>12}\n", bytesText(s.bytes), timeText(s.executor),
               timeText(s.slots));
    if (s.slots > s.executor)
      from = 0;
    else if (from == 0)
      from = s.bytes / 2;
  }
  fmt::print(stderr, "  -> stream_from_bytes {} (0: off; posts of half the AllReduce)\n\n", from);
  return from;
}

// single_copy of one collective: the longest run of measured post sizes at which the block was at
// least as fast as the stream (calibrate_fit.hpp), up to 2^40 when it runs to the largest.
LinkParamsRange estimateSingleCopy(Collective coll, const std::vector<CopyPathTiming>& rows) {
  fmt::print(stderr,
             "shared-memory link single copy: two-rank {} on the slots, posts streamed and as "
             "blocks (CMA)\n  {:>9} {:>12} {:>12}\n",
             name(coll), "post", "streamed", "block");
  std::vector<std::uint64_t> posts;
  std::vector<double> block, streamed;
  for (const CopyPathTiming& r : rows) {
    fmt::print(stderr, "  {:>9} {:>12} {:>12}\n", bytesText(r.postBytes), timeText(r.streamed),
               timeText(r.block));
    posts.push_back(r.postBytes);
    block.push_back(r.block);
    streamed.push_back(r.streamed);
  }
  const SizeRange run = longestWinningRun(posts, block, streamed, std::uint64_t{1} << 40);
  fmt::print(stderr, "  -> single_copy.{} [{}, {}) ([0, 0]: never)\n\n", name(coll), run.from,
             run.below);
  return {run.from, run.below};
}

// links for level0 from the one-peer and two-peer step times (see the top of the file). alpha is
// a small correction at these sizes; it is capped at half a one-peer step so that a fit spoiled by
// noise cannot turn the estimate upside down.
double estimateLinks(const LinksTimings& l, const LineFit& f) {
  const double one = median(l.one), two = median(l.two);
  const double alpha = std::min(f.alpha, one / 2);
  const double raw = 2 * (one - alpha) / std::max(two - alpha, 1e-12);
  const double links = std::clamp(raw, 1.0, 2.0);
  fmt::print(
      stderr,
      "level0 links: a step of {} with one peer {}, with two peers at once {} (median of "
      "{} each, alternating)\n  -> 2 (t1 - alpha) / (t2 - alpha) = {:.2f}, written as {:.2f} "
      "(within [1, 2]){}\n\n",
      bytesText(l.bytes), timeText(one), timeText(two), l.one.size(), raw, links,
      std::thread::hardware_concurrency() < 3
          ? fmt::format("; note: {} CPUs for 3 processes, so they also share CPUs",
                        std::thread::hardware_concurrency())
          : "");
  return links;
}

double round4(double v) {
  return std::stod(fmt::format("{:.4g}", v));
}

json levelJson(const LineFit& f, std::optional<double> links) {
  json j = {{"alpha_us", round4(f.alpha * 1e6)}, {"bandwidth_GBps", round4(1e-9 / f.beta)}};
  if (links) j["links"] = round4(*links);
  return j;
}

json gammaJson(const std::vector<GammaTiming>& g, int repeat, std::size_t bytes) {
  fmt::print(stderr, "gamma: reduction throughput over {}, GB/s of output, median of {}\n",
             bytesText(bytes), repeat);
  json out = json::object();
  std::map<std::string, std::vector<double>> perType;
  std::vector<double> all;
  std::string line;
  std::string lastType;
  for (const GammaTiming& t : g) {
    const std::string tn(name(t.type)), on(name(t.op));
    out[tn][on] = round4(t.gbps);
    perType[tn].push_back(t.gbps);
    all.push_back(t.gbps);
    if (tn != lastType && !line.empty()) {
      fmt::print(stderr, "  {}\n", line);
      line.clear();
    }
    if (line.empty()) line = fmt::format("{:<10}", tn);
    line += fmt::format(" {} {:.2f}", on, t.gbps);
    lastType = tn;
  }
  if (!line.empty()) fmt::print(stderr, "  {}\n", line);
  for (const auto& [tn, v] : perType) out[tn]["*"] = round4(median(v));
  if (!all.empty()) out["*"]["*"] = round4(median(all));
  fmt::print(stderr, "  any type, any op (median): {:.2f}\n\n", median(all));
  return out;
}

// ---- options ----------------------------------------------------------------------------------

std::vector<std::size_t> sizesUpTo(std::size_t max, std::size_t factor) {
  std::vector<std::size_t> sizes = {0};
  for (std::size_t m = 64; m <= max; m *= factor) sizes.push_back(m);
  if (sizes.back() != max) sizes.push_back(max);
  return sizes;
}

std::string hostAndDate() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return fmt::format("{}, {}", host, date);
}

// Before measuring: a minute of measurements should not end in "cannot write".
void checkWritable(const std::string& path) {
  if (path == "-") return;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  if (::access(d.c_str(), W_OK) != 0)
    throw CLI::ValidationError("--output", fmt::format("cannot write into the directory {} ({})", d,
                                                       std::strerror(errno)));
}

// Through a temporary and a rename, so a reader never sees half a file.
void writeOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}\n", text);
    return;
  }
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  out << text << '\n';
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  fmt::print(stderr, "wrote {}\n", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Measure alpha/beta per link class and gamma per type/op on this machine and write a "
      "coll_hccl tuning file"};
  std::string output = "-", description, maxSize, gammaSize;
  std::string linksMode = "auto";
  bool quick = false, inprocess = false, verbose = false;
  int repeat = 0;
  double timeout = 300;
  app.add_option("-o,--output", output, "Tuning file to write (- = stdout)")->capture_default_str();
  app.add_flag("--quick", quick, "Fewer sizes and repetitions: a few seconds, rougher numbers");
  app.add_option("--max-size", maxSize,
                 "Largest message timed (B, K, M, G; default 16M, quick 4M)");
  app.add_option("--gamma-size", gammaSize, "Buffer for reduction timing (default 16M, quick 8M)");
  app.add_option("--repeat", repeat, "Samples per size, median taken (default 7, quick 3)")
      ->check(CLI::Range(1, 101));
  app.add_option("--description", description, "The tuning file's description")
      ->capture_default_str();
  app.add_flag("--inprocess", inprocess,
               "Time the in-process transport (threads) instead of UCX; level0 only");
  app.add_option("--links", linksMode,
                 "Estimate level0 links with 3 processes: auto (when there are at least 3 CPUs), "
                 "measure, skip")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "measure", "skip"}));
  app.add_option("--timeout", timeout, "Seconds the forked measurement may take")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  app.add_flag("-v,--verbose", verbose, "Print every sample");
  CLI11_PARSE(app, argc, argv);

  try {
    Plan plan;
    plan.repeat = repeat > 0 ? repeat : quick ? 3 : 7;
    plan.sampleSeconds = quick ? 0.004 : 0.02;
    plan.maxBytes = tools::parseSizeOption(maxSize.empty() ? (quick ? "4M" : "16M") : maxSize);
    if (plan.maxBytes < 1024 || plan.maxBytes > (std::size_t{1} << 30))
      throw CLI::ValidationError("--max-size",
                                 fmt::format("{} bytes is outside [1K, 1G]", plan.maxBytes));
    plan.sizes = sizesUpTo(plan.maxBytes, quick ? 16 : 4);
    plan.linksBytes = std::min<std::size_t>(plan.maxBytes, std::size_t{1} << 20);
    // Memory-sized AllReduces take seconds on a loaded machine: not in the quick run.
    if (quick) plan.pushSizes.clear();
    // The streamed AllReduces' pairs too (seconds under load): the quick run writes no
    // stream_from_bytes.
    if (quick) plan.streamSizes.clear();
    // Nor AllGather's and Bcast's paths: the quick run writes no single_copy.
    if (quick) plan.copySizes.clear();
    const unsigned cpus = std::thread::hardware_concurrency();
    plan.links = linksMode == "measure" || (linksMode == "auto" && cpus >= 3);
    const std::size_t gammaBytes =
        tools::parseSizeOption(gammaSize.empty() ? (quick ? "8M" : "16M") : gammaSize);
    if (gammaBytes < 4096 || gammaBytes > (std::size_t{1} << 31))
      throw CLI::ValidationError("--gamma-size",
                                 fmt::format("{} bytes is outside [4K, 2G]", gammaBytes));

    checkWritable(output);

    Measurements ms;
    std::string ucxError = "--inprocess given";
    if (!inprocess) {
      fmt::print(stderr, "hccl_calibrate: timing UCX with {} forked processes\n\n",
                 plan.links ? 3 : 2);
      const auto deadline = std::chrono::milliseconds(static_cast<long>(timeout * 1000));
      ucxError.clear();
      ms = measureOverUcx(plan, deadline, ucxError);
      if (!ucxError.empty())
        fmt::print(stderr,
                   "hccl_calibrate: UCX measurement failed ({}); timing the in-process transport "
                   "instead\n\n",
                   ucxError);
    }
    if (ms.transport.empty()) {
      ms = measureInProcess(plan);
      ms.why = ucxError;
    }

    const LineFit f0 = fitAndReport("level0 (HCCS class)", ms.level0, plan.repeat, verbose);
    std::optional<LineFit> f1, fShm;
    if (ms.level1)
      f1 = fitAndReport("level1/level2 (RoCE class)", *ms.level1, plan.repeat, verbose);
    if (ms.shm)
      fShm = fitAndReport("level0 on the shared-memory link (link class shm)", *ms.shm, plan.repeat,
                          verbose);
    else if (ms.level1)
      fmt::print(stderr, "shared-memory link: not measured ({})\n\n", ms.shmWhy);
    double links = 1;
    if (ms.links)
      links = estimateLinks(*ms.links, f0);
    else
      fmt::print(stderr, "level0 links: not measured ({}); written as 1\n\n",
                 inprocess || !ms.level1 ? "in-process"
                 : linksMode == "skip"   ? "--links skip"
                                         : fmt::format("{} CPUs for 3 processes", cpus));
    const std::vector<GammaTiming> gamma = measureGamma(gammaBytes, plan.repeat, quick);

    json doc;
    doc["version"] = 1;
    const std::string mode = quick ? " --quick" : "";
    std::string what;
    if (ms.level1)
      what = fmt::format(
          "hccl_calibrate{} on {}: level0 over UCX {}, level1/2 over UCX {}, shm over {}", mode,
          hostAndDate(), ms.level0.carriers, ms.level1->carriers,
          ms.shm ? ms.shm->carriers : "nothing (" + ms.shmWhy + ")");
    else
      what = fmt::format(
          "hccl_calibrate{} on {}: level0 over the in-process transport ({}); level1/2 not "
          "measured",
          mode, hostAndDate(), ms.why);
    doc["description"] = description.empty() ? what : description;
    doc["levels"]["level0"] = levelJson(f0, links);
    if (f1) {
      doc["levels"]["level1"] = levelJson(*f1, std::nullopt);
      doc["levels"]["level2"] = levelJson(*f1, std::nullopt);
    }
    if (fShm) doc["link_classes"][algo::kSharedMemoryClass] = levelJson(*fShm, links);
    doc["gamma"] = gammaJson(gamma, plan.repeat, gammaBytes);
    if (fShm && !ms.shmRounds.empty()) {
      double g = 0;  // fp32 sum's seconds per byte, the rounds' reduction
      for (const GammaTiming& t : gamma)
        if (t.type == DataType::Float32 && t.op == ReduceOp::Sum) g = 1.0 / (t.gbps * 1e9);
      json& shm = doc["link_classes"][algo::kSharedMemoryClass];
      shm["step_us"] = round4(estimateStep(ms.shmRounds, *fShm, g) * 1e6);
      shm["step_from_bytes"] = ms.shmInline;
      if (!ms.shmStream.empty())
        shm["stream_from_bytes"] = estimateStreamFrom(ms.shmStream);
      else
        fmt::print(stderr,
                   "shared-memory link streaming: not measured{}; stream_from_bytes not "
                   "written\n\n",
                   quick ? " (--quick)" : "");
      bool copies = false;
      for (std::size_t c = 0; c < kCopyCollectives.size(); ++c) {
        if (ms.shmCopyPaths[c].empty()) continue;
        const LinkParamsRange r = estimateSingleCopy(kCopyCollectives[c], ms.shmCopyPaths[c]);
        shm["single_copy"][std::string(name(kCopyCollectives[c]))] = {r.from, r.below};
        copies = true;
      }
      // Measured here: the set-up's guess from the copy speed (fast_single_copy) must not
      // override it.
      if (copies || !ms.shmStream.empty()) shm["fast_single_copy"] = {{"below_ratio", 0}};
      if (!copies)
        fmt::print(stderr,
                   "shared-memory link single copy: not measured{}; single_copy not "
                   "written\n\n",
                   quick ? " (--quick)" : "");
      if (!ms.shmPush.empty())
        shm["memory_GBps"] = round4(estimateMemory(ms.shmPush));
      else
        fmt::print(stderr,
                   "shared-memory link pushes: not measured ({}); memory_GBps not "
                   "written\n\n",
                   quick ? "--quick" : "--max-size below 4 MiB");
    } else if (fShm) {
      fmt::print(stderr, "shared-memory link rounds: not measured ({}); step_us not written\n\n",
                 plan.links ? "a third process takes part (--links)" : "no single copy");
    }
    const std::string text = doc.dump(2);

    // What the selector will read: refuse to write a file it would reject or half ignore.
    std::vector<std::string> warnings;
    const auto check =
        algo::applyTuning(algo::defaultCostModel(), text, "hccl_calibrate output", warnings);
    if (!check.ok())
      throw std::runtime_error("the tuning document does not load: " + check.error().message);
    for (const std::string& w : warnings)
      throw std::runtime_error("the tuning document loads with a warning: " + w);
    writeOutput(output, text);
    if (output != "-")
      fmt::print(stderr,
                 "use it: --mca coll_hccl_tuning_file {0}; see its decisions with hccl_info table "
                 "--tuning {0} --shape 4x8\n",
                 output);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "hccl_calibrate: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
