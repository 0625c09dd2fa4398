#include "ucx_tl/shm_ucx.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl::shm {

namespace {

void modify(ucp_config_t* config, const char* key, const char* value) {
  const ucs_status_t status = ucp_config_modify(config, key, value);
  if (status != UCS_OK) {
    throw UcxError(fmt::format("shared-memory link: UCX setting {}='{}' rejected: {}", key, value,
                               ucs_status_string(status)));
  }
}

void onEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* failure = static_cast<std::string*>(arg);
  if (failure->empty()) {
    *failure = fmt::format("the endpoint to the peer failed ({}): the peer exited",
                           ucs_status_string(status));
  }
}

}  // namespace

ShmUcx::ShmUcx(std::size_t localSize)
    : eps_(localSize, nullptr), epFailure_(localSize), segmentKeys_(localSize, nullptr) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    throw UcxError(fmt::format("shared-memory link: UCX configuration could not be read: {}",
                               ucs_status_string(status)));
  }
  try {
    // posix only: its domain allocates the segment (never sysv: mode 0660, guessable ids) and
    // carries the endpoints; the proc link unlinks the file at once (see shm_link.hpp).
    modify(config, "TLS", "posix");
    modify(config, "ALLOC_PRIO", "md:posix");
    modify(config, "POSIX_USE_PROC_LINK", "y");
    modify(config, "MM_ERROR_HANDLING", "y");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_RMA;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = localSize;
    params.name = "hccl-shm";
    status = ucp_init(&params, config, &context_);
  } catch (...) {
    ucp_config_release(config);
    throw;
  }
  ucp_config_release(config);
  if (status != UCS_OK) {
    context_ = nullptr;
    throw UcxError(fmt::format(
        "shared-memory link: UCX context on the posix transport failed: {} (is UCX's posix "
        "shared-memory transport available? ucx_info -d)",
        ucs_status_string(status)));
  }
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  status = ucp_worker_create(context_, &wparams, &worker_);
  if (status == UCS_OK) status = ucp_worker_get_address(worker_, &address_, &addressLength_);
  if (status != UCS_OK) {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    throw UcxError(
        fmt::format("shared-memory link: UCX worker set-up failed: {}", ucs_status_string(status)));
  }
}

ShmUcx::~ShmUcx() {
  for (ucp_rkey_h& k : segmentKeys_) {
    if (k != nullptr) ucp_rkey_destroy(k);
  }
  std::vector<void*> closing;
  for (ucp_ep_h& ep : eps_) {
    if (ep == nullptr) continue;
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(ep, &params);
    if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
    ep = nullptr;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!closing.empty() && std::chrono::steady_clock::now() < deadline) {
    ucp_worker_progress(worker_);
    std::erase_if(closing, [](void* r) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
      ucp_request_free(r);
      return true;
    });
  }
  for (void* r : closing) ucp_request_free(r);
  if (segment_ != nullptr) ucp_mem_unmap(context_, segment_);
  if (address_ != nullptr) ucp_worker_release_address(worker_, address_);
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

std::span<const std::byte> ShmUcx::address() const {
  return {reinterpret_cast<const std::byte*>(address_), addressLength_};
}

std::string ShmUcx::connect(int peer, std::span<const std::byte> address) {
  const auto p = static_cast<std::size_t>(peer);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = onEndpointError;
  params.err_handler.arg = &epFailure_[p];
  const ucs_status_t status = ucp_ep_create(worker_, &params, &eps_[p]);
  if (status != UCS_OK) {
    eps_[p] = nullptr;
    return fmt::format("no UCX posix endpoint: {}", ucs_status_string(status));
  }
  return {};
}

ShmUcx::Allocation ShmUcx::allocate(std::size_t bytes) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.length = bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  ucs_status_t status = ucp_mem_map(context_, &params, &segment_);
  if (status != UCS_OK) {
    segment_ = nullptr;
    throw UcxError(fmt::format(
        "shared-memory link: UCX could not allocate the {}-byte segment on its posix domain: {} "
        "(is /dev/shm large enough?)",
        bytes, ucs_status_string(status)));
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  status = ucp_mem_query(segment_, &attr);
  void* packed = nullptr;
  std::size_t packedLength = 0;
  if (status == UCS_OK) status = ucp_rkey_pack(context_, segment_, &packed, &packedLength);
  if (status != UCS_OK) {
    throw UcxError(fmt::format("shared-memory link: the segment's rkey could not be packed: {}",
                               ucs_status_string(status)));
  }
  Allocation a;
  a.base = attr.address;
  a.bytes = attr.length;
  const auto* p = static_cast<const std::byte*>(packed);
  a.rkey.assign(p, p + packedLength);
  ucp_rkey_buffer_release(packed);
  return a;
}

