// Set-up, teardown and reports of the UCX transport; transfers live in ucx_transfers.cpp.
#include "ucx_tl/ucx_transport.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include <ucs/config/global_opts.h>
#include <ucs/debug/log_def.h>

#include "ucx_tl/ucx_bootstrap.hpp"
#include "ucx_tl/ucx_impl.hpp"
#include "ucx_tl/ucx_tag.hpp"

namespace hccl::tl {

std::vector<LinkClass> linkClasses(int rank, std::span<const int> serverOf, bool intraRoce) {
  std::vector<LinkClass> classes(serverOf.size(), LinkClass::Roce);
  const int mine = serverOf[static_cast<std::size_t>(rank)];
  for (std::size_t q = 0; q < serverOf.size(); ++q) {
    if (static_cast<int>(q) == rank) {
      classes[q] = LinkClass::Self;
    } else if (serverOf[q] == mine && !intraRoce) {
      classes[q] = LinkClass::Hccs;
    }
  }
  return classes;
}

namespace {

void validateGroup(int rank, const std::vector<int>& serverOf, const AllGather& allGather) {
  if (serverOf.empty() || serverOf.size() > ucx::kMaxRanks) {
    throw UcxError(fmt::format("UcxTransport: group size {} is out of range (1..{})",
                               serverOf.size(), ucx::kMaxRanks));
  }
  if (rank < 0 || static_cast<std::size_t>(rank) >= serverOf.size()) {
    throw UcxError(
        fmt::format("UcxTransport: rank {} is out of range (0..{})", rank, serverOf.size() - 1));
  }
  if (!allGather) throw UcxError("UcxTransport: no all-gather callback to bootstrap with");
}

void validateOptions(const UcxOptions& o) {
  if (o.timeout.count() < 0) {
    throw UcxError(
        fmt::format("UcxTransport: timeout {} ms is negative (0 disables it)", o.timeout.count()));
  }
  if (o.keepalive.count() < 0) {
    throw UcxError(
        fmt::format("UcxTransport: keepalive {} ms is negative (0 keeps UCX's own interval)",
                    o.keepalive.count()));
  }
}

}  // namespace

UcxTransport::UcxTransport(int rank, std::vector<int> serverOf, const AllGather& allGather,
                           UcxOptions options)
    : impl_(std::make_unique<Impl>()) {
  validateGroup(rank, serverOf, allGather);
  auto& s = *impl_;
  s.rank = rank;
  s.size = static_cast<int>(serverOf.size());
  s.options = std::move(options);
  s.classes = linkClasses(rank, serverOf, s.options.intraRoce);

  const bool hasHccsPeers = std::ranges::count(s.classes, LinkClass::Hccs) > 0;
  const bool hasRocePeers = std::ranges::count(s.classes, LinkClass::Roce) > 0;
  ucx::WorkerHints hints;
  hints.groupSize = serverOf.size();
  hints.ranksPerServer = static_cast<std::size_t>(
      std::ranges::count(serverOf, serverOf[static_cast<std::size_t>(rank)]));
  hints.keepalive = s.options.keepalive;
  hints.oversubscribed = s.options.oversubscribed;

  ucx::RankRecord mine;
  mine.process = ucx::thisProcess();
  try {
    validateOptions(s.options);
    // Also carries the rank's traffic to itself, so it exists even without same-server peers.
    hints.carriesPeers = hasHccsPeers;
    s.hccs = std::make_unique<ucx::ClassWorker>(LinkClass::Hccs, s.options.hccs, hints);
    const auto a = s.hccs->address();
    mine.hccs.assign(a.begin(), a.end());
    if (hasRocePeers) {
      hints.carriesPeers = true;
      s.roce = std::make_unique<ucx::ClassWorker>(LinkClass::Roce, s.options.roce, hints);
      const auto r = s.roce->address();
      mine.roce.assign(r.begin(), r.end());
    }
  } catch (const UcxError& e) {
    // Still take part in the exchange, so the other ranks fail with this reason instead of
    // waiting for this rank.
    mine.hccs.clear();
    mine.roce.clear();
    mine.error = e.what();
  }

  const auto records = ucx::exchangeRecords(
      allGather, rank, s.size, ucx::layoutFingerprint(serverOf, s.options.intraRoce), mine);

  s.links.resize(serverOf.size());
  for (std::size_t q = 0; q < s.links.size(); ++q) {
    ucx::Link& link = s.links[q];
    link.state = &s;
    link.peer = static_cast<int>(q);
    link.cls = s.classes[q];
    const bool roce = link.cls == LinkClass::Roce;
    link.worker = roce ? s.roce.get() : s.hccs.get();
    link.remoteAddress = roce ? records[q].roce : records[q].hccs;
    link.process = records[q].process;
    if (link.remoteAddress.empty()) {
      link.failure = fmt::format("rank {} published no {}-class address", q, className(link.cls));
      link.failureFault = Fault::Transport;
    }
  }
  s.coarseNow = Clock::now();
  s.nextTimeoutScan = s.coarseNow;
  s.nextLivenessCheck = s.coarseNow;
  if (s.options.eagerEndpoints) connectAll();
}

UcxTransport::~UcxTransport() {
  impl_->shutdown();
}

int UcxTransport::rank() const {
  return impl_->rank;
}
int UcxTransport::size() const {
  return impl_->size;
}

LinkClass UcxTransport::linkClass(int peer) const {
  if (peer < 0 || peer >= impl_->size) {
    throw std::out_of_range(
        fmt::format("UcxTransport: no rank {} (the group has ranks 0..{})", peer, impl_->size - 1));
  }
  return impl_->classes[static_cast<std::size_t>(peer)];
}

void UcxTransport::send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  impl_->post(peer, iov, tag, done, true);
}

