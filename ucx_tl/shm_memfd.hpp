// The server's segment as an anonymous memory file (memfd_create): it never has a name in any
// file system, so nothing can be left behind in /dev/shm and no other job can open it by name.
// Peers open it through /proc/<pid>/fd/<fd> of the rank that made it, which the kernel allows
// only to processes that may ptrace that rank (the path UCX's posix "proc link" uses too).
// Internal to ucx_tl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hccl::tl::shm {

struct MemfdSegment {
  int fd = -1;
  void* base = nullptr;
  std::size_t bytes = 0;
};

// A zeroed shared mapping of `bytes`, mode 0600. Throws UcxError.
MemfdSegment createMemfd(std::size_t bytes);
// Maps the segment `fd` of process `pid`: its address here, or nullptr with *error set.
void* attachMemfd(std::int64_t pid, int fd, std::size_t bytes, std::string* error);
void closeFd(MemfdSegment& s);
void unmap(void* base, std::size_t bytes);

}  // namespace hccl::tl::shm
