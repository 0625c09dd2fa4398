// The UCX side of ShmLink: a UCP context on UCX's posix shared-memory transport only, with RMA,
// that allocates the server's segment (ucp_mem_map + ucp_rkey_pack), maps a peer's
// (ucp_ep_rkey_unpack + ucp_rkey_ptr), and moves blocks with ucp_get_nbx/ucp_put_nbx for the
// UcxRma single-copy mode. Internal to ucx_tl.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace hccl::tl::shm {

class ShmUcx {
 public:
  // Throws UcxError when UCX refuses the configuration.
  explicit ShmUcx(std::size_t localSize);
  ~ShmUcx();
  ShmUcx(const ShmUcx&) = delete;
  ShmUcx& operator=(const ShmUcx&) = delete;

  std::span<const std::byte> address() const;
  // Creates the endpoint to a peer from its worker address; returns an error text or "".
  std::string connect(int peer, std::span<const std::byte> address);

  // The segment this rank allocates (the leader): zeroed, shared, with its packed rkey.
  struct Allocation {
    void* base = nullptr;
    std::size_t bytes = 0;
    std::vector<std::byte> rkey;
  };
  Allocation allocate(std::size_t bytes);  // throws UcxError
  // Maps the segment a peer allocated: its address in this process, or nullptr with *error set.
  void* map(int peer, std::span<const std::byte> rkey, std::uint64_t remoteBase,
            std::string* error);

  // UcxRma single copy. A registration stays until unregister(); its packed rkey travels in a
  // Block post. get/put return "" or why they failed; they progress UCX until done.
  struct Registration {
    ucp_mem_h memh = nullptr;
    std::vector<std::byte> rkey;
  };
  Registration registerBlock(void* data, std::size_t bytes, std::string* error);
  void unregister(Registration& r);
  // Asked now and then while a get/put waits: "" to go on, else why to give up (the endpoint is
  // then closed, which fails every later transfer to that peer).
  using Abort = std::function<std::string()>;
  std::string get(int peer, std::span<const std::byte> rkey, std::uint64_t remote, void* dst,
                  std::size_t bytes, const Abort& abort);
  std::string put(int peer, std::span<const std::byte> rkey, std::uint64_t remote, const void* src,
                  std::size_t bytes, const Abort& abort);

  void progress() { ucp_worker_progress(worker_); }

 private:
  std::string rma(int peer, std::span<const std::byte> rkey, std::uint64_t remote, void* local,
                  std::size_t bytes, bool isGet, const Abort& abort);
  ucs_status_t wait(int peer, void* request, const Abort& abort, std::string* why);
  void closeEndpoint(int peer);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  std::size_t addressLength_ = 0;
  std::vector<ucp_ep_h> eps_;           // by local index of the peer
  std::vector<std::string> epFailure_;  // set by the endpoint error callback
  std::vector<ucp_rkey_h> segmentKeys_;
  ucp_mem_h segment_ = nullptr;
};

}  // namespace hccl::tl::shm
