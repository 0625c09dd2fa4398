// Posting, completing, timing out and cancelling transfers.
//
// UCX calls back from inside ucp_worker_progress, ucp_request_cancel and ucp_ep_close_nbx, which
// only run inside this transport's own calls. Callbacks just record the outcome; records are set
// afterwards (finish), so no container changes under a loop that is walking it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "ucx_tl/ucx_impl.hpp"
#include "ucx_tl/ucx_tag.hpp"

namespace hccl::tl::ucx {

namespace {

// UCX 1.13 cannot withdraw a receive whose message it has begun to assemble (a multi-fragment
// eager or rendezvous message from a peer that then stopped): neither ucp_request_cancel nor
// force-closing the endpoint releases it, so waiting for its callback would hang the call for as
// long as the peer is stopped. After this long the record fails anyway and the request is left to
// UCX (an orphan, freed when UCX lets go or at shutdown). Its buffer could still be written if the
// stopped peer resumed and UCX accepted the rest of the message for the closed endpoint; the
// engine treats the communicator as broken from then on.
constexpr auto kReleaseBound = std::chrono::milliseconds(500);

std::string heldNote() {
  return fmt::format(
      " (UCX still held the transfer {} ms after being asked to give it up: a message it had "
      "begun to receive cannot be withdrawn)",
      std::chrono::duration_cast<std::chrono::milliseconds>(kReleaseBound).count());
}

void onSendDone(void* /*request*/, ucs_status_t status, void* user) {
  auto* op = static_cast<Op*>(user);
  op->status = status;
  op->fired = true;
  op->state->fired.push_back(op);
}

void onRecvDone(void* /*request*/, ucs_status_t status, const ucp_tag_recv_info_t* info,
                void* user) {
  auto* op = static_cast<Op*>(user);
  op->status = status;
  if (info != nullptr) op->info = *info;
  op->fired = true;
  op->state->fired.push_back(op);
}

void onEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* link = static_cast<Link*>(arg);
  if (link->failure.empty()) {
    link->failure = fmt::format(
        "the endpoint to the peer failed ({}): the peer exited or is "
        "unreachable",
        ucs_status_string(status));
    link->failureFault = Fault::PeerLost;
  }
  if (!link->broken) {
    link->broken = true;
    link->state->brokenLinks.push_back(link);
  }
}

// Something valid to point at for zero-byte transfers.
std::byte zeroByteTarget;

}  // namespace

std::vector<ClassWorker*> TransportState::workers() const {
  std::vector<ClassWorker*> out;
  if (hccs) out.push_back(hccs.get());
  if (roce) out.push_back(roce.get());
  return out;
}

Link& TransportState::endpoint(int peer) {
  Link& link = links[static_cast<std::size_t>(peer)];
  if (link.ep != nullptr || !link.failure.empty()) return link;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(link.remoteAddress.data());
  if (peer == rank) {
    // The loopback transport has no peer-failure support, and there is no peer to lose.
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  } else {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = onEndpointError;
    params.err_handler.arg = &link;
  }
  const ucs_status_t status = ucp_ep_create(link.worker->worker(), &params, &link.ep);
  if (status != UCS_OK) {
    link.ep = nullptr;
    link.failureFault = Fault::Transport;
    link.failure =
        fmt::format("cannot reach rank {} over the {} class (transport list '{}', opened {}): {}",
                    peer, className(link.cls), link.worker->tls(),
                    fmt::join(link.worker->resources(), ", "), ucs_status_string(status));
    return link;
  }
  link.ucxText = capture([&link](FILE* f) { ucp_ep_print_info(link.ep, f); });
  link.lanes = parseLanes(link.ucxText);
  link.lastProgress = Clock::now();
  return link;
}

std::string TransportState::describe(const Op& op) const {
  const Link& link = *op.link;
  return fmt::format(
      "{} rank {} over the {} class{}, tag comm={} seq={} msg={} ({} bytes)",
      op.isSend ? "send to" : "receive from", link.peer, className(link.cls),
      link.lanes.empty() ? std::string() : fmt::format(" ({})", fmt::join(link.lanes, " ")),
      op.tag.comm, op.tag.seq, op.tag.msg, op.bytes);
}

void TransportState::finish(Op& op) {
  if (op.done != nullptr) {
    Completion& done = *op.done;
    if (op.status == UCS_OK && !op.isSend && op.info.length != op.bytes) {
      done.state = Completion::State::Failed;
      done.fault = Fault::Mismatch;
      done.error = fmt::format("{}: the matching send had {} bytes", describe(op), op.info.length);
    } else if (op.status == UCS_OK) {
      done.state = Completion::State::Done;
      done.bytes = op.bytes;
    } else {
      std::string cause = op.failReason;
      Fault fault = op.failFault;
      if (cause.empty() && op.status == UCS_ERR_MESSAGE_TRUNCATED) {
        cause = "the matching send is longer than the receive";
        fault = Fault::Mismatch;
      }
      if (cause.empty()) {
        cause = op.link->failure;
        fault = op.link->failureFault;
      }
      if (cause.empty()) cause = ucs_status_string(op.status);
      done.state = Completion::State::Failed;
      done.fault = fault == Fault::None ? Fault::Transport : fault;
      done.error = fmt::format("{}: {}", describe(op), cause);
    }
  }
  if (op.status == UCS_OK) op.link->lastProgress = coarseNow;
  --op.link->inFlight;
  if (op.request != nullptr) ucp_request_free(op.request);
  // Back to the pool; nothing may touch op afterwards.
  pending[op.slot] = pending.back();
  pending[op.slot]->slot = op.slot;
  pending.pop_back();
  freeOps.push_back(&op);
}

