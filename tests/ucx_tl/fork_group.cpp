#include "fork_group.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

namespace hccl::test {

namespace {

using Clock = std::chrono::steady_clock;

// Frames on a child's socket: one type byte, a 32-bit length, the payload.
enum class Frame : char {
  Gather = 'G',   // child -> parent: its part of the next all-gather
  Report = 'R',   // child -> parent: a line to collect
  Failure = 'F',  // child -> parent: what the body threw
  Done = 'D',     // child -> parent: the body returned
  Result = 'A',   // parent -> child: the all-gather's result
  Abort = 'X',    // parent -> child: the all-gather cannot complete
};

// send(MSG_NOSIGNAL), not write: a child killed while the parent relays to it must fail the
// write, not raise SIGPIPE in the parent (the test runner).
bool writeAll(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool sendFrame(int fd, Frame type, std::span<const std::byte> payload) {
  const char t = static_cast<char>(type);
  const auto n = static_cast<std::uint32_t>(payload.size());
  return writeAll(fd, &t, 1) && writeAll(fd, &n, sizeof n) &&
         writeAll(fd, payload.data(), payload.size());
}

bool sendText(int fd, Frame type, const std::string& text) {
  return sendFrame(fd, type, std::as_bytes(std::span(text.data(), text.size())));
}

std::optional<std::pair<Frame, std::vector<std::byte>>> readFrame(int fd) {
  char t = 0;
  std::uint32_t n = 0;
  if (!readAll(fd, &t, 1) || !readAll(fd, &n, sizeof n)) return std::nullopt;
  std::vector<std::byte> payload(n);
  if (!readAll(fd, payload.data(), n)) return std::nullopt;
  return std::make_pair(static_cast<Frame>(t), std::move(payload));
}

std::string text(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The parent's view of one child.
struct Member {
  pid_t pid = -1;
  int fd = -1;
  bool open = false;
  bool reaped = false;
  std::size_t gathersSent = 0;  // all-gather contributions received from this child
  ChildResult result;
};

// One all-gather round: every rank's contribution, in rank order.
struct Round {
  std::vector<std::optional<std::vector<std::byte>>> parts;
  bool aborted = false;
  bool delivered = false;
};

class Relay {
 public:
  explicit Relay(std::vector<Member>& members) : members_(members) {}

  void onGather(std::size_t rank, std::vector<std::byte> part) {
    Member& m = members_[rank];
    Round& round = roundAt(m.gathersSent++);
    round.parts[rank] = std::move(part);
    settle();
  }
  // A child left: rounds it never joined can no longer complete.
  void settle() {
    for (std::size_t k = 0; k < rounds_.size(); ++k) {
      Round& round = rounds_[k];
      if (round.delivered) continue;
      bool complete = true;
      bool impossible = false;
      for (std::size_t r = 0; r < members_.size(); ++r) {
        if (round.parts[r]) continue;
        complete = false;
        if (!members_[r].open) impossible = true;
      }
      if (complete) {
        std::vector<std::byte> all;
        for (auto& p : round.parts) all.insert(all.end(), p->begin(), p->end());
        for (std::size_t r = 0; r < members_.size(); ++r) {
          if (members_[r].open) sendFrame(members_[r].fd, Frame::Result, all);
        }
        round.delivered = true;
      } else if (impossible) {
        // Tell whoever is waiting in this round, now and later.
        round.aborted = true;
        for (std::size_t r = 0; r < members_.size(); ++r) {
          if (members_[r].open && round.parts[r] && !abortedFor_[r].contains(k)) {
            sendText(members_[r].fd, Frame::Abort, "a rank left the group before the all-gather");
            abortedFor_[r].insert(k);
          }
        }
      }
    }
  }

 private:
  Round& roundAt(std::size_t k) {
    while (rounds_.size() <= k) {
      rounds_.emplace_back();
      rounds_.back().parts.resize(members_.size());
    }
    if (abortedFor_.empty()) abortedFor_.resize(members_.size());
    return rounds_[k];
  }

  std::vector<Member>& members_;
  std::vector<Round> rounds_;
  std::vector<std::set<std::size_t>> abortedFor_;
};

[[noreturn]] void runChild(int rank, int size, int fd, std::chrono::milliseconds deadline,
                           const std::function<void(Child&)>& body) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // A last resort should the parent's deadline handling itself fail.
  ::alarm(static_cast<unsigned>(deadline.count() / 1000 + 5));
  Child child(rank, size, fd);
  int code = 0;
  try {
    body(child);
    sendText(fd, Frame::Done, "");
  } catch (const std::exception& e) {
    sendText(fd, Frame::Failure, e.what());
    code = 1;
  } catch (...) {
    sendText(fd, Frame::Failure, "unknown exception");
    code = 1;
  }
  ::close(fd);
  // Skip the parent's atexit handlers and static destructors (GoogleTest's among them).
  ::_exit(code);
}

void reap(Member& m, bool block) {
  if (m.reaped) return;
  int status = 0;
  const pid_t r = ::waitpid(m.pid, &status, block ? 0 : WNOHANG);
  if (r != m.pid) return;
  m.reaped = true;
  if (WIFEXITED(status)) m.result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) m.result.signal = WTERMSIG(status);
}

}  // namespace

tl::AllGather Child::allGather() {
  return [this](std::span<const std::byte> mine, std::span<std::byte> all) {
    if (!sendFrame(fd_, Frame::Gather, mine)) throw std::runtime_error("lost the parent");
    const auto frame = readFrame(fd_);
    if (!frame) throw std::runtime_error("lost the parent during an all-gather");
    if (frame->first == Frame::Abort) throw std::runtime_error(text(frame->second));
    if (frame->first != Frame::Result || frame->second.size() != all.size()) {
      throw std::runtime_error(fmt::format("all-gather returned {} bytes, expected {}",
                                           frame->second.size(), all.size()));
    }
    std::memcpy(all.data(), frame->second.data(), all.size());
  };
}

void Child::barrier() {
  std::byte token{0};
  std::vector<std::byte> all(static_cast<std::size_t>(size_));
  allGather()(std::span(&token, 1), all);
}

void Child::report(const std::string& line) {
  sendText(fd_, Frame::Report, line);
}

void Child::die() {
  ::raise(SIGKILL);
  ::_exit(99);  // not reached
}

bool GroupResult::ok() const {
  if (timedOut) return false;
  for (const auto& r : ranks) {
    if (!r.finished || r.exitCode != 0 || !r.failure.empty()) return false;
  }
  return true;
}

std::string GroupResult::summary() const {
  std::string out = fmt::format("group of {} ran {:.2f} s{}\n", ranks.size(), seconds,
                                timedOut ? " and was killed at its deadline" : "");
  for (const auto& r : ranks) {
    out += fmt::format("  rank {}: {}{}{}\n", r.rank, r.finished ? "finished" : "did not finish",
                       r.signal != 0 ? fmt::format(", killed by signal {}", r.signal)
                                     : fmt::format(", exit code {}", r.exitCode),
                       r.failure.empty() ? "" : ", failed: " + r.failure);
  }
  return out;
}

std::vector<std::string> GroupResult::allReports() const {
  std::vector<std::string> out;
  for (const auto& r : ranks) {
    for (const auto& line : r.reports) out.push_back(fmt::format("[rank {}] {}", r.rank, line));
  }
  return out;
}

GroupResult runGroup(int size, std::chrono::milliseconds deadline,
                     const std::function<void(Child&)>& body) {
  const auto start = Clock::now();
  const auto n = static_cast<std::size_t>(size);
  std::vector<Member> members(n);
  std::vector<int> childEnds(n, -1);
  for (std::size_t r = 0; r < n; ++r) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::runtime_error(fmt::format("socketpair: {}", std::strerror(errno)));
    }
    members[r].fd = fds[0];
    members[r].open = true;
    members[r].result.rank = static_cast<int>(r);
    childEnds[r] = fds[1];
  }
  std::cout.flush();
  std::cerr.flush();
  for (std::size_t r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      for (std::size_t q = 0; q < n; ++q) {
        ::close(members[q].fd);
        if (q != r) ::close(childEnds[q]);
      }
      runChild(static_cast<int>(r), size, childEnds[r], deadline, body);
    }
    members[r].pid = pid;
  }
  for (int fd : childEnds) ::close(fd);

  GroupResult result;
  Relay relay(members);
  const auto end = start + deadline;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> who;
    for (std::size_t r = 0; r < n; ++r) {
      if (members[r].open) {
        fds.push_back({members[r].fd, POLLIN, 0});
        who.push_back(r);
      }
    }
    if (fds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) {
      result.timedOut = true;
      break;
    }
    // Reap as children go: a dead but unreaped child still looks alive to UCX's keepalive,
    // which checks the peer's process.
    for (auto& m : members) reap(m, false);
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(left.count(), 20)));
    if (ready < 0 && errno == EINTR) continue;
    for (std::size_t i = 0; i < fds.size() && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      Member& m = members[who[i]];
      auto frame = readFrame(m.fd);
      if (!frame) {
        ::close(m.fd);
        m.open = false;
        relay.settle();
        continue;
      }
      switch (frame->first) {
        case Frame::Gather:
          relay.onGather(who[i], std::move(frame->second));
          break;
        case Frame::Report:
          m.result.reports.push_back(text(frame->second));
          break;
        case Frame::Failure:
          m.result.failure = text(frame->second);
          break;
        case Frame::Done:
          m.result.finished = true;
          break;
        default:
          m.result.failure = "protocol error";
          break;
      }
    }
  }

  // Children close their socket just before exiting; give them a moment, then kill the rest.
  const auto reapBy = result.timedOut ? Clock::now() : Clock::now() + std::chrono::seconds(5);
  for (;;) {
    bool all = true;
    for (auto& m : members) {
      reap(m, false);
      all = all && m.reaped;
    }
    if (all || Clock::now() >= reapBy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& m : members) {
    if (!m.reaped) ::kill(m.pid, SIGKILL);
    reap(m, true);
    if (m.open) ::close(m.fd);
    result.ranks.push_back(m.result);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& line : result.allReports()) std::cout << line << '\n';
  std::cout.flush();
  return result;
}

void childFail(const char* file, int line, const std::string& what) {
  throw ChildFailure(fmt::format("{}:{}: {}", file, line, what));
}

void waitAll(tl::Transport& t, std::span<tl::Completion* const> records,
             std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  for (;;) {
    bool pending = false;
    for (const tl::Completion* c : records) pending = pending || c->pending();
    if (!pending) return;
    if (Clock::now() >= end) break;
    t.progress();
  }
  std::size_t still = 0;
  for (const tl::Completion* c : records) still += c->pending() ? 1u : 0u;
  throw ChildFailure(fmt::format("{} of {} transfers still pending after {} ms", still,
                                 records.size(), limit.count()));
}

void waitAll(tl::Transport& t, std::vector<tl::Completion>& records,
             std::chrono::milliseconds limit) {
  std::vector<tl::Completion*> ptrs;
  for (auto& c : records) ptrs.push_back(&c);
  waitAll(t, ptrs, limit);
}

}  // namespace hccl::test
