#include "coll_hccl/tools/calibrate_group.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

namespace hccl::calib {
namespace {

using Clock = std::chrono::steady_clock;

int remainingMs(Clock::time_point end) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
  return static_cast<int>(std::clamp<long>(left.count(), 0, 1000));
}

bool writeAll(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// A member's report to the parent: 'O' (rank 0's output) or 'E' (failure), length, text.
void sendReport(int fd, char kind, const std::string& text) {
  const auto n = static_cast<std::uint32_t>(text.size());
  if (writeAll(fd, &kind, 1) && writeAll(fd, &n, sizeof n)) writeAll(fd, text.data(), text.size());
}

[[noreturn]] void runMember(int rank, std::vector<int> peers, int reportFd,
                            std::chrono::milliseconds deadline,
                            const std::function<std::string(MeshMember&)>& body) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(static_cast<unsigned>(deadline.count() / 1000 + 5));  // should the parent fail to
  int code = 0;
  try {
    MeshMember member(rank, std::move(peers), deadline);
    std::string out = body(member);
    sendReport(reportFd, 'O', rank == 0 ? out : std::string());
  } catch (const std::exception& e) {
    sendReport(reportFd, 'E', fmt::format("rank {}: {}", rank, e.what()));
    code = 1;
  } catch (...) {
    sendReport(reportFd, 'E', fmt::format("rank {}: unknown exception", rank));
    code = 1;
  }
  ::close(reportFd);
  ::_exit(code);  // no atexit handlers or static destructors of the parent's copy
}

struct Member {
  pid_t pid = -1;
  int fd = -1;  // report channel, parent's end
  std::string buffer;
  bool closed = false;
  bool reaped = false;
  int status = 0;
};

// Parses what a member sent: kind, text; false while incomplete.
bool parseReport(const std::string& b, char& kind, std::string& text) {
  if (b.size() < 5) return false;
  std::uint32_t n = 0;
  std::memcpy(&n, b.data() + 1, sizeof n);
  if (b.size() < 5 + std::size_t{n}) return false;
  kind = b[0];
  text = b.substr(5, n);
  return true;
}

std::string exitText(int status) {
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

MeshMember::MeshMember(int rank, std::vector<int> peerFds, std::chrono::milliseconds limit)
    : rank_(rank), fds_(std::move(peerFds)), limit_(limit) {}

void MeshMember::allGather(std::span<const std::byte> mine, std::span<std::byte> all) {
  const std::size_t n = mine.size();
  const auto p = fds_.size();
  if (all.size() != n * p)
    throw std::invalid_argument(
        fmt::format("all-gather of {} bytes from {} members into {} bytes", n, p, all.size()));
  std::memcpy(all.data() + static_cast<std::size_t>(rank_) * n, mine.data(), n);
  // Each message is its length (8 bytes) then the bytes, so a size mismatch shows.
  std::vector<std::byte> out(8 + n);
  const std::uint64_t len = n;
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, mine.data(), n);
  std::vector<std::size_t> sent(p, 0), got(p, 0);
  std::vector<std::vector<std::byte>> in(p, std::vector<std::byte>(8 + n));
  const auto end = Clock::now() + limit_;
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<std::size_t> who;
    for (std::size_t q = 0; q < p; ++q) {
      if (static_cast<int>(q) == rank_) continue;
      const short ev = static_cast<short>((sent[q] < out.size() ? POLLOUT : 0) |
                                          (got[q] < in[q].size() ? POLLIN : 0));
      if (ev == 0) continue;
      pfds.push_back({fds_[q], ev, 0});
      who.push_back(q);
    }
    if (pfds.empty()) break;
    if (Clock::now() >= end)
      throw std::runtime_error(
          fmt::format("all-gather: no answer from every member within {} ms", limit_.count()));
    const int ready = ::poll(pfds.data(), pfds.size(), remainingMs(end));
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("all-gather: poll: {}", std::strerror(errno)));
    for (std::size_t i = 0; i < pfds.size() && ready > 0; ++i) {
      const std::size_t q = who[i];
      if (pfds[i].revents & POLLOUT) {
        const ssize_t w = ::send(fds_[q], out.data() + sent[q], out.size() - sent[q],
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
          throw std::runtime_error(fmt::format("all-gather: rank {} left the group", q));
        if (w > 0) sent[q] += static_cast<std::size_t>(w);
      }
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t r =
            ::recv(fds_[q], in[q].data() + got[q], in[q].size() - got[q], MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
          throw std::runtime_error(fmt::format("all-gather: rank {} left the group", q));
        if (r > 0) got[q] += static_cast<std::size_t>(r);
      }
    }
  }
  for (std::size_t q = 0; q < p; ++q) {
    if (static_cast<int>(q) == rank_) continue;
    std::uint64_t theirs = 0;
    std::memcpy(&theirs, in[q].data(), 8);
    if (theirs != n)
      throw std::runtime_error(
          fmt::format("all-gather: rank {} contributed {} bytes, this rank {}", q, theirs, n));
    std::memcpy(all.data() + q * n, in[q].data() + 8, n);
  }
}

