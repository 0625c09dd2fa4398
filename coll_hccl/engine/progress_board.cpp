#include "coll_hccl/engine/progress_board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include <fmt/format.h>

namespace hccl::engine {
namespace {

constexpr int kRecords = 4;  // communicators remembered per rank

struct Record {
  std::atomic<std::uint32_t> version;  // odd while being written
  std::uint32_t pad;
  std::uint64_t stamp;  // 0: never written
  CallProgress progress;
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

}  // namespace

struct ProgressBoard::Slot {
  Record records[kRecords];
};

std::unique_ptr<ProgressBoard> ProgressBoard::open(const std::string& name, int worldSize,
                                                   int worldRank, std::string& why) {
  if (worldSize < 1 || worldRank < 0 || worldRank >= worldSize) {
    why = fmt::format("progress board: rank {} of {}", worldRank, worldSize);
    return nullptr;
  }
  const std::size_t bytes = sizeof(Slot) * static_cast<std::size_t>(worldSize);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    why = fmt::format("shm_open {}: {}", name, std::strerror(errno));
    return nullptr;
  }
  // Every rank of the host sets the same size; the first one creates the zero-filled object.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    why = fmt::format("ftruncate {} to {} bytes: {}", name, bytes, std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    why = fmt::format("mmap {}: {}", name, std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<ProgressBoard> b(new ProgressBoard);
  b->name_ = name;
  b->base_ = base;
  b->bytes_ = bytes;
  b->worldSize_ = worldSize;
  b->worldRank_ = worldRank;
  return b;
}

ProgressBoard::~ProgressBoard() {
  if (base_) ::munmap(base_, bytes_);
}

void ProgressBoard::unlink() {
  if (!name_.empty()) ::shm_unlink(name_.c_str());  // ENOENT: another rank was first
}

ProgressBoard::Slot* ProgressBoard::slot(int worldRank) const {
  return static_cast<Slot*>(base_) + worldRank;
}

void ProgressBoard::publish(const CallProgress& p) {
  Slot& s = *slot(worldRank_);
  Record* r = nullptr;
  for (Record& candidate : s.records)
    if (candidate.stamp != 0 && candidate.progress.comm == p.comm) r = &candidate;
  if (!r) {
    r = &s.records[0];
    for (Record& candidate : s.records)
      if (candidate.stamp < r->stamp) r = &candidate;
  }
  const std::uint32_t v = r->version.load(std::memory_order_relaxed);
  r->version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  r->stamp = ++stamp_;
  r->progress = p;
  r->version.store(v + 2, std::memory_order_release);
}

std::optional<CallProgress> ProgressBoard::read(int worldRank, std::uint32_t comm,
                                                bool* torn) const {
  if (torn) *torn = false;
  if (worldRank < 0 || worldRank >= worldSize_) return std::nullopt;
  const Slot& s = *slot(worldRank);
  for (const Record& r : s.records) {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const std::uint32_t v1 = r.version.load(std::memory_order_acquire);
      if (v1 % 2 != 0) continue;  // being written (or its writer stopped inside)
      const std::uint64_t stamp = r.stamp;
      const CallProgress p = r.progress;
      std::atomic_thread_fence(std::memory_order_acquire);
      if (r.version.load(std::memory_order_relaxed) != v1) continue;
      if (stamp != 0 && p.comm == comm) return p;
      break;
    }
    if (torn && r.version.load(std::memory_order_relaxed) % 2 != 0) *torn = true;
  }
  return std::nullopt;
}

}  // namespace hccl::engine
