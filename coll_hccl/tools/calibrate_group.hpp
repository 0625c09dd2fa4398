// The process groups hccl_calibrate measures with, and what its probes need of them besides a
// transport: a barrier and an agreement on a number.
//
// Forked group: `size` processes of this machine, every pair joined by a socketpair made before
// the fork, so the all-gather that bootstraps a UcxTransport needs neither MPI nor a relay. The
// parent takes no part: it waits for the members with a deadline, kills what is left at the
// deadline, and gets back the text rank 0's body returned or the first failure. A UCX set-up
// that fails or hangs therefore never takes the calling process down with it.
//
// Thread group: the same interface for the in-process fallback, one thread per rank.
#pragma once

#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ucx_tl/ucx_transport.hpp"

namespace hccl::calib {

class Sync {
 public:
  virtual ~Sync() = default;
  virtual void barrier() = 0;
  // Every member passes a value and gets the largest.
  virtual std::uint64_t maxOf(std::uint64_t v) = 0;
};

// A forked member's end of the group.
class MeshMember final : public Sync {
 public:
  // peerFds[q]: the socket to rank q (-1 at this rank's own index).
  MeshMember(int rank, std::vector<int> peerFds, std::chrono::milliseconds limit);
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(fds_.size()); }
  // Equal-size all-gather; throws naming the rank that left or the limit that passed.
  void allGather(std::span<const std::byte> mine, std::span<std::byte> all);
  tl::AllGather allGatherFn();
  void barrier() override;
  std::uint64_t maxOf(std::uint64_t v) override;

 private:
  int rank_;
  std::vector<int> fds_;
  std::chrono::milliseconds limit_;
};

struct ForkedRun {
  bool ok = false;
  std::string output;  // what rank 0's body returned
  std::string error;   // why not ok: a member's exception, a crash, or the deadline
};

// Runs body in `size` forked members; never throws.
ForkedRun runForked(int size, std::chrono::milliseconds deadline,
                    const std::function<std::string(MeshMember&)>& body);

// The members of an in-process run: one thread each.
class ThreadSync final : public Sync {
 public:
  explicit ThreadSync(int size);
  void barrier() override;
  std::uint64_t maxOf(std::uint64_t v) override;
  // A member that failed leaves, so the others' barriers do not wait for it.
  void leave() { barrier_.arrive_and_drop(); }

 private:
  // Runs once per phase, when every member has arrived: publishes the round's largest value.
  struct Publish {
    ThreadSync* self;
    void operator()() noexcept {
      self->result_ = self->max_;
      self->max_ = 0;
    }
  };
  std::mutex mu_;
  std::uint64_t max_ = 0;
  std::uint64_t result_ = 0;
  std::barrier<Publish> barrier_;
};

}  // namespace hccl::calib