Op* TransportState::acquireOp() {
  if (freeOps.empty()) {
    ops.push_back(std::make_unique<Op>());
    return ops.back().get();
  }
  Op* op = freeOps.back();
  freeOps.pop_back();
  std::vector<ucp_dt_iov_t> iov = std::move(op->iov);  // keep its capacity
  iov.clear();
  *op = Op{};
  op->iov = std::move(iov);
  return op;
}

Op* TransportState::findPending(const Completion* done) const {
  for (Op* op : pending)
    if (op->done == done) return op;
  return nullptr;
}

int TransportState::deliverFired() {
  int delivered = 0;
  while (!fired.empty()) {
    std::vector<Op*> batch;
    batch.swap(fired);
    for (Op* op : batch) {
      const bool counted = op->done != nullptr;
      finish(*op);
      if (counted) ++delivered;
    }
  }
  return delivered;
}

void TransportState::breakLink(Link& link, Fault fault, const std::string& reason) {
  if (link.failure.empty()) {
    link.failure = reason;
    link.failureFault = fault;
  }
  for (Op* op : pending) {
    if (op->link == &link && !op->fired && op->failReason.empty()) {
      op->failReason = link.failure;
      op->failFault = link.failureFault;
    }
  }
  if (link.ep != nullptr) {
    // Forcing the close fails every request on the endpoint through its callback, so UCX lets go
    // of their buffers.
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(link.ep, &params);
    link.ep = nullptr;
    if (UCS_PTR_IS_PTR(request)) closing.emplace_back(link.worker, request);
  }
  // Receives are posted on the worker, not the endpoint: withdraw the ones from this peer.
  for (Op* op : pending) {
    if (op->link == &link && !op->isSend && !op->fired && op->request != nullptr) {
      ucp_request_cancel(link.worker->worker(), op->request);
    }
  }
}

void TransportState::handleBrokenLinks() {
  while (!brokenLinks.empty()) {
    std::vector<Link*> batch;
    batch.swap(brokenLinks);
    for (Link* link : batch) breakLink(*link, link->failureFault, link->failure);
  }
}

void TransportState::reapClosing() {
  std::erase_if(closing, [](const std::pair<ClassWorker*, void*>& c) {
    if (ucp_request_check_status(c.second) == UCS_INPROGRESS) return false;
    ucp_request_free(c.second);
    return true;
  });
}

void TransportState::scanTimeouts(Clock::time_point now) {
  const auto timeout = options.timeout;
  std::vector<Op*> expired;
  for (Op* op : pending) {
    if (op->fired || op->done == nullptr) continue;
    if (now - std::max(op->posted, op->link->lastProgress) > timeout) expired.push_back(op);
  }
  // Each expired transfer reports its own timeout, even if closing a link fails it first.
  for (Op* op : expired) {
    if (op->givenUp == Clock::time_point{}) op->givenUp = now;
    op->failFault = Fault::Timeout;
    op->failReason = fmt::format("no progress on this link for {} ms (the transport's timeout)",
                                 timeout.count());
  }
  // Finished ops are only destroyed by deliverFired, which runs after this loop.
  for (Op* op : expired) {
    if (op->fired) continue;
    if (!op->isSend) ucp_request_cancel(op->link->worker->worker(), op->request);
    if (!op->fired) {
      // A send, or a receive whose data is already moving: only closing the endpoint makes UCX
      // give it up.
      breakLink(*op->link, Fault::Timeout,
                fmt::format("the link was closed after a transfer on it reached the timeout ({})",
                            describe(*op)));
    }
  }
}

void TransportState::releaseHeld(Clock::time_point now) {
  for (Op* op : pending) {
    if (op->fired || op->done == nullptr || op->givenUp == Clock::time_point{}) continue;
    if (now - op->givenUp < kReleaseBound) continue;
    Completion& done = *op->done;
    done.state = Completion::State::Failed;
    done.fault = op->failFault == Fault::None ? Fault::Transport : op->failFault;
    done.error =
        fmt::format("{}: {}{}", describe(*op),
                    op->failReason.empty() ? op->link->failure : op->failReason, heldNote());
    op->done = nullptr;  // an orphan: UCX's callback will only free it
  }
}

std::size_t TransportState::orphans() const {
  return static_cast<std::size_t>(
      std::count_if(pending.begin(), pending.end(), [](const Op* op) { return !op->done; }));
}

