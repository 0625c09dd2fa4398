// UcxTransport's state, shared by its set-up code (ucx_transport.cpp) and its transfer engine
// (ucx_transfers.cpp). Internal to ucx_tl.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ucx_tl/ucx_liveness.hpp"
#include "ucx_tl/ucx_transport.hpp"
#include "ucx_tl/ucx_worker.hpp"

namespace hccl::tl {

using Clock = std::chrono::steady_clock;

namespace ucx {

struct TransportState;

// The way to one peer: through exactly one class's worker.
struct Link {
  TransportState* state = nullptr;
  int peer = 0;
  LinkClass cls = LinkClass::Self;
  ClassWorker* worker = nullptr;
  std::vector<std::byte> remoteAddress;
  ucp_ep_h ep = nullptr;
  std::string failure;               // once set, the link is unusable and this says why
  Fault failureFault = Fault::None;  // what kind of failure `failure` is
  Clock::time_point lastProgress;    // last completion on this link (or its creation)
  std::string ucxText;               // ucp_ep_print_info's report
  std::vector<std::string> lanes;    // "tl/dev" per lane
  bool broken = false;               // queued for closing after an endpoint error
  ProcessId process;                 // the peer's process (checked for same-server peers)
  std::size_t inFlight = 0;          // posted transfers not yet finished
  // The side channel's own endpoint (ucx_side.cpp), made on the first side message; once it
  // failed, side messages to this peer are refused.
  ucp_ep_h sideEp = nullptr;
  bool sideBroken = false;
};

// One posted transfer, from post until its Completion is set.
struct Op {
  TransportState* state = nullptr;
  Completion* done = nullptr;  // null once abandoned by the destructor
  Link* link = nullptr;
  Tag tag;
  bool isSend = false;
  std::size_t bytes = 0;
  std::vector<ucp_dt_iov_t> iov;  // UCX reads it until completion
  void* request = nullptr;
  Clock::time_point posted;
  bool fired = false;  // UCX called back; waiting to be delivered
  ucs_status_t status = UCS_OK;
  ucp_tag_recv_info_t info{};
  std::string failReason;  // why we made UCX give it up, if we did
  Fault failFault = Fault::None;
  Clock::time_point givenUp{};  // when we asked UCX to give it up (epoch: not yet)
  std::size_t slot = 0;         // index in TransportState::pending while posted
};

struct TransportState {
  int rank = 0;
  int size = 0;
  UcxOptions options;
  std::vector<LinkClass> classes;
  std::unique_ptr<ClassWorker> hccs;
  std::unique_ptr<ClassWorker> roce;
  std::vector<Link> links;  // by peer; never resized after set-up (ops point into it)
  // Posted transfers (Op::slot = index). Ops are pooled: a small collective posts a few transfers
  // per step, and a malloc, a hash node and a clock read per transfer showed up in its latency.
  std::vector<Op*> pending;
  std::vector<std::unique_ptr<Op>> ops;  // owns every Op made
  std::vector<Op*> freeOps;
  // The clock, read once per burst and every few progress calls rather than per transfer: it only
  // serves the coarse timeout and liveness checks.
  Clock::time_point coarseNow;
  unsigned ticks = 0;
  std::vector<Op*> fired;                               // called back by UCX, not yet delivered
  std::vector<Link*> brokenLinks;                       // endpoint errors not yet handled
  std::vector<std::pair<ClassWorker*, void*>> closing;  // ucp_ep_close_nbx requests
  Clock::time_point nextTimeoutScan;
  Clock::time_point nextLivenessCheck;

  std::vector<ClassWorker*> workers() const;
  Link& endpoint(int peer);  // creates the endpoint on first use
  void breakLink(Link& link, Fault fault, const std::string& reason);
  std::string describe(const Op& op) const;
  void finish(Op& op);  // sets the record, frees the request, forgets the op
  Op* acquireOp();
  Op* findPending(const Completion* done) const;
  int deliverFired();
  void handleBrokenLinks();
  void reapClosing();
  void scanTimeouts(Clock::time_point now);
  // Fails the records of transfers UCX has not released kReleaseBound after being asked to, and
  // leaves their requests to UCX (orphans): see ucx_transfers.cpp.
  void releaseHeld(Clock::time_point now);
  std::size_t orphans() const;
  // Receives whole messages left in the workers' unexpected queues into `scratch` (which must
  // outlive the workers) and returns how many UCX could not hand over within a bound.
  std::size_t drainUnexpected(std::vector<std::vector<std::byte>>& scratch);
  // Progresses the workers until `requests` complete or `bound` passes, frees them all (UCX
  // releases the unfinished ones when they end) and returns how many were unfinished.
  std::size_t settleRequests(std::vector<void*>& requests, Clock::duration bound);
  void checkLiveness();
  void post(int peer, std::span<const IoVec> iov, Tag tag, Completion* done, bool isSend);
  void cancel(Completion* done);
  void shutdown();

  // The side channel (transport.hpp; ucx_side.cpp).
  struct SideMessage {
    std::vector<std::byte> bytes;
    void* request = nullptr;  // null once UCX is done with it
    int peer = 0;
  };
  std::vector<std::unique_ptr<SideMessage>> sideSends;  // not yet sent
  std::vector<std::unique_ptr<SideMessage>> sideRecvs;  // being received
  std::vector<Link*> sideBrokenLinks;                   // side endpoint errors not yet handled
  Transport::SideHandler sideHandler;
  // Side messages are probed for on every progress call until then (a reply may be due), else
  // every 64th.
  Clock::time_point sideActiveUntil{};
  bool sideSend(int peer, std::span<const std::byte> message);
  // Reaps sent messages, receives the side messages that arrived and hands them to the handler.
  void pollSide();
  // Closes the side endpoints (force) and lets go of every side request; the close requests
  // are appended to `flushing`. The messages' buffers stay until the workers are destroyed.
  void shutdownSide(std::vector<void*>& flushing);
};

}  // namespace ucx

struct UcxTransport::Impl : ucx::TransportState {};

}  // namespace hccl::tl
