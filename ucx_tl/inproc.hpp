// The in-process transport: N ranks of one process (threads) exchanging through memory, behind
// the same contract as the UCX transport (transport.hpp). For unit tests only.
//
// Deliberately strict, so schedules that only work by luck fail here:
//  - rendezvous: a send completes only once a matching receive is posted and the bytes are copied,
//    so a schedule that would deadlock without eager buffering deadlocks (and times out) here;
//  - matching by (source, destination, tag) in posting order; iov to iov copies with any
//    fragmentation on either side, but equal total lengths (otherwise both sides fail, the error
//    naming both ranks and both lengths);
//  - completions reach a rank's records only inside that rank's own send/recv/progress/cancel
//    calls, as with UCX.
// Test hooks: a timeout for transfers that stay unmatched, dead ranks, abort, link classes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ucx_tl/transport.hpp"

namespace hccl::tl {

struct InProcOptions {
  // A transfer still unmatched after this long fails with "no progress for N ms"; 0 waits forever.
  std::chrono::milliseconds timeout{0};
};

class InProcTransport;

class InProcFabric {
 public:
  explicit InProcFabric(int size, InProcOptions options = {});
  ~InProcFabric();
  InProcFabric(const InProcFabric&) = delete;
  InProcFabric& operator=(const InProcFabric&) = delete;

  int size() const { return size_; }
  const InProcOptions& options() const { return options_; }
  // Rank r's endpoint, owned by the fabric. One thread at a time drives an endpoint.
  InProcTransport& endpoint(int rank);

  // Link class between a and b (both directions). Default: Self on the diagonal, Hccs elsewhere.
  // Set before the ranks start.
  void setLinkClass(int a, int b, LinkClass c);
  LinkClass linkClass(int a, int b) const;

  // Fault injection (thread-safe, any time): every transfer to or from a dead rank fails with an
  // error naming it; pending ones fail at their owner's next progress().
  void markDead(int rank);
  bool dead(int rank) const;
  // Every pending and future transfer fails with `reason` (used to stop all ranks after one fails).
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(); }

  // Bytes copied from send to receive buffers so far.
  std::uint64_t bytesMoved() const { return bytesMoved_.load(); }

 private:
  friend class InProcTransport;

  struct Op {
    int owner = 0;
    int peer = 0;
    Tag tag;
    std::vector<IoVec> iov;
    std::size_t bytes = 0;
    Completion* done = nullptr;
    std::chrono::steady_clock::time_point posted;
  };
  // Transfers from `src` to `dst` waiting for their counterpart. At any time at most one of the
  // two queues holds transfers of a given tag.
  struct Channel {
    std::mutex mu;
    std::deque<Op> sends;
    std::deque<Op> recvs;
  };
  struct Event {
    Completion* done = nullptr;
    Completion::State state = Completion::State::Done;
    std::size_t bytes = 0;
    std::string error;
    Fault fault = Fault::None;
  };
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Event> events;
  };

  Channel& channel(int src, int dst) {
    return channels_[static_cast<std::size_t>(src * size_ + dst)];
  }
  Inbox& inbox(int rank) { return inboxes_[static_cast<std::size_t>(rank)]; }
  void deliver(int rank, Event ev);
  void wakeAll();
  std::string abortReason() const;

  int size_;
  InProcOptions options_;
  std::unique_ptr<Channel[]> channels_;
  std::unique_ptr<Inbox[]> inboxes_;
  std::vector<std::unique_ptr<InProcTransport>> endpoints_;
  std::vector<LinkClass> links_;
  std::unique_ptr<std::atomic<bool>[]> dead_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abortMu_;
  std::string abortReason_;
  std::atomic<std::uint64_t> generation_{0};  // bumped by markDead/abort: owners rescan
  std::atomic<std::uint64_t> bytesMoved_{0};
};

class InProcTransport final : public Transport {
 public:
  InProcTransport(InProcFabric& fabric, int rank);

  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  LinkClass linkClass(int peer) const override;

  void send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  void recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  int progress() override;
  void cancel(Completion* done) override;

  // Blocks until a completion is waiting for this rank, a fault was injected, a timeout check is
  // due, or `max` passes. Lets idle rank threads sleep instead of spinning; never needed for
  // correctness.
  void wait(std::chrono::milliseconds max);

 private:
  enum class Dir : std::uint8_t { Send, Recv };
  void post(Dir dir, int peer, std::span<const IoVec> iov, Tag tag, Completion* done);
  int failStale();
  std::string describe(Dir dir, int peer, Tag tag, std::size_t bytes) const;
  bool scanDue(std::chrono::steady_clock::time_point now) const;

  InProcFabric& fabric_;
  int rank_;
  std::vector<InProcFabric::Event> drained_;  // reused by progress()
  std::uint64_t seenGeneration_ = 0;
  std::chrono::steady_clock::time_point nextScan_{};
};

}  // namespace hccl::tl
