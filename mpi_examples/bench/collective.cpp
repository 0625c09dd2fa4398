#include "bench/collective.hpp"

#include <cstring>
#include <vector>

namespace bench {

namespace {

int asCount(std::size_t n) {
  return static_cast<int>(n);
}  // callers keep counts <= INT_MAX

char* at(void* base, std::size_t elements, std::size_t typeSize) {
  return static_cast<char*>(base) + elements * typeSize;
}

}  // namespace

constexpr Coll kAll[] = {Coll::Allreduce,      Coll::Allgather, Coll::ReduceScatter,
                         Coll::ReduceScatterV, Coll::Bcast,     Coll::Reduce,
                         Coll::Scatter,        Coll::Alltoall,  Coll::AllgatherV};

std::string_view name(Coll c) {
  switch (c) {
    case Coll::Allreduce:
      return "allreduce";
    case Coll::Allgather:
      return "allgather";
    case Coll::ReduceScatter:
      return "reduce_scatter";
    case Coll::ReduceScatterV:
      return "reduce_scatter_v";
    case Coll::Bcast:
      return "bcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::Scatter:
      return "scatter";
    case Coll::Alltoall:
      return "alltoall";
    case Coll::AllgatherV:
      return "allgatherv";
  }
  return "?";
}

std::optional<Coll> parseColl(std::string_view s) {
  for (Coll c : kAll) {
    if (name(c) == s) return c;
  }
  return std::nullopt;
}

std::vector<std::string> collNames() {
  std::vector<std::string> out;
  for (Coll c : kAll) out.emplace_back(name(c));
  return out;
}

bool reduces(Coll c) {
  return c == Coll::Allreduce || c == Coll::ReduceScatter || c == Coll::ReduceScatterV ||
         c == Coll::Reduce;
}

std::optional<Shape> shapeFor(Coll c, std::size_t sizeBytes, std::size_t typeSize, int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  const double ranks = static_cast<double>(nranks);
  Shape s;
  switch (c) {
    case Coll::Allreduce:
      s.block = sizeBytes / typeSize;
      s.sendCount = s.block;
      s.recvCount = s.block;
      s.busFactor = 2.0 * (ranks - 1.0) / ranks;
      break;
    case Coll::Allgather:
    case Coll::AllgatherV:
      s.block = sizeBytes / typeSize / n;
      s.sendCount = s.block;
      s.recvCount = s.block * n;
      s.busFactor = (ranks - 1.0) / ranks;
      break;
    case Coll::Reduce:
      s.block = sizeBytes / typeSize;
      s.sendCount = s.block;
      s.recvCount = s.block;
      s.busFactor = 1.0;
      break;
    case Coll::Scatter:
      s.block = sizeBytes / typeSize / n;
      s.sendCount = s.block * n;
      s.recvCount = s.block;
      s.busFactor = (ranks - 1.0) / ranks;
      break;
    case Coll::Alltoall:
      s.block = sizeBytes / typeSize / n;
      s.sendCount = s.block * n;
      s.recvCount = s.block * n;
      s.busFactor = (ranks - 1.0) / ranks;
      break;
    case Coll::ReduceScatter:
    case Coll::ReduceScatterV:
      s.block = sizeBytes / typeSize / n;
      s.sendCount = s.block * n;
      s.recvCount = s.block;
      s.busFactor = (ranks - 1.0) / ranks;
      break;
    case Coll::Bcast:
      s.block = sizeBytes / typeSize;
      s.sendCount = 0;
      s.recvCount = s.block;
      s.busFactor = 1.0;
      break;
  }
  if (s.block == 0) return std::nullopt;
  const bool whole = c == Coll::Allreduce || c == Coll::Bcast || c == Coll::Reduce;
  s.bytes = (whole ? s.block : s.block * n) * typeSize;
  return s;
}

void Call::run(MPI_Comm comm) const {
  const void* sbuf = inPlace ? MPI_IN_PLACE : send;
  switch (coll) {
    case Coll::Allreduce:
      MPI_Allreduce(sbuf, recv, asCount(shape.block), type->handle, op->handle(), comm);
      break;
    case Coll::Allgather:
      // In place, each rank's own block already sits at its offset in recv; counts are ignored.
      MPI_Allgather(sbuf, asCount(shape.block), type->handle, recv, asCount(shape.block),
                    type->handle, comm);
      break;
    case Coll::ReduceScatter:
      MPI_Reduce_scatter_block(sbuf, recv, asCount(shape.block), type->handle, op->handle(), comm);
      break;
    case Coll::ReduceScatterV: {
      int n = 0;
      MPI_Comm_size(comm, &n);
      const std::vector<int> counts(static_cast<std::size_t>(n), asCount(shape.block));
      MPI_Reduce_scatter(sbuf, recv, counts.data(), type->handle, op->handle(), comm);
      break;
    }
    case Coll::Bcast:
      // One buffer: the root's input is its output (--in-place changes nothing).
      MPI_Bcast(recv, asCount(shape.block), type->handle, 0, comm);
      break;
    case Coll::Reduce:
      MPI_Reduce(sbuf, recv, asCount(shape.block), type->handle, op->handle(), 0, comm);
      break;
    case Coll::Scatter: {
      // In place only at the root: its block stays in the send buffer.
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      MPI_Scatter(send, asCount(shape.block), type->handle,
                  inPlace && rank == 0 ? MPI_IN_PLACE : recv, asCount(shape.block), type->handle, 0,
                  comm);
      break;
    }
    case Coll::Alltoall:
      MPI_Alltoall(sbuf, asCount(shape.block), type->handle, recv, asCount(shape.block),
                   type->handle, comm);
      break;
    case Coll::AllgatherV: {
      int n = 0;
      MPI_Comm_size(comm, &n);
      std::vector<int> counts(static_cast<std::size_t>(n), asCount(shape.block)), displs(counts);
      for (int r = 0; r < n; ++r) displs[static_cast<std::size_t>(r)] = r * asCount(shape.block);
      MPI_Allgatherv(sbuf, asCount(shape.block), type->handle, recv, counts.data(), displs.data(),
                     type->handle, comm);
      break;
    }
  }
}

void Call::prepare(int rank, int nranks) const {
  const Pattern p{op->op, nranks};
  const std::size_t ts = type->size;
  std::memset(recv, kSentinelByte, shape.recvCount * ts);
  switch (coll) {
    case Coll::Allreduce:
      type->fill(inPlace ? recv : send, shape.block, p, rank, 0);
      break;
    case Coll::Allgather:
      if (inPlace) {
        type->fill(at(recv, static_cast<std::size_t>(rank) * shape.block, ts), shape.block, p, rank,
                   0);
      } else {
        type->fill(send, shape.block, p, rank, 0);
      }
      break;
    case Coll::ReduceScatter:
    case Coll::ReduceScatterV:
      // In place the input fills all n blocks of recv; the result lands in the first block.
      type->fill(inPlace ? recv : send, shape.sendCount, p, rank, 0);
      break;
    case Coll::Bcast:
      if (rank == 0) type->fill(recv, shape.block, p, 0, 0);
      break;
    case Coll::Reduce:
      // In place only at the root: its input is in recv.
      type->fill(inPlace && rank == 0 ? recv : send, shape.block, p, rank, 0);
      break;
    case Coll::Scatter:
      if (rank == 0) type->fill(send, shape.sendCount, p, 0, 0);
      break;
    case Coll::Alltoall:
      type->fill(inPlace ? recv : send, shape.sendCount, p, rank, 0);
      break;
    case Coll::AllgatherV:
      if (inPlace) {
        type->fill(at(recv, static_cast<std::size_t>(rank) * shape.block, ts), shape.block, p, rank,
                   0);
      } else {
        type->fill(send, shape.block, p, rank, 0);
      }
      break;
  }
}

std::size_t Call::countWrong(int rank, int nranks) const {
  const Pattern p{op->op, nranks};
  const std::size_t ts = type->size;
  switch (coll) {
    case Coll::Allreduce:
      return type->countWrongReduced(recv, shape.block, p, 0);
    case Coll::Allgather: {
      std::size_t wrong = 0;
      for (int r = 0; r < nranks; ++r) {
        wrong += type->countWrongValues(at(recv, static_cast<std::size_t>(r) * shape.block, ts),
                                        shape.block, p, r, 0);
      }
      return wrong;
    }
    case Coll::ReduceScatter:
    case Coll::ReduceScatterV:
      return type->countWrongReduced(recv, shape.block, p,
                                     static_cast<std::size_t>(rank) * shape.block);
    case Coll::Bcast:
      return type->countWrongValues(recv, shape.block, p, 0, 0);
    case Coll::Reduce:
      return rank == 0 ? type->countWrongReduced(recv, shape.block, p, 0) : 0;
    case Coll::Scatter:
      if (inPlace && rank == 0) return 0;  // nothing is written at an in-place root
      return type->countWrongValues(recv, shape.block, p, 0,
                                    static_cast<std::size_t>(rank) * shape.block);
    case Coll::Alltoall: {
      std::size_t wrong = 0;
      for (int r = 0; r < nranks; ++r) {  // block r came from rank r, its block `rank`
        wrong +=
            type->countWrongValues(at(recv, static_cast<std::size_t>(r) * shape.block, ts),
                                   shape.block, p, r, static_cast<std::size_t>(rank) * shape.block);
      }
      return wrong;
    }
    case Coll::AllgatherV: {
      std::size_t wrong = 0;
      for (int r = 0; r < nranks; ++r) {
        wrong += type->countWrongValues(at(recv, static_cast<std::size_t>(r) * shape.block, ts),
                                        shape.block, p, r, 0);
      }
      return wrong;
    }
  }
  return 0;
}

}  // namespace bench
