// The UCX transport's side channel (transport.hpp): small messages on endpoints of their own,
// tagged with the reserved comm value kSideComm (ucx_tag.hpp), found by probing every worker with
// kSideMask during progress(), so no receive is ever posted for them and no transfer can match
// one. A side endpoint's error only marks the side link broken; transfers never use it.
#include <utility>

#include "ucx_tl/ucx_impl.hpp"
#include "ucx_tl/ucx_tag.hpp"

namespace hccl::tl::ucx {
namespace {

// How many side messages one progress round takes in from each worker.
constexpr int kProbesPerRound = 64;

std::byte emptyMessage;

void onSideError(void* arg, ucp_ep_h /*ep*/, ucs_status_t /*status*/) {
  auto* link = static_cast<Link*>(arg);
  if (link->sideBroken) return;
  link->sideBroken = true;
  link->state->sideBrokenLinks.push_back(link);
}

ucp_request_param_t contiguous() {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  params.datatype = ucp_dt_make_contig(1);
  return params;
}

// True once UCX is done with the message's request (freed); `ok` says whether it succeeded.
bool settle(TransportState::SideMessage& m, bool& ok) {
  ok = true;
  if (m.request == nullptr) return true;
  const ucs_status_t status = ucp_request_check_status(m.request);
  if (status == UCS_INPROGRESS) return false;
  ok = status == UCS_OK;
  ucp_request_free(m.request);
  m.request = nullptr;
  return true;
}

}  // namespace

bool TransportState::sideSend(int peer, std::span<const std::byte> message) {
  if (peer < 0 || peer >= size || message.size() > Transport::kSideMaxBytes ||
      sideSends.size() >= Transport::kSideBacklog)
    return false;
  Link& link = links[static_cast<std::size_t>(peer)];
  if (link.sideBroken || link.remoteAddress.empty() || link.worker == nullptr) return false;
  if (link.sideEp == nullptr) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(link.remoteAddress.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // loopback: no peer to lose
    if (peer != rank) {
      params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      params.err_handler.cb = onSideError;
      params.err_handler.arg = &link;
    }
    if (ucp_ep_create(link.worker->worker(), &params, &link.sideEp) != UCS_OK) {
      link.sideEp = nullptr;
      link.sideBroken = true;
      return false;
    }
  }
  auto m = std::make_unique<SideMessage>();
  m->peer = peer;
  m->bytes.assign(message.begin(), message.end());
  ucp_request_param_t params = contiguous();
  void* data = m->bytes.empty() ? &emptyMessage : m->bytes.data();
  const ucs_status_ptr_t request = ucp_tag_send_nbx(
      link.sideEp, data, m->bytes.size(), sideTag(static_cast<std::uint32_t>(rank)), &params);
  if (UCS_PTR_IS_ERR(request)) return false;
  sideActiveUntil = Clock::now() + std::chrono::seconds(1);
  if (request == nullptr) return true;  // gone already (UCX copied it)
  m->request = request;
  sideSends.push_back(std::move(m));
  return true;
}

void TransportState::pollSide() {
  bool ok = false;
  std::erase_if(sideSends, [&ok](const std::unique_ptr<SideMessage>& m) { return settle(*m, ok); });
  while (!sideBrokenLinks.empty()) {
    std::vector<Link*> batch;
    batch.swap(sideBrokenLinks);
    for (Link* link : batch) {
      if (link->sideEp == nullptr) continue;
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      params.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* request = ucp_ep_close_nbx(link->sideEp, &params);
      link->sideEp = nullptr;
      if (UCS_PTR_IS_PTR(request)) closing.emplace_back(link->worker, request);
    }
  }
  for (ClassWorker* w : workers()) {
    for (int i = 0; i < kProbesPerRound; ++i) {
      ucp_tag_recv_info_t info{};
      ucp_tag_message_h msg = ucp_tag_probe_nb(w->worker(), sideTag(0), kSideMask, 1, &info);
      if (msg == nullptr) break;
      auto m = std::make_unique<SideMessage>();
      m->peer = static_cast<int>(unpackTag(info.sender_tag).src);
      m->bytes.resize(info.length);
      ucp_request_param_t params = contiguous();
      void* data = m->bytes.empty() ? &emptyMessage : m->bytes.data();
      const ucs_status_ptr_t request =
          ucp_tag_msg_recv_nbx(w->worker(), data, m->bytes.size(), msg, &params);
      if (UCS_PTR_IS_ERR(request)) continue;  // lost, as side messages may be
      m->request = request;
      sideRecvs.push_back(std::move(m));
    }
  }
  if (sideRecvs.empty()) return;
  // Hand over what arrived in arrival order; the handler may send (never progress).
  std::vector<std::unique_ptr<SideMessage>> ready;
  for (auto it = sideRecvs.begin(); it != sideRecvs.end();) {
    if (!settle(**it, ok)) {
      ++it;
      continue;
    }
    if (ok) ready.push_back(std::move(*it));
    it = sideRecvs.erase(it);
  }
  for (const auto& m : ready)
    if (sideHandler && m->peer < size) sideHandler(m->peer, m->bytes);
}

void TransportState::shutdownSide(std::vector<void*>& flushing) {
  for (Link& link : links) {
    if (link.sideEp == nullptr) continue;
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(link.sideEp, &params);
    link.sideEp = nullptr;
    link.sideBroken = true;
    if (UCS_PTR_IS_PTR(request)) flushing.push_back(request);
  }
  // Requests still in progress are released by UCX when they end or with their worker; their
  // buffers stay until the workers are gone (the caller clears both lists then).
  for (auto& m : sideRecvs)
    if (m->request != nullptr) ucp_request_free(std::exchange(m->request, nullptr));
  for (auto& m : sideSends)
    if (m->request != nullptr) ucp_request_free(std::exchange(m->request, nullptr));
  sideHandler = nullptr;
}

}  // namespace hccl::tl::ucx