void TransportState::checkLiveness() {
  for (Link& link : links) {
    // A start time of 0 means /proc could not be read: no opinion then.
    if (link.cls != LinkClass::Hccs || link.inFlight == 0 || !link.failure.empty() ||
        link.process.startTime == 0) {
      continue;
    }
    if (!isRunning(link.process)) {
      breakLink(
          link, Fault::PeerLost,
          fmt::format("the peer's process (pid {}) on this server has exited", link.process.pid));
    }
  }
}

void TransportState::post(int peer, std::span<const IoVec> iov, Tag tag, Completion* done,
                          bool isSend) {
  if (done == nullptr) throw std::invalid_argument("UcxTransport: null Completion record");
  if (findPending(done) != nullptr) {
    throw std::logic_error("UcxTransport: a Completion record was posted again while pending");
  }
  done->state = Completion::State::Pending;
  done->bytes = 0;
  done->error.clear();
  done->fault = Fault::None;
  if (peer < 0 || peer >= size) {
    done->state = Completion::State::Failed;
    done->fault = Fault::Transport;
    done->error = fmt::format("{} rank {}: no such rank (the group has ranks 0..{})",
                              isSend ? "send to" : "receive from", peer, size - 1);
    return;
  }

  if (pending.empty()) coarseNow = Clock::now();  // a burst starts: the clock may be stale
  Op& op = *acquireOp();
  op.state = this;
  op.done = done;
  op.link = &endpoint(peer);
  op.tag = tag;
  op.isSend = isSend;
  op.posted = coarseNow;
  for (const IoVec& v : iov) {
    op.bytes += v.length;
    if (v.length > 0) op.iov.push_back({v.base, v.length});
  }
  op.slot = pending.size();
  pending.push_back(&op);
  ++op.link->inFlight;

  if (!op.link->failure.empty()) {
    op.status = UCS_ERR_CANCELED;
    op.failReason = op.link->failure;
    op.failFault = op.link->failureFault;
    finish(op);
    return;
  }

  ucp_request_param_t params{};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  params.user_data = &op;
  void* buffer = &zeroByteTarget;
  std::size_t count = 0;
  if (op.iov.size() == 1) {
    params.datatype = ucp_dt_make_contig(1);
    buffer = op.iov[0].buffer;
    count = op.iov[0].length;
  } else if (op.iov.size() > 1) {
    params.datatype = ucp_dt_make_iov();
    buffer = op.iov.data();
    count = op.iov.size();
  } else {
    params.datatype = ucp_dt_make_contig(1);
  }

  ucs_status_ptr_t request = nullptr;
  if (isSend) {
    params.cb.send = onSendDone;
    request = ucp_tag_send_nbx(op.link->ep, buffer, count,
                               packTag(static_cast<std::uint32_t>(rank), tag), &params);
  } else {
    // UCX 1.13 leaves recv_info unset when a receive completes in place (fixed in 1.14), and the
    // length received is needed to catch a shorter send: always complete through the callback.
    params.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    params.cb.recv = onRecvDone;
    request = ucp_tag_recv_nbx(op.link->worker->worker(), buffer, count,
                               packTag(static_cast<std::uint32_t>(peer), tag), kFullMask, &params);
  }
  if (UCS_PTR_IS_ERR(request)) {
    op.status = UCS_PTR_STATUS(request);
    finish(op);
  } else if (request == nullptr) {
    op.status = UCS_OK;  // completed in place; UCX will not call back
    finish(op);
  } else {
    op.request = request;
    if (op.fired) {
      // Called back inside the post (a receive that found its message already there).
      std::erase(fired, &op);
      finish(op);
    }
  }
}

void TransportState::cancel(Completion* done) {
  Op* op = findPending(done);
  if (op == nullptr) return;
  if (!op->fired) {
    if (op->failReason.empty()) {
      op->failReason = "cancelled by the caller";
      op->failFault = Fault::Cancelled;
    }
    if (!op->isSend) ucp_request_cancel(op->link->worker->worker(), op->request);
    if (!op->fired) {
      breakLink(*op->link, Fault::Cancelled,
                fmt::format("the link was closed to cancel a transfer on it ({})", describe(*op)));
    }
    // Forcing the endpoint closed fails its requests at once; progress covers any straggler.
    const auto start = Clock::now();
    if (op->givenUp == Clock::time_point{}) op->givenUp = start;
    const auto deadline = std::max(op->givenUp + kReleaseBound, start);
    while (!op->fired && Clock::now() < deadline) op->link->worker->progress();
    if (!op->fired) {
      Completion& record = *op->done;
      record.state = Completion::State::Failed;
      record.fault = Fault::Cancelled;
      record.error = fmt::format("{}: cancelled by the caller{}", describe(*op), heldNote());
      op->done = nullptr;  // an orphan (see kReleaseBound)
      return;
    }
  }
  // Deliver this record only; other completions wait for progress(). The caller gave up on it,
  // so it fails even if UCX finished it in the meantime.
  std::erase(fired, op);
  if (op->status == UCS_OK) {
    op->status = UCS_ERR_CANCELED;
    op->failReason = "cancelled by the caller";
    op->failFault = Fault::Cancelled;
  }
  finish(*op);
}

}  // namespace hccl::tl::ucx
