#include "common/file_text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hccl::text {
namespace {

std::string_view kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

FileText failure(std::string error) {
  return FileText{std::nullopt, std::move(error)};
}

}  // namespace

std::string byteSize(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} bytes", bytes);
}

FileText readRegularFile(const std::string& path, std::uint64_t maxBytes) {
  if (path.empty()) return failure("the path is empty; expected the name of a regular file");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return failure(fmt::format("cannot be opened: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return failure(fmt::format("cannot be examined: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return failure(fmt::format("is {}; expected a regular file", kindOf(st.st_mode)));
  const std::string limit =
      fmt::format("more than {} (the limit for this file)", byteSize(maxBytes));
  if (static_cast<std::uint64_t>(st.st_size) > maxBytes)
    return failure(fmt::format("is {} bytes, {}", st.st_size, limit));
  // Read to the end rather than st_size bytes: /proc and sysfs files report size 0, and a file
  // may grow while it is read. One byte past the limit tells "too long" from "exactly the limit".
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (used > maxBytes) return failure(fmt::format("holds {}", limit));
      text.resize(std::min<std::uint64_t>(maxBytes + 1, std::max<std::size_t>(4096, 2 * used)));
    }
    const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return failure(fmt::format("cannot be read: {}", std::strerror(errno)));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > maxBytes) return failure(fmt::format("holds {}", limit));
  text.resize(used);
  return FileText{std::move(text), {}};
}

}  // namespace hccl::text
