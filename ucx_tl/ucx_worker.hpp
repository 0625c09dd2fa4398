// One link class's UCP context and worker, configured with the class's transport list, and the
// helpers that read UCX's own reports (context resources, endpoint lanes).
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl::ucx {

// What a UCX transport can carry, by its name ("posix", "tcp", ...). Local transports never reach
// another process by themselves (the loopback "self", GPU memory-copy helpers).
enum class TlKind : std::uint8_t { Local, SharedMemory, Network };
TlKind kindOf(std::string_view tl);

// Whatever `print` writes to a FILE*, as a string (UCX reports only to streams).
std::string capture(const std::function<void(FILE*)>& print);

// "tl/dev" of every resource in ucp_context_print_info's report.
std::vector<std::string> parseResources(std::string_view contextInfo);
// "tl/dev" of every lane in ucp_ep_print_info's report, without the path index.
std::vector<std::string> parseLanes(std::string_view endpointInfo);
// The transport part of "tl/dev".
std::string_view tlOf(std::string_view resource);

struct WorkerHints {
  std::size_t groupSize = 1;
  std::size_t ranksPerServer = 1;
  // False when the class only carries the rank's traffic to itself: its default list is then
  // just "self".
  bool carriesPeers = true;
  std::chrono::milliseconds keepalive{0};
};

class ClassWorker {
 public:
  // Throws UcxError when UCX rejects the configuration or the context would carry the wrong
  // kind of traffic for the class.
  ClassWorker(LinkClass cls, const UcxClassOptions& options, const WorkerHints& hints);
  ~ClassWorker();
  ClassWorker(const ClassWorker&) = delete;
  ClassWorker& operator=(const ClassWorker&) = delete;

  LinkClass linkClass() const { return cls_; }
  const std::string& tls() const { return tls_; }
  const std::vector<std::string>& resources() const { return resources_; }
  ucp_worker_h worker() const { return worker_; }
  std::span<const std::byte> address() const;
  // Drives UCX; returns UCX's count of events processed.
  unsigned progress() { return ucp_worker_progress(worker_); }

 private:
  void checkResources(const UcxClassOptions& options, const WorkerHints& hints) const;

  LinkClass cls_;
  std::string tls_;
  std::vector<std::string> resources_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  std::size_t addressLength_ = 0;
};

}  // namespace hccl::tl::ucx
