#include "ucx_tl/shm_cma.hpp"

#include <fmt/format.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

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

}  // namespace hccl::tl::shm
