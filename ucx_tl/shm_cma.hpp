// Cross-memory attach (process_vm_readv/writev): one copy between this process and a peer's
// memory, the call UCX's cma transport makes. Internal to ucx_tl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hccl::tl::shm {

// Copies `bytes` between local and the peer's address `remote` (toPeer: local -> peer). Returns
// "" or why it failed, naming the pid.
std::string cmaCopy(std::int64_t pid, void* local, std::uint64_t remote, std::size_t bytes,
                    bool toPeer);

// How fast this machine's single copy is against a memcpy, timed as the link is set up: the
// fastest of `reps` CMA reads of `bytes` of this process's own memory (the kernel's path for a
// peer's: it pins every page, then copies) and of `reps` memcpys of the same buffers, in
// nanoseconds; both 0 when the read fails. The fastest, not the mean: a rank the scheduler puts
// aside measures the other tenants, not the copy.
struct CopySpeed {
  std::uint64_t cmaNanos = 0, copyNanos = 0;
};
CopySpeed timeCopies(std::size_t bytes, int reps);

}  // namespace hccl::tl::shm
