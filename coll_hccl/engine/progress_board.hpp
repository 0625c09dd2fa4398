// Where each rank says which call it is in and how far it got, in shared memory that every rank
// on the same host can read: the out-of-band path of fault diagnosis.
//
// A stopped or hung rank cannot answer a question, but what it last wrote stays readable. Each
// rank writes only its own slot (one record per communicator it recently ran a call on: the call's
// sequence number, collective, bytes, chunk and step, and the peer of the first transfer it still
// waits for); on a failure, the ranks of the same host read the others' records and the kernel's
// view of their processes (diagnosis.hpp). Nothing is sent: the board adds no message to any
// schedule and costs a few stores per step.
//
// One board per host and job, a POSIX shared-memory object named after MPI_COMM_WORLD rank 0's
// process and the host's name (equal on every rank of the host, distinct between jobs and
// between hosts that share /dev/shm, as the emulated cluster's namespaces do), with a slot for
// every world rank (ranks of other hosts leave theirs untouched: the pages are never written).
// Other hosts learn what a board shows through host_views.hpp. Every rank of the host maps
// it while MPI_COMM_WORLD is created, and the name is removed once every rank has passed a later
// exchange, so that nothing is left in /dev/shm however the job ends.
//
// Records are read with a sequence lock: a reader gets a consistent copy or retries; a writer
// stopped mid-write leaves the record odd, which the reader reports as torn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace hccl::engine {

struct CallProgress {
  enum class State : std::uint8_t { Running = 1, Done = 2, Failed = 3 };
  std::uint32_t comm = 0;  // the communicator's tag
  std::uint32_t seq = 0;   // the call's sequence number on that communicator (from 0)
  std::uint8_t coll = 0;   // hccl::Collective
  State state = State::Running;
  bool waitRecv = false;      // the awaited transfer is a receive (else a send)
  std::int32_t wait = -1;     // communicator rank of the first pending transfer's peer; -1 none
  std::int32_t culprit = -1;  // Failed: the communicator rank its diagnosis named; -1 none
  std::uint64_t bytes = 0;    // the call's size as the verbose line gives it
  std::uint32_t chunk = 0, chunks = 0, step = 0, steps = 0;
};

class ProgressBoard {
 public:
  // Maps (creating it if needed) the board `name` with slots for `worldSize` ranks; this process
  // writes slot `worldRank`. Returns nullptr with `why` set when shared memory is unavailable.
  static std::unique_ptr<ProgressBoard> open(const std::string& name, int worldSize, int worldRank,
                                             std::string& why);
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  // Removes the name (the mapping stays); safe to call on every rank, once all have opened it.
  void unlink();
  const std::string& name() const { return name_; }

  // This rank's record for p.comm (it replaces the oldest record of another communicator).
  void publish(const CallProgress& p);
  // Rank `worldRank`'s latest record for communicator `comm`; nullopt if it has none. `torn` is
  // set when the rank stopped in the middle of writing it.
  std::optional<CallProgress> read(int worldRank, std::uint32_t comm, bool* torn = nullptr) const;

 private:
  ProgressBoard() = default;
  struct Slot;
  Slot* slot(int worldRank) const;

  std::string name_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  int worldSize_ = 0;
  int worldRank_ = 0;
  std::uint64_t stamp_ = 0;  // orders this rank's records by last use
};

}  // namespace hccl::engine
