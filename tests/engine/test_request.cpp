// A Request running a chunked V-form plan whose later runs need more scratch than the planned
// ones (request.cpp's fitScratch from startChunk). No generator of algorithms/ makes such a plan
// today (a later run has fewer elements, and so no more scratch), so the plan here is made by hand
// with a generator whose scratch grows as the runs shrink; ranks are threads, each with a
// Communicator over its in-process endpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/chunking.hpp"
#include "coll_hccl/engine/communicator.hpp"
#include "coll_hccl/engine/engine_state.hpp"
#include "coll_hccl/engine/request.hpp"
#include "ucx_tl/inproc.hpp"

namespace hccl::engine {
namespace {

using namespace std::chrono_literals;
using algo::Buf;
using algo::Problem;

// Where a rank's receives start in scratch: further in for a chunk of fewer elements, so each
// later run of a V form (whose blocks end one after another) needs more scratch than the one
// before.
std::uint64_t padOf(const Problem& pb) {
  return 48 / std::max<std::uint64_t>(1, pb.total());
}

// ReduceScatter (out of place, any counts): every rank sends block q of its Input to rank q,
// receives the other ranks' block r into scratch at padOf(pb) + slot, and sums in rank order.
algo::RankSchedule paddedReduceScatter(const Problem& pb, std::uint32_t r) {
  const std::uint32_t p = pb.ranks;
  const std::uint64_t n = pb.blocks.count(r);
  const std::uint64_t pad = padOf(pb);
  algo::RankSchedule s;
  algo::Step& st = s.newStep();
  for (std::uint32_t q = 0; q < p; ++q)
    if (q != r && pb.blocks.count(q) > 0) algo::send(st, q, pb.blocks.block(Buf::Input, q));
  // Rank q's contribution to block r, in slot q (rank r's own is its Input).
  auto part = [&](std::uint32_t q) {
    return q == r ? pb.blocks.block(Buf::Input, r) : algo::scratch(pad + q * n, n);
  };
  if (n == 0) return s;
  for (std::uint32_t q = 0; q < p; ++q)
    if (q != r) algo::recv(st, q, part(q));
  algo::reduce(st, algo::out(0, n), part(0), part(1));
  for (std::uint32_t q = 2; q < p; ++q) algo::reduce(st, algo::out(0, n), algo::out(0, n), part(q));
  return s;
}

struct Case {
  std::vector<std::uint64_t> counts;  // per rank
  std::uint64_t chunk;                // elements per block and chunk
  std::size_t runs;                   // what the cut must give
};

// One rank's plan, as Communicator::planFor makes it (the first kRunsPlanned runs' schedules and
// their largest scratch), with the padded generator.
std::shared_ptr<Plan> planOf(Communicator& comm, const Problem& pb, std::uint64_t chunk) {
  auto plan = std::make_shared<Plan>();
  plan->key = PlanCacheKey{pb, sizeof(std::int32_t), {}};
  plan->gen = paddedReduceScatter;
  plan->chunks = algo::ChunkPlan(pb, static_cast<std::uint32_t>(comm.rank()), chunk);
  const std::size_t planned = std::min(plan->chunks.runs(), algo::kRunsPlanned);
  for (std::size_t run = 0; run < planned; ++run) {
    auto schedule = comm.runSchedule(*plan, run);
    plan->scratchElems = std::max(plan->scratchElems, algo::scratchCount(*schedule));
    plan->schedules.push_back(std::move(schedule));
  }
  return plan;
}

class RequestRuns : public ::testing::TestWithParam<Case> {};

TEST_P(RequestRuns, LaterRunsGrowTheScratchAndSumRight) {
  const Case& c = GetParam();
  const auto p = static_cast<std::uint32_t>(c.counts.size());
  Problem pb = Problem::reduceScatter(p, 0);
  pb.blocks = algo::Blocks::of(c.counts);
  const std::uint64_t total = pb.total();

  std::vector<std::vector<std::int32_t>> inputs(p, std::vector<std::int32_t>(total));
  std::mt19937 rng(p * 7919 + static_cast<unsigned>(c.chunk));
  for (auto& in : inputs)
    for (auto& x : in) x = static_cast<std::int32_t>(rng() % 20001) - 10000;
  // The expectation, element by element from the inputs: rank r's block summed over ranks.
  std::vector<std::vector<std::int32_t>> want(p);
  for (std::uint32_t r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < c.counts[r]; ++i) {
      std::int32_t sum = 0;
      for (std::uint32_t q = 0; q < p; ++q) sum += inputs[q][pb.blocks.offset(r) + i];
      want[r].push_back(sum);
    }

  tl::InProcFabric fabric(static_cast<int>(p), tl::InProcOptions{10s});
  std::vector<std::string> errors(p);
  std::vector<std::vector<std::int32_t>> outputs(p);
  // Per rank: the planned scratch, and the most a later run needs (the growth it must make).
  std::vector<std::uint64_t> planned(p), needed(p);
  std::vector<std::size_t> runs(p);
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      EngineState engine;
      // The endpoint is the fabric's: the communicator shares it without owning it.
      std::shared_ptr<tl::Transport> endpoint(std::shared_ptr<void>{},
                                              &fabric.endpoint(static_cast<int>(r)));
      std::unique_ptr<Communicator> comm =
          Communicator::overTransport(engine, endpoint, static_cast<int>(r), static_cast<int>(p));
      const std::shared_ptr<Plan> plan = planOf(*comm, pb, c.chunk);
      runs[r] = plan->chunks.runs();
      planned[r] = plan->scratchElems;
      for (std::size_t run = 0; run < plan->chunks.runs(); ++run)
        needed[r] = std::max(needed[r], algo::scratchCount(*comm->runSchedule(*plan, run)));
      Communicator::Prepared call;
      call.shape.info.coll = Collective::ReduceScatter;
      call.shape.info.elemSize = sizeof(std::int32_t);
      call.shape.info.type = DataType::Int32;
      call.shape.info.op = ReduceOp::Sum;
      call.shape.info.uneven = true;
      call.shape.problem = pb;
      call.plan = plan;
      call.send = inputs[r].data();
      std::vector<std::int32_t> out(c.counts[r] + 1, -1);  // one guard element past the result
      call.recv = out.data();
      // Twice on one Request: a recycled request starts from the plan's scratch again.
      auto req = std::make_unique<Request>(*comm);
      for (int round = 0; round < 2 && errors[r].empty(); ++round) {
        std::string err;
        std::fill(out.begin(), out.end(), -1);
        if (comm->launch(call, req, err) != HCCL_SUCCESS) {
          errors[r] = "launch: " + err;
          break;
        }
        while (!req->progress()) {
        }
        if (req->failed()) errors[r] = req->error();
      }
      outputs[r] = out;
    });
  for (std::thread& t : threads) t.join();

  bool grows = false;
  for (std::uint32_t r = 0; r < p; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(runs[r], c.runs);
    EXPECT_EQ(errors[r], "");
    grows = grows || needed[r] > planned[r];
    ASSERT_EQ(outputs[r].size(), c.counts[r] + 1);
    EXPECT_EQ(std::vector<std::int32_t>(outputs[r].begin(), outputs[r].end() - 1), want[r]);
    EXPECT_EQ(outputs[r].back(), -1) << "written past the result";
  }
  // The case reaches the path under test: some rank's later run needs more than was planned.
  EXPECT_TRUE(grows);
}

// 2 ranks, 4 runs (the communicator caches their schedules); 5 ranks, 10 runs (more than
// Communicator::runSchedule caches: the request holds each run's schedule).
INSTANTIATE_TEST_SUITE_P(Cases, RequestRuns,
                         ::testing::Values(Case{{17, 10}, 4, 4}, Case{{3, 7, 11, 15, 19}, 2, 10}));

}  // namespace
}  // namespace hccl::engine
