#include "ucx_tl/ucx_worker.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "ucx_tl/ucx_tag.hpp"

namespace hccl::tl::ucx {

namespace {

void modify(ucp_config_t* config, LinkClass cls, const std::string& key, const std::string& value) {
  const ucs_status_t status = ucp_config_modify(config, key.c_str(), value.c_str());
  if (status != UCS_OK) {
    throw UcxError(fmt::format("{}-class UCX setting {}='{}' rejected: {}", className(cls), key,
                               value, ucs_status_string(status)));
  }
}

std::string keepaliveValue(std::chrono::milliseconds interval) {
  return fmt::format("{}ms", interval.count());
}

}  // namespace

ClassWorker::ClassWorker(LinkClass cls, const UcxClassOptions& options, const WorkerHints& hints)
    : cls_(cls),
      tls_(!options.tls.empty() ? options.tls
           : hints.carriesPeers ? defaultTls(cls)
                                : std::string("self")) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    throw UcxError(fmt::format("{}-class UCX configuration could not be read: {}", className(cls),
                               ucs_status_string(status)));
  }
  try {
    modify(config, cls, "TLS", tls_);
    if (hints.keepalive.count() > 0) {
      modify(config, cls, "KEEPALIVE_INTERVAL", keepaliveValue(hints.keepalive));
    }
    // posix and sysv only offer peer-failure handling when asked to; without it UCX refuses them
    // for endpoints in UCP_ERR_HANDLING_MODE_PEER and the class would have no usable transport.
    // (Only where they may be used: UCX warns about settings no transport takes.)
    if (cls != LinkClass::Roce && hints.carriesPeers) {
      modify(config, cls, "MM_ERROR_HANDLING", "y");
    }
    const auto userSets = [&](const char* key) {
      return std::getenv(fmt::format("UCX_{}", key).c_str()) != nullptr ||
             std::any_of(options.ucxConfig.begin(), options.ucxConfig.end(),
                         [key](const auto& kv) { return kv.first == key; });
    };
    const bool rndvSet = userSets("RNDV_THRESH");
    // Both classes that carry peers: between servers too, a rendezvous's handshake waits for the
    // receiver to be scheduled and answer (ucx_transport.hpp, kOversubscribedEagerLimit).
    if (cls != LinkClass::Self && hints.oversubscribed && !rndvSet) {
      modify(config, cls, "RNDV_THRESH", kOversubscribedEagerLimit);
      tuning_ = fmt::format("eager up to {} (ranks outnumber cores)", kOversubscribedEagerLimit);
    }
    if (cls == LinkClass::Roce && tls_ == "tcp" && !rndvSet) {
      modify(config, cls, "RNDV_THRESH", kTcpEagerLimit);
      tuning_ = "eager at every size (TCP alone between servers)";
    }
    if (cls == LinkClass::Roce && tls_ == "tcp" && !userSets("TCP_SNDBUF") && !userSets("SNDBUF")) {
      // A transport's key without its prefix: UCX passes keys it does not know itself on to the
      // transports' own tables (tcp's field is SNDBUF under TCP_; "TCP_SNDBUF" matches nothing
      // there and is dropped silently).
      modify(config, cls, "SNDBUF", kTcpSendBuffer);
      tuning_ += fmt::format("{}send buffers of {} a connection", tuning_.empty() ? "" : "; ",
                             kTcpSendBuffer);
    }
    for (const auto& [key, value] : options.ucxConfig) modify(config, cls, key, value);

    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_TAG_SENDER_MASK |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_PPN | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_TAG;
    params.tag_sender_mask = kSenderMask;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = hints.groupSize;
    params.estimated_num_ppn = hints.ranksPerServer;
    params.name = cls == LinkClass::Roce ? "hccl-roce" : "hccl-hccs";
    status = ucp_init(&params, config, &context_);
  } catch (...) {
    ucp_config_release(config);
    throw;
  }
  ucp_config_release(config);
  if (status != UCS_OK) {
    context_ = nullptr;
    throw UcxError(fmt::format(
        "{}-class UCX context with transport list '{}' failed: {}; transports available on this "
        "machine: {}",
        className(cls), tls_, ucs_status_string(status), fmt::join(availableTransports(), ", ")));
  }

  try {
    resources_ = parseResources(capture([this](FILE* f) { ucp_context_print_info(context_, f); }));
    checkResources(options, hints);

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(context_, &wparams, &worker_);
    if (status != UCS_OK) {
      worker_ = nullptr;
      throw UcxError(fmt::format("{}-class UCX worker could not be created: {}", className(cls),
                                 ucs_status_string(status)));
    }
    status = ucp_worker_get_address(worker_, &address_, &addressLength_);
    if (status != UCS_OK) {
      address_ = nullptr;
      throw UcxError(fmt::format("{}-class UCX worker address unavailable: {}", className(cls),
                                 ucs_status_string(status)));
    }
  } catch (...) {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    throw;
  }
}

void ClassWorker::checkResources(const UcxClassOptions& options, const WorkerHints& hints) const {
  const TlKind wrong = cls_ == LinkClass::Roce ? TlKind::SharedMemory : TlKind::Network;
  std::vector<std::string> offending;
  bool reachesPeers = false;
  for (const auto& r : resources_) {
    const TlKind kind = kindOf(tlOf(r));
    if (kind == wrong) offending.push_back(r);
    if (kind != TlKind::Local) reachesPeers = true;
  }
  const std::string origin = options.tls.empty() ? "default" : "configured";
  if (!offending.empty()) {
    if (cls_ == LinkClass::Roce) {
      throw UcxError(fmt::format(
          "RoCE-class transport list '{}' ({}) opens shared-memory transports ({}); the RoCE "
          "class carries traffic between servers over network transports only (e.g. {})",
          tls_, origin, fmt::join(offending, ", "), defaultTls(LinkClass::Roce)));
    }
    throw UcxError(fmt::format(
        "HCCS-class transport list '{}' ({}) opens network transports ({}); the HCCS class "
        "carries same-server traffic over shared memory only (e.g. {}); to send same-server "
        "traffic over the network, enable intraRoce instead",
        tls_, origin, fmt::join(offending, ", "), defaultTls(LinkClass::Hccs)));
  }
  if (hints.carriesPeers && !reachesPeers) {
    throw UcxError(fmt::format(
        "{}-class transport list '{}' ({}) leaves only {}: no other rank can be reached; "
        "transports available on this machine: {}",
        className(cls_), tls_, origin, fmt::join(resources_, ", "),
        fmt::join(availableTransports(), ", ")));
  }
}

ClassWorker::~ClassWorker() {
  if (address_ != nullptr) ucp_worker_release_address(worker_, address_);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

std::span<const std::byte> ClassWorker::address() const {
  return {reinterpret_cast<const std::byte*>(address_), addressLength_};
}

}  // namespace hccl::tl::ucx
