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

}  // namespace hccl::tl::shm