void UcxTransport::recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) {
  impl_->post(peer, iov, tag, done, false);
}

int UcxTransport::progress() {
  auto& s = *impl_;
  for (ucx::ClassWorker* w : s.workers()) w->progress();
  int delivered = s.deliverFired();
  s.handleBrokenLinks();
  if (!s.closing.empty()) s.reapClosing();
  // The checks below are coarse (a second, a fraction of the timeout): read the clock only every
  // 64 calls, which keeps it off a small collective's critical path.
  if ((++s.ticks & 63) != 0) {
    if (s.coarseNow < s.sideActiveUntil) s.pollSide();
    return delivered + s.deliverFired();
  }
  const auto now = Clock::now();
  s.coarseNow = now;
  if (now >= s.nextLivenessCheck) {
    s.checkLiveness();
    s.nextLivenessCheck =
        now + (s.options.keepalive.count() > 0 ? Clock::duration(s.options.keepalive)
                                               : std::chrono::seconds(1));
  }
  s.pollSide();
  if (s.options.timeout.count() > 0 && now >= s.nextTimeoutScan) {
    s.scanTimeouts(now);
    s.releaseHeld(now);
    s.nextTimeoutScan =
        now + std::min<Clock::duration>(s.options.timeout / 8, std::chrono::milliseconds(100));
  }
  return delivered + s.deliverFired();
}

void UcxTransport::cancel(Completion* done) {
  impl_->cancel(done);
}

bool UcxTransport::sideSend(int peer, std::span<const std::byte> message) {
  return impl_->sideSend(peer, message);
}

void UcxTransport::setSideHandler(SideHandler handler) {
  impl_->sideHandler = std::move(handler);
}

std::size_t UcxTransport::heldOrphans() const {
  return impl_->orphans();
}

std::size_t UcxTransport::sidePending() const {
  return impl_->sideSends.size();
}

void UcxTransport::connect(int peer) {
  if (peer < 0 || peer >= impl_->size) {
    throw std::out_of_range(
        fmt::format("UcxTransport: no rank {} (the group has ranks 0..{})", peer, impl_->size - 1));
  }
  impl_->endpoint(peer);
}

void UcxTransport::connectAll() {
  for (int q = 0; q < impl_->size; ++q) impl_->endpoint(q);
}

LinkReport UcxTransport::linkReport(int peer) {
  connect(peer);
  const ucx::Link& link = impl_->links[static_cast<std::size_t>(peer)];
  LinkReport r;
  r.peer = peer;
  r.linkClass = link.cls;
  r.tls = link.worker != nullptr ? link.worker->tls() : std::string();
  r.transports = link.lanes;
  r.ucxText = link.ucxText;
  r.error = link.failure;
  return r;
}

std::string UcxTransport::describe() const {
  std::string out;
  for (const ucx::ClassWorker* w : impl_->workers()) {
    out += fmt::format("{} class: transport list '{}' opened {}{}\n", className(w->linkClass()),
                       w->tls(), fmt::join(w->resources(), ", "),
                       w->tuning().empty() ? "" : "; " + w->tuning());
  }
  return out;
}