void* ShmUcx::map(int peer, std::span<const std::byte> rkey, std::uint64_t remoteBase,
                  std::string* error) {
  const auto p = static_cast<std::size_t>(peer);
  if (eps_[p] == nullptr) {
    *error = "no endpoint to the rank that allocated the segment";
    return nullptr;
  }
  ucs_status_t status = ucp_ep_rkey_unpack(eps_[p], rkey.data(), &segmentKeys_[p]);
  if (status != UCS_OK) {
    segmentKeys_[p] = nullptr;
    *error = fmt::format("its rkey could not be unpacked: {} (has that rank exited?)",
                         ucs_status_string(status));
    return nullptr;
  }
  void* local = nullptr;
  status = ucp_rkey_ptr(segmentKeys_[p], remoteBase, &local);
  if (status != UCS_OK) {
    *error =
        fmt::format("ucp_rkey_ptr refused it: {} (UCX maps it only over a shared-memory domain)",
                    ucs_status_string(status));
    return nullptr;
  }
  return local;
}

ShmUcx::Registration ShmUcx::registerBlock(void* data, std::size_t bytes, std::string* error) {
  Registration r;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = data;
  params.length = bytes == 0 ? 1 : bytes;
  ucs_status_t status = ucp_mem_map(context_, &params, &r.memh);
  void* packed = nullptr;
  std::size_t packedLength = 0;
  if (status == UCS_OK) status = ucp_rkey_pack(context_, r.memh, &packed, &packedLength);
  if (status != UCS_OK) {
    if (r.memh != nullptr) ucp_mem_unmap(context_, r.memh);
    r.memh = nullptr;
    *error = fmt::format("UCX could not register the block: {}", ucs_status_string(status));
    return r;
  }
  const auto* p = static_cast<const std::byte*>(packed);
  r.rkey.assign(p, p + packedLength);
  ucp_rkey_buffer_release(packed);
  return r;
}

void ShmUcx::unregister(Registration& r) {
  if (r.memh != nullptr) ucp_mem_unmap(context_, r.memh);
  r.memh = nullptr;
  r.rkey.clear();
}

std::string ShmUcx::get(int peer, std::span<const std::byte> rkey, std::uint64_t remote, void* dst,
                        std::size_t bytes, const Abort& abort) {
  return rma(peer, rkey, remote, dst, bytes, true, abort);
}

std::string ShmUcx::put(int peer, std::span<const std::byte> rkey, std::uint64_t remote,
                        const void* src, std::size_t bytes, const Abort& abort) {
  return rma(peer, rkey, remote, const_cast<void*>(src), bytes, false, abort);
}

ucs_status_t ShmUcx::wait(int peer, void* request, const Abort& abort, std::string* why) {
  if (!UCS_PTR_IS_PTR(request)) return UCS_PTR_STATUS(request);
  ucs_status_t status;
  std::chrono::steady_clock::time_point givenUp;
  // The emulation moves only while both sides progress UCX.
  for (unsigned spins = 0; (status = ucp_request_check_status(request)) == UCS_INPROGRESS;
       ++spins) {
    ucp_worker_progress(worker_);
    if ((spins & 255) != 255) continue;
    if (!why->empty()) {
      if (std::chrono::steady_clock::now() - givenUp < std::chrono::seconds(10)) continue;
      throw std::runtime_error(fmt::format(
          "shared-memory link: UCX did not release an abandoned transfer within 10 s ({}); its "
          "buffer must stay valid",
          *why));
    }
    *why = abort();
    if (why->empty()) continue;
    // Only closing the endpoint makes UCX give the request (and our buffer) up.
    givenUp = std::chrono::steady_clock::now();
    closeEndpoint(peer);
  }
  ucp_request_free(request);
  return status;
}

void ShmUcx::closeEndpoint(int peer) {
  ucp_ep_h& ep = eps_[static_cast<std::size_t>(peer)];
  if (ep == nullptr) return;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(ep, &params);
  ep = nullptr;
  if (!UCS_PTR_IS_PTR(request)) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (ucp_request_check_status(request) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < deadline) {
    ucp_worker_progress(worker_);
  }
  ucp_request_free(request);
}

std::string ShmUcx::rma(int peer, std::span<const std::byte> rkey, std::uint64_t remote,
                        void* local, std::size_t bytes, bool isGet, const Abort& abort) {
  const auto p = static_cast<std::size_t>(peer);
  if (!epFailure_[p].empty()) return epFailure_[p];
  if (eps_[p] == nullptr) return "the UCX endpoint to the peer was closed after a failure";
  if (bytes == 0) return {};
  ucp_rkey_h key = nullptr;
  ucs_status_t status = ucp_ep_rkey_unpack(eps_[p], rkey.data(), &key);
  if (status != UCS_OK) {
    return fmt::format("the block's rkey could not be unpacked: {}", ucs_status_string(status));
  }
  std::string why;
  ucp_request_param_t params{};
  status = wait(peer,
                isGet ? ucp_get_nbx(eps_[p], local, bytes, remote, key, &params)
                      : ucp_put_nbx(eps_[p], local, bytes, remote, key, &params),
                abort, &why);
  // A put is complete at the target only after a flush.
  if (status == UCS_OK && !isGet)
    status = wait(peer, ucp_ep_flush_nbx(eps_[p], &params), abort, &why);
  ucp_rkey_destroy(key);
  if (status == UCS_OK) return {};
  if (!why.empty()) return why;
  if (!epFailure_[p].empty()) return epFailure_[p];
  return fmt::format("UCX {} failed: {}", isGet ? "get" : "put", ucs_status_string(status));
}

}  // namespace hccl::tl::shm
