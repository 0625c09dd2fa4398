// What a persistent collective's start costs against the nonblocking call of the same size.
//
// Per size and collective, the same communicator runs rounds of `--iters` calls of each kind,
// alternating (nonblocking, persistent, nonblocking, ...) so that machine noise hits both alike:
// MPI_Ixxx + MPI_Wait against MPI_Start + MPI_Wait on a request made once by MPIX_xxx_init. Each
// rank times its own calls; the line shows the median over rounds of the slowest rank's mean, and
// the ratio nonblocking / persistent (above 1: the persistent start is cheaper). Results are
// checked once per size, so a fast wrong answer cannot pass.
//
//   mpirun -np 2 persistent_cost [--iters 200] [--rounds 7] [--max 4M]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mpi-ext.h>

namespace {

enum class Kind { Allreduce, Bcast, Alltoall };
const char* name(Kind k) {
  return k == Kind::Allreduce ? "allreduce" : k == Kind::Bcast ? "bcast" : "alltoall";
}

struct Buffers {
  std::vector<float> send, recv;
  int count = 0;  // allreduce, bcast: elements; alltoall: per pair
};

void nonblocking(Kind k, Buffers& b, MPI_Request* r) {
  switch (k) {
    case Kind::Allreduce:
      MPI_Iallreduce(b.send.data(), b.recv.data(), b.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, r);
      break;
    case Kind::Bcast:
      MPI_Ibcast(b.recv.data(), b.count, MPI_FLOAT, 0, MPI_COMM_WORLD, r);
      break;
    case Kind::Alltoall:
      MPI_Ialltoall(b.send.data(), b.count, MPI_FLOAT, b.recv.data(), b.count, MPI_FLOAT,
                    MPI_COMM_WORLD, r);
      break;
  }
}

void persistent(Kind k, Buffers& b, MPI_Request* r) {
  switch (k) {
    case Kind::Allreduce:
      MPIX_Allreduce_init(b.send.data(), b.recv.data(), b.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                          MPI_INFO_NULL, r);
      break;
    case Kind::Bcast:
      MPIX_Bcast_init(b.recv.data(), b.count, MPI_FLOAT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, r);
      break;
    case Kind::Alltoall:
      MPIX_Alltoall_init(b.send.data(), b.count, MPI_FLOAT, b.recv.data(), b.count, MPI_FLOAT,
                         MPI_COMM_WORLD, MPI_INFO_NULL, r);
      break;
  }
}

// Whether recv holds the expected result (inputs: rank r sends r + 1 everywhere).
bool correct(Kind k, const Buffers& b, int rank, int size) {
  for (std::size_t i = 0; i < b.recv.size(); ++i) {
    float e = k == Kind::Allreduce ? static_cast<float>(size * (size + 1) / 2)
              : k == Kind::Bcast   ? 1.0f
                                   : static_cast<float>(i / static_cast<std::size_t>(b.count) + 1);
    if (b.recv[i] != e) return false;
  }
  (void)rank;
  return true;
}

double slowest(double mine) {
  double all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = 200, rounds = 7;
  std::size_t maxBytes = std::size_t{4} << 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max")) {
      maxBytes = std::strtoull(argv[i + 1], nullptr, 10);
      const char unit = argv[i + 1][std::strlen(argv[i + 1]) - 1];
      if (unit == 'K') maxBytes <<= 10;
      if (unit == 'M') maxBytes <<= 20;
    }
  }
  if (iters < 1 || rounds < 1) {
    if (rank == 0) std::fprintf(stderr, "persistent_cost: --iters and --rounds must be >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0)
    std::printf(
        "# %d ranks, %d calls per round, %d rounds, alternating; us per call, median over "
        "rounds of the slowest rank\n# %-10s %10s %14s %14s %8s\n",
        size, iters, rounds, "coll", "bytes", "nonblocking", "persistent", "ratio");
  bool allCorrect = true;
  for (Kind k : {Kind::Allreduce, Kind::Bcast, Kind::Alltoall}) {
    for (std::size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
      Buffers b;
      const std::size_t elems = std::max<std::size_t>(1, bytes / sizeof(float));
      b.count = static_cast<int>(
          k == Kind::Alltoall ? std::max<std::size_t>(1, elems / static_cast<std::size_t>(size))
                              : elems);
      const std::size_t n = k == Kind::Alltoall
                                ? static_cast<std::size_t>(b.count) * static_cast<std::size_t>(size)
                                : elems;
      b.send.assign(n, static_cast<float>(rank + 1));
      b.recv.assign(n, rank == 0 && k == Kind::Bcast ? 1.0f : -1.0f);
      MPI_Request pers;
      persistent(k, b, &pers);
      std::vector<double> tn, tp;
      for (int round = 0; round < rounds; ++round) {
        for (int which = 0; which < 2; ++which) {
          MPI_Barrier(MPI_COMM_WORLD);
          const double t0 = MPI_Wtime();
          for (int i = 0; i < iters; ++i) {
            MPI_Request r;
            if (which == 0) {
              nonblocking(k, b, &r);
              MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
              MPI_Start(&pers);
              MPI_Wait(&pers, MPI_STATUS_IGNORE);
            }
          }
          const double t = slowest((MPI_Wtime() - t0) / iters);
          (which == 0 ? tn : tp).push_back(t);
        }
      }
      bool ok = correct(k, b, rank, size);
      std::fill(b.recv.begin(), b.recv.end(), rank == 0 && k == Kind::Bcast ? 1.0f : -1.0f);
      MPI_Start(&pers);
      MPI_Wait(&pers, MPI_STATUS_IGNORE);
      ok = ok && correct(k, b, rank, size);
      int okAll = ok ? 1 : 0, mine = okAll;
      MPI_Allreduce(&mine, &okAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      allCorrect = allCorrect && okAll == 1;
      MPI_Request_free(&pers);
      std::sort(tn.begin(), tn.end());
      std::sort(tp.begin(), tp.end());
      const double mn = tn[tn.size() / 2] * 1e6, mp = tp[tp.size() / 2] * 1e6;
      if (rank == 0)
        std::printf("  %-10s %10zu %14.2f %14.2f %8.3f%s\n", name(k), n * sizeof(float), mn, mp,
                    mn / mp, okAll ? "" : "  WRONG RESULT");
    }
  }
  MPI_Finalize();
  return allCorrect ? 0 : 1;
}
