// One link class's UCP context and worker, configured with the class's transport list.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ucx_tl/ucx_reports.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl::ucx {

struct WorkerHints {
  std::size_t groupSize = 1;
  std::size_t ranksPerServer = 1;
  // False when the class only carries the rank's traffic to itself: its default list is then
  // just "self".
  bool carriesPeers = true;
  std::chrono::milliseconds keepalive{0};
  bool oversubscribed = false;  // see UcxOptions::oversubscribed
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
  // What the class set beyond its transport list for this run, e.g. "eager up to 1m (...)".
  const std::string& tuning() const { return tuning_; }
  ucp_worker_h worker() const { return worker_; }
  std::span<const std::byte> address() const;
  // Drives UCX; returns UCX's count of events processed.
  unsigned progress() { return ucp_worker_progress(worker_); }

 private:
  void checkResources(const UcxClassOptions& options, const WorkerHints& hints) const;

  LinkClass cls_;
  std::string tls_;
  std::vector<std::string> resources_;
  std::string tuning_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  std::size_t addressLength_ = 0;
};

}  // namespace hccl::tl::ucx
