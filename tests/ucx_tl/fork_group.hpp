// Runs a group of ranks as forked processes on this machine, with an all-gather relayed by the
// parent over one socketpair per child: enough to bootstrap a UcxTransport without MPI.
//
// The body runs in each child and reports through its Child handle; failures are exceptions
// (CHILD_CHECK), never GoogleTest assertions, which would only reach the child's copy of
// GoogleTest. The parent always kills what is left at the deadline and reaps every child, whatever
// happens.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ucx_tl/transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {

class Child {
 public:
  Child(int rank, int size, int fd) : rank_(rank), size_(size), fd_(fd) {}
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Equal-size all-gather through the parent; throws if a rank left the group first.
  tl::AllGather allGather();
  void barrier();
  // A line the parent collects (and prints) for this rank.
  void report(const std::string& line);
  // Ends this process at once, as a crash would.
  [[noreturn]] void die();

 private:
  int rank_;
  int size_;
  int fd_;
};

struct ChildResult {
  int rank = 0;
  bool finished = false;  // the body returned
  int exitCode = -1;      // when it exited normally
  int signal = 0;         // when a signal ended it
  std::string failure;    // what the body threw
  std::vector<std::string> reports;
};

struct GroupResult {
  std::vector<ChildResult> ranks;
  bool timedOut = false;
  double seconds = 0;

  // Every rank finished its body and exited with 0.
  bool ok() const;
  std::string summary() const;
  // Every report line of every rank, prefixed with the rank.
  std::vector<std::string> allReports() const;
};

GroupResult runGroup(int size, std::chrono::milliseconds deadline,
                     const std::function<void(Child&)>& body);

class ChildFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void childFail(const char* file, int line, const std::string& what);

#define CHILD_CHECK(cond, msg)                                                                 \
  do {                                                                                         \
    if (!(cond)) ::hccl::test::childFail(__FILE__, __LINE__, std::string(#cond ": ") + (msg)); \
  } while (false)

// Progresses until none of `records` is pending; throws naming the pending ones after `limit`.
void waitAll(tl::Transport& t, std::span<tl::Completion* const> records,
             std::chrono::milliseconds limit);
void waitAll(tl::Transport& t, std::vector<tl::Completion>& records,
             std::chrono::milliseconds limit);

}  // namespace hccl::test
