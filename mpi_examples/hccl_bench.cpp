// hccl_bench: allreduce, allgather and reduce_scatter(_block) timed on two communicators in the
// same run, alternating, so that coll_hccl (A) and Open MPI's own components (B) meet the same
// machine state. `hccl_bench --help` lists the options; mpi_examples/README.md explains the output.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <variant>

#include <fmt/core.h>

#include "bench/collective.hpp"
#include "bench/measure.hpp"
#include "bench/options.hpp"
#include "bench/plot.hpp"
#include "bench/report.hpp"
#include "common/mpi_env.hpp"

namespace {

using bench::Options;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, FreeDeleter>;

// Page-aligned and touched, so that first-touch page faults never land in a timed call.
Buffer pageAlignedBuffer(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  Buffer b(std::aligned_alloc(kPage, rounded));
  if (!b) {
    std::fprintf(stderr, "hccl_bench: cannot allocate %zu bytes\n", rounded);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  std::memset(b.get(), 0, rounded);
  return b;
}

std::string isoNow() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

// Rank 0 opens the JSON file up front, so that a bad path stops the run before it measures.
bool jsonWritable(const Options& o, int rank, MPI_Comm comm) {
  int ok = 1;
  if (rank == 0 && !o.jsonPath.empty()) {
    std::ofstream probe(o.jsonPath);
    if (!probe) {
      std::cerr << "hccl_bench: cannot write --json file '" << o.jsonPath
                << "': " << std::strerror(errno) << "\n";
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  return ok == 1;
}

std::size_t wrongOnRoot(const bench::Call& call, bool injectWrong, MPI_Comm comm, MPI_Comm control,
                        int rank, int size) {
  call.prepare(rank, size);
  call.run(comm);
  if (injectWrong && rank == 0) static_cast<unsigned char*>(call.recv)[0] ^= 0x40;
  unsigned long long local = call.countWrong(rank, size);
  unsigned long long total = 0;
  MPI_Reduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, control);
  return static_cast<std::size_t>(total);
}

// --memcpy: seconds per memcpy of `bytes` from `from` to `to` on rank 0, one warm copy first and
// then enough copies for about 10 ms, while the other ranks wait at a barrier (0 on them).
double timeMemcpy(void* to, const void* from, std::size_t bytes, int rank, MPI_Comm control) {
  MPI_Barrier(control);
  double seconds = 0.0;
  if (rank == 0 && bytes > 0) {
    std::memcpy(to, from, bytes);
    const int copies = static_cast<int>(std::clamp<std::size_t>((10u << 20) / bytes, 3, 1000));
    const double start = MPI_Wtime();
    for (int k = 0; k < copies; ++k) {
      std::memcpy(to, from, bytes);
      // Keeps the compiler from merging the copies: each must reach memory.
      asm volatile("" : : "r"(to) : "memory");
    }
    seconds = (MPI_Wtime() - start) / copies;
  }
  MPI_Barrier(control);
  return seconds;
}

// sides[0] is A, sides[1] B, then Options::also. Each pair runs one block on every side, in
// order (abab) or, in odd pairs, in reverse (abba).
bench::Row measureSize(const bench::Call& call, const Options& o,
                       const std::vector<MPI_Comm>& sides, MPI_Comm control, int rank, int size) {
  bench::Row row{call.coll, call.shape, o.itersFor(call.shape.bytes), 0, {}, {}, {}, {}};
  row.warmup = o.warmupFor(row.iters);
  // Only local work (refilling the inputs) between blocks; the spreads are gathered afterwards.
  std::vector<std::vector<double>> seconds(sides.size());
  auto block = [&](std::size_t side) {
    call.prepare(rank, size);
    seconds[side].push_back(bench::timeCalls(call, sides[side], row.warmup, row.iters));
  };
  for (int pair = 0; pair < o.pairs; ++pair) {
    const bool reverse = o.counterbalance && pair % 2 == 1;
    for (std::size_t k = 0; k < sides.size(); ++k) block(reverse ? sides.size() - 1 - k : k);
    if (o.memcpyRef)
      row.memcpySeconds.push_back(
          timeMemcpy(call.recv, call.send, call.shape.bytes, rank, control));
  }
  std::vector<bench::SideResult*> results = {&row.a, &row.b};
  row.others.resize(sides.size() - 2);
  for (auto& other : row.others) results.push_back(&other);
  for (std::size_t k = 0; k < sides.size(); ++k) {
    results[k]->pairs = bench::spreadsOnRoot(seconds[k], control);
    if (o.check)
      results[k]->wrong = wrongOnRoot(call, o.injectWrong, sides[k], control, rank, size);
  }
  return row;
}

// Under `--mca coll hccl` Open MPI loads no other collective component, so a side whose
// preference excludes hccl would have none: Open MPI 4.1.4 reports that and then crashes
// (mca_coll_base_comm_unselect). Refused up front instead, saying what to run.
bool sidesKeepHccl(const Options& o, int rank) {
  std::vector<std::pair<std::string, std::string>> prefs = {{"--a-preference", o.preferA},
                                                            {"--compare", o.compare}};
  for (const auto& pref : o.also) prefs.emplace_back("--also", pref);
  for (const auto& [option, value] : prefs) {
    const auto excluded = examples::parseCollPreference(value).exclude;
    if (std::find(excluded.begin(), excluded.end(), "hccl") == excluded.end()) continue;
    if (rank == 0)
      fmt::print(stderr,
                 "hccl_bench: {} '{}' excludes coll_hccl, but Open MPI runs with coll_hccl as its "
                 "only collective component (OMPI_MCA_coll, mpirun --mca coll hccl): that side "
                 "would have no collectives at all. To compare with Open MPI's own components, "
                 "run without --mca coll (coll_hccl by priority beside them); under --mca coll "
                 "hccl, give {} a value that keeps hccl.\n",
                 option, value, option);
    return false;
  }
  return true;
}

// The plot's gnuplot script is made here and rendered after MPI_Finalize (a child process
// is safer outside MPI).
int run(const Options& o, int rank, int size, std::string* plotScript) {
  examples::InfoKeys keysA;
  if (!o.preferA.empty()) keysA.emplace_back("ompi_comm_coll_preference", o.preferA);
  if (!o.hcclAlgo.empty()) keysA.emplace_back("hccl_algo", o.hcclAlgo);
  examples::InfoKeys keysB;
  if (!o.compare.empty()) keysB.emplace_back("ompi_comm_coll_preference", o.compare);

  // Statistics and checks travel on a third communicator without coll_hccl, so the component
  // under test never carries the numbers that judge it.
  bool alone = false;
  MPI_Comm control = examples::controlComm(MPI_COMM_WORLD, &alone);
  if (alone && !sidesKeepHccl(o, rank)) {
    MPI_Comm_free(&control);
    return 2;
  }
  if (!jsonWritable(o, rank, control)) {
    MPI_Comm_free(&control);
    return 2;
  }
  std::vector<MPI_Comm> sides = {examples::dupWithInfo(MPI_COMM_WORLD, keysA),
                                 examples::dupWithInfo(MPI_COMM_WORLD, keysB)};
  for (const auto& pref : o.also) {
    sides.push_back(examples::dupWithInfo(MPI_COMM_WORLD, {{"ompi_comm_coll_preference", pref}}));
  }

  bench::RunInfo info{size, examples::hostLayout(control), examples::libraryVersion(), isoNow()};
  Buffer send = pageAlignedBuffer(o.maxBytes);
  Buffer recv = pageAlignedBuffer(o.maxBytes);
  if (rank == 0) bench::printHeader(info, o);

  std::vector<bench::Row> rows;
  std::size_t wrongA = 0;
  std::size_t wrongB = 0;
  std::size_t wrongOthers = 0;
  for (bench::Coll coll : o.collectives) {
    if (rank == 0) bench::printTableHead(coll, o);
    std::optional<std::size_t> previousBytes;  // sizes that round to the same shape run once
    for (std::size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
      const auto shape = bench::shapeFor(coll, bytes, o.type->size, size);
      if (shape && shape->bytes != previousBytes) {
        previousBytes = shape->bytes;
        const bench::Call call{coll, *shape, o.type, o.op, o.inPlace, send.get(), recv.get()};
        bench::Row row = measureSize(call, o, sides, control, rank, size);
        wrongA += row.a.wrong;
        wrongB += row.b.wrong;
        for (const auto& other : row.others) wrongOthers += other.wrong;
        if (rank == 0) bench::printRow(row, o);
        rows.push_back(std::move(row));
      }
      if (bytes > o.maxBytes / o.factor) break;
      bytes *= o.factor;
    }
    if (rank == 0) bench::printTableFoot(coll, rows, o);
  }
  if (rank == 0) {
    bench::printVerdict(wrongA, wrongB + wrongOthers, o);
    if (!o.jsonPath.empty()) {
      std::ofstream(o.jsonPath) << bench::toJson(info, o, rows).dump(2) << "\n";
    }
    if (!o.plotPath.empty()) *plotScript = bench::plotScript(info, o, rows);
  }
  unsigned long long wrong = wrongA + wrongB + wrongOthers;
  MPI_Bcast(&wrong, 1, MPI_UNSIGNED_LONG_LONG, 0, control);

  for (MPI_Comm& c : sides) MPI_Comm_free(&c);
  MPI_Comm_free(&control);
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto parsed = bench::parseOptions(argc, argv, rank == 0);
  std::string plotScript;
  const int status = std::holds_alternative<int>(parsed)
                         ? std::get<int>(parsed)
                         : run(std::get<Options>(parsed), rank, size, &plotScript);
  MPI_Finalize();
  if (!plotScript.empty()) {
    const Options& o = std::get<Options>(parsed);
    std::printf("# plot: %s\n", bench::renderPlot(plotScript, o.plotPath).c_str());
  }
  return status;
}
