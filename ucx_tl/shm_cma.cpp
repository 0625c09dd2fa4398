#include "ucx_tl/shm_cma.hpp"

#include <fmt/format.h>
#include <sys/uio.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace hccl::tl::shm {

std::string cmaCopy(std::int64_t pid, void* local, std::uint64_t remote, std::size_t bytes,
                    bool toPeer) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec mine{static_cast<char*>(local) + done, bytes - done};
    iovec theirs{reinterpret_cast<void*>(remote + done), bytes - done};
    const auto p = static_cast<pid_t>(pid);
    const ssize_t n = toPeer ? ::process_vm_writev(p, &mine, 1, &theirs, 1, 0)
                             : ::process_vm_readv(p, &mine, 1, &theirs, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      switch (e) {
        case ESRCH:
          return fmt::format("the peer's process (pid {}) on this server has exited", pid);
        case EPERM:
          return fmt::format(
              "the kernel refuses cross-memory attach to pid {} (ptrace access: see "
              "/proc/sys/kernel/yama/ptrace_scope)",
              pid);
        case EFAULT:
          return fmt::format(
              "the block is not (or no longer) mapped in the peer's process (pid {}): its "
              "owner freed it before the post was released, or the range is wrong",
              pid);
        default:
          return fmt::format("{} of pid {} failed: {}",
                             toPeer ? "process_vm_writev" : "process_vm_readv", pid,
                             std::strerror(e));
      }
    }
    if (n == 0) return fmt::format("cross-memory attach to pid {} copied nothing", pid);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

CopySpeed timeCopies(std::size_t bytes, int reps) {
  using Clock = std::chrono::steady_clock;
  // Written once, so that first-touch page faults stay out of both timings.
  std::vector<std::byte> from(bytes, std::byte{1}), to(bytes, std::byte{2});
  const auto nanos = [](Clock::time_point t0) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  };
  CopySpeed best{UINT64_MAX, UINT64_MAX};
  for (int k = 0; k < reps; ++k) {  // alternating, so drift hits both alike
    auto t0 = Clock::now();
    if (!cmaCopy(::getpid(), to.data(), reinterpret_cast<std::uint64_t>(from.data()), bytes, false)
             .empty())
      return {};
    best.cmaNanos = std::min(best.cmaNanos, nanos(t0));
    t0 = Clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    // The copy must happen, and before the clock is read.
    asm volatile("" : : "r"(to.data()) : "memory");
    best.copyNanos = std::min(best.copyNanos, std::max<std::uint64_t>(nanos(t0), 1));
  }
  return best;
}

}  // namespace hccl::tl::shm