tl::AllGather MeshMember::allGatherFn() {
  return
      [this](std::span<const std::byte> mine, std::span<std::byte> all) { allGather(mine, all); };
}

void MeshMember::barrier() {
  maxOf(0);
}

std::uint64_t MeshMember::maxOf(std::uint64_t v) {
  std::vector<std::uint64_t> all(fds_.size());
  allGather(std::as_bytes(std::span(&v, 1)), std::as_writable_bytes(std::span(all)));
  return *std::ranges::max_element(all);
}

ForkedRun runForked(int size, std::chrono::milliseconds deadline,
                    const std::function<std::string(MeshMember&)>& body) {
  ForkedRun run;
  const auto n = static_cast<std::size_t>(size);
  // mesh[a][b]: a's socket to b.
  std::vector<std::vector<int>> mesh(n, std::vector<int>(n, -1));
  std::vector<Member> members(n);
  std::vector<int> reportEnds(n, -1);
  auto closeAll = [&] {
    for (auto& row : mesh)
      for (int& fd : row)
        if (fd >= 0) ::close(std::exchange(fd, -1));
    for (int& fd : reportEnds)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  };
  for (std::size_t a = 0; a < n; ++a) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      run.error = fmt::format("socketpair: {}", std::strerror(errno));
      closeAll();
      return run;
    }
    members[a].fd = fds[0];
    reportEnds[a] = fds[1];
    for (std::size_t b = a + 1; b < n; ++b) {
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        run.error = fmt::format("socketpair: {}", std::strerror(errno));
        closeAll();
        return run;
      }
      mesh[a][b] = fds[0];
      mesh[b][a] = fds[1];
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  for (std::size_t r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      run.error = fmt::format("fork: {}", std::strerror(errno));
      break;
    }
    if (pid == 0) {
      for (std::size_t a = 0; a < n; ++a) {
        ::close(members[a].fd);
        if (a != r) ::close(reportEnds[a]);
        for (std::size_t b = 0; b < n; ++b)
          if (a != r && mesh[a][b] >= 0) ::close(mesh[a][b]);
      }
      runMember(static_cast<int>(r), mesh[r], reportEnds[r], deadline, body);
    }
    members[r].pid = pid;
  }
  closeAll();

  const auto end = Clock::now() + deadline;
  std::string firstError;
  bool output = false;
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<std::size_t> who;
    for (std::size_t r = 0; r < n; ++r)
      if (!members[r].closed && members[r].fd >= 0) {
        pfds.push_back({members[r].fd, POLLIN, 0});
        who.push_back(r);
      }
    if (pfds.empty()) break;
    if (Clock::now() >= end) {
      if (firstError.empty())
        firstError = fmt::format("the measurement did not finish within {} s",
                                 std::chrono::duration<double>(deadline).count());
      break;
    }
    if (::poll(pfds.data(), pfds.size(), remainingMs(end)) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      Member& m = members[who[i]];
      char chunk[4096];
      const ssize_t r = ::read(m.fd, chunk, sizeof chunk);
      if (r > 0) {
        m.buffer.append(chunk, static_cast<std::size_t>(r));
        continue;
      }
      m.closed = true;
      char kind = 0;
      std::string text;
      if (!parseReport(m.buffer, kind, text)) {
        int status = 0;
        if (::waitpid(m.pid, &status, 0) == m.pid) {
          m.reaped = true;
          m.status = status;
        }
        if (firstError.empty())
          firstError = fmt::format("rank {} {} without reporting", who[i], exitText(m.status));
      } else if (kind == 'E') {
        if (firstError.empty()) firstError = text;
      } else if (who[i] == 0) {
        run.output = text;
        output = true;
      }
    }
    // One failure ends the measurement: the others would only wait for the failed member.
    if (!firstError.empty()) break;
  }

  for (auto& m : members) {
    if (m.pid > 0 && !m.reaped) {
      // Give members that reported a moment to exit, then end the rest.
      for (int i = 0; i < 250 && !m.reaped; ++i) {
        if (::waitpid(m.pid, &m.status, WNOHANG) == m.pid) m.reaped = true;
        if (!m.reaped) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!firstError.empty()) break;
      }
      if (!m.reaped) {
        ::kill(m.pid, SIGKILL);
        ::waitpid(m.pid, &m.status, 0);
        m.reaped = true;
      }
    }
    if (m.fd >= 0) ::close(m.fd);
  }
  run.ok = firstError.empty() && output;
  run.error = firstError.empty() && !output ? "rank 0 returned no result" : firstError;
  return run;
}

ThreadSync::ThreadSync(int size) : barrier_(size, Publish{this}) {}

void ThreadSync::barrier() {
  barrier_.arrive_and_wait();
}

std::uint64_t ThreadSync::maxOf(std::uint64_t v) {
  {
    std::lock_guard lk(mu_);
    max_ = std::max(max_, v);
  }
  barrier_.arrive_and_wait();
  // Stable until every member arrives at the next phase, which each does only after reading.
  return result_;
}

}  // namespace hccl::calib