const UcxOptions& UcxTransport::options() const {
  return impl_->options;
}

namespace ucx {

std::size_t TransportState::drainUnexpected(std::vector<std::vector<std::byte>>& scratch) {
  std::vector<void*> receiving;
  for (ClassWorker* w : workers()) {
    for (;;) {
      ucp_tag_recv_info_t info{};
      ucp_tag_message_h msg = ucp_tag_probe_nb(w->worker(), 0, 0, 1, &info);
      if (msg == nullptr) break;
      std::vector<std::byte>& buffer = scratch.emplace_back(std::max<std::size_t>(info.length, 1));
      ucp_request_param_t params{};
      void* request = ucp_tag_msg_recv_nbx(w->worker(), buffer.data(), info.length, msg, &params);
      if (UCS_PTR_IS_PTR(request)) receiving.push_back(request);
    }
  }
  return settleRequests(receiving, std::chrono::milliseconds(200));
}

std::size_t TransportState::settleRequests(std::vector<void*>& requests, Clock::duration bound) {
  const auto deadline = Clock::now() + bound;
  while (!requests.empty() && Clock::now() < deadline) {
    for (ClassWorker* w : workers()) w->progress();
    std::erase_if(requests, [](void* request) {
      if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
      ucp_request_free(request);
      return true;
    });
  }
  for (void* request : requests) ucp_request_free(request);
  const std::size_t left = requests.size();
  requests.clear();
  return left;
}

void TransportState::shutdown() {
  // Abandoned records are never touched again; receives nobody will match are withdrawn.
  for (Op* op : pending) {
    op->done = nullptr;
    if (!op->fired && !op->isSend && op->request != nullptr) {
      ucp_request_cancel(op->link->worker->worker(), op->request);
    }
  }
  deliverFired();
  // Flush each endpoint for a bounded time so the peers' last transfers (acknowledgements of
  // rendezvous sends, for instance) still complete. A link with abandoned transfers would only
  // hold its flush up: force it closed.
  std::vector<void*> flushing;
  shutdownSide(flushing);
  for (Link& link : links) {
    if (link.ep == nullptr) continue;
    ucp_request_param_t params{};
    if (link.inFlight > 0) {
      params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      params.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    void* request = ucp_ep_close_nbx(link.ep, &params);
    link.ep = nullptr;
    if (UCS_PTR_IS_PTR(request)) flushing.push_back(request);
  }
  // Still flushing after 2 s (a silent peer): destroying the workers below discards these.
  settleRequests(flushing, std::chrono::seconds(2));
  deliverFired();
  for (auto& [worker, request] : closing) ucp_request_free(request);
  closing.clear();
  // What failed peers left behind. Whole messages waiting in UCX's unexpected queue are received
  // into scratch and dropped, so their descriptors go back before the workers do. What UCX
  // cannot hand back (a receive it had begun to assemble when its sender died or stopped: UCX
  // 1.13 can neither finish nor withdraw it) is counted. Always, not only when a link failed: a
  // peer that stopped (SIGSTOP, a debugger) leaves no link failure, only timed-out calls, and
  // its messages in the queue. These workers are this transport's alone, so nothing drained
  // here belonged to another communicator; with an empty queue it is one probe per worker.
  std::vector<std::vector<std::byte>> scratch;  // alive until the workers are gone
  std::size_t held = drainUnexpected(scratch);
  for (Op* op : pending) {
    if (op->request == nullptr) continue;
    if (ucp_request_check_status(op->request) == UCS_INPROGRESS) ++held;
    ucp_request_free(op->request);
  }
  pending.clear();
  freeOps.clear();
  ops.clear();
  fired.clear();
  // UCX reports every object of a held transfer as "not returned to mpool" when its worker goes
  // (some forty lines per rank for one 1 MiB message): one line says it instead, and only then
  // are UCX's warnings left out of the destruction.
  const ucs_log_level_t level = ucs_global_opts.log_component.log_level;
  if (held > 0) {
    ucs_warn(
        "%zu transfer(s) with failed peers still held by UCX at shutdown (a message UCX had "
        "begun to receive cannot be withdrawn); UCX's per-object warnings for them are not shown",
        held);
    if (level > UCS_LOG_LEVEL_ERROR) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_ERROR;
  }
  hccs.reset();
  roce.reset();
  ucs_global_opts.log_component.log_level = level;
  sideSends.clear();
  sideRecvs.clear();
}

}  // namespace ucx

}  // namespace hccl::tl
