// The product's link layer: the Transport contract over UCX's tag API (UCP), with one UCP context
// and worker per link class so that each level's traffic crosses the links the level dictates, not
// whatever UCX would pick:
//
//   HCCS class (peers on the same server)    shared-memory transports: self, posix, sysv, cma,
//                                            plus xpmem and knem where present
//   RoCE class (peers on other servers)      rc/ud/dc verbs and mlx5 when an RDMA device exists,
//                                            tcp otherwise
//
// A rank's traffic to itself always rides on the HCCS-class worker (over UCX's loopback transport
// "self" when the rank has no same-server peer).
//
// Every class's transport list is configurable; a context that could carry the wrong kind of
// traffic (tcp in the HCCS class, shared memory in the RoCE class) is refused.
//
// Bootstrap: the constructor is collective over the group. Every rank calls it with the same
// server map and options; worker addresses travel through the caller's all-gather (the Open MPI
// adapter supplies one over MPI, tests one over sockets). A rank whose UCX set-up fails still takes
// part in the exchange, so every rank throws the same error instead of waiting for it.
//
// Endpoints are created lazily, one per peer, on the first transfer to or from that peer (or by
// connect()): a schedule touches few peers, and HCCL also builds links on first use. Every
// endpoint to another rank uses UCX's peer error handling, so a dead peer fails the transfers on
// its link with an error naming the peer and the class; the endpoint to the rank itself uses the
// loopback transport, which has no peer to lose.
//
// Peer error handling costs the HCCS class UCX's zero-copy (cma) rendezvous: UCX 1.13 only uses
// memory-access lanes that can invalidate memory under this mode, so large same-server messages
// are pipelined through the shared-memory FIFO instead.
//
// One transport serves a whole process group (e.g. MPI_COMM_WORLD); communicators are told apart
// by Tag::comm (see ucx_tag.hpp for the tag layout and its wrap-around), not by more transports:
// each transport opens two UCX contexts.
//
// Threading: one thread at a time (UCX workers in single-thread mode).
//
// Use:
//   tl::UcxTransport t(rank, serverOf, allGather, options);  // collective
//   tl::Completion done;
//   const tl::IoVec v{buffer, bytes};
//   t.send(peer, std::span(&v, 1), tl::Tag{comm, seq, msg}, &done);
//   while (done.pending()) t.progress();
//   if (done.state == tl::Completion::State::Failed) report(done.error);
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ucx_tl/transport.hpp"

namespace hccl::tl {

// Set-up and configuration errors (bad transport list, failed bootstrap). Transfer errors are
// reported through Completion records instead.
class UcxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// All-gathers one blob of equal size from every rank: on return, `all` holds rank r's bytes at
// [r * mine.size(), (r + 1) * mine.size()). Collective: every rank calls it the same number of
// times with the same size. It throws (any exception) when the exchange fails.
using AllGather = std::function<void(std::span<const std::byte> mine, std::span<std::byte> all)>;

struct UcxClassOptions {
  // UCX transport list, as UCX_TLS spells it ("posix,cma", "tcp", ...); empty: defaultTls().
  std::string tls;
  // Further UCX settings for this class's context only, applied after TLS through
  // ucp_config_modify (names without the UCX_ prefix, e.g. {"NET_DEVICES", "mlx5_0:1"}).
  std::vector<std::pair<std::string, std::string>> ucxConfig;
};

struct UcxOptions {
  UcxClassOptions hccs;
  UcxClassOptions roce;
  // HCCL_INTRA_ROCE_ENABLE: same-server peers are reached through the RoCE class too.
  bool intraRoce = false;
  // A transfer pending this long while its link completes nothing fails (0: never). UCX does not
  // report partial progress, so this must exceed the longest single transfer. The default follows
  // HCCL_EXEC_TIMEOUT: a rank may legitimately wait long for a late peer. Dead peers are found
  // much sooner, by UCX's error handling and keepalive, and for same-server peers by checking
  // their process.
  std::chrono::milliseconds timeout = std::chrono::seconds(1836);
  // UCX keepalive interval on both classes, and how often same-server peers with transfers in
  // flight are checked: how soon a dead peer is noticed. 0 keeps UCX's interval (20 s) and
  // checks every second.
  std::chrono::milliseconds keepalive = std::chrono::seconds(1);
  // Create every endpoint during construction instead of on first use.
  bool eagerEndpoints = false;
  // Ranks outnumber cores (the MPI library yields when idle): a rendezvous waits for its peer to
  // be scheduled and answer, so the HCCS and RoCE classes send eagerly up to
  // kOversubscribedEagerLimit (unless UCX_RNDV_THRESH or the class's ucxConfig says otherwise).
  bool oversubscribed = false;
};
// At np=4 on 2 cores, a 64 KiB allreduce ran 190 us with UCX's threshold and 90 us with this one.
// Between servers (the 2x2 rig, UCX tcp, whose threshold is 8 KiB) an AllReduce took 0.74 (1 MiB),
// 0.87 (4 MiB) and 0.98 (16 MiB) of the rendezvous's time (4 alternating rounds, paired medians).
inline constexpr const char* kOversubscribedEagerLimit = "1m";
// Between servers over TCP alone (no RDMA transport in the RoCE class's list), the RoCE class
// sends eagerly at every size (unless UCX_RNDV_THRESH or the class's ucxConfig says otherwise):
// a rendezvous saves no copy on TCP and costs a handshake that waits behind the data already in
// the connection, while the link idles between a step's last byte and the next step's first. On
// the 2x2 rig at 1 Gbit/s a 64 MiB AllReduce (pipeline, 2 MiB messages) took 0.564-0.568 s
// against 0.574-0.583 s with the 1 MiB limit above (traffic_probe, alternating runs), the link
// idle 3% of the call instead of 6-8%.
inline constexpr const char* kTcpEagerLimit = "inf";
// And each of its TCP connections' send buffer is capped (unless UCX_TCP_SNDBUF or the class's
// ucxConfig sets one): the ranks of a server each have a connection to their peers and share one
// NIC, and Linux lets every send buffer grow to 4 MB (tcp_wmem), so their bursts together
// overflow a shallow switch queue. On the 2x2 rig (its qdisc queues 5 ms, about 1.1 MB) ten
// 64 MiB AllReduces lost 5-537 packets, and now and then a block of calls took 3-13% longer,
// where HAN's one connection per server lost none. Capped at 256 KiB (the kernel doubles it) none
// were lost in 4 runs at the same speed; at 1 MiB 40-201 still were. 512 KiB in flight a
// connection covers a 10 Gbit/s link's 400 us round trip, a 25 Gbit/s one's 160 us.
inline constexpr const char* kTcpSendBuffer = "256k";

// The class's default transport list on this machine: the shared-memory or network transports
// the issue names, restricted to those UCX offers here (so UCX does not warn about absent ones).
std::string defaultTls(LinkClass c);
// Transport names UCX offers on this machine ("cma", "posix", "self", "sysv", "tcp", ...).
const std::vector<std::string>& availableTransports();
// "HCCS"/"RoCE"/"Self", for messages (the same words as name(LinkClass)).
const char* className(LinkClass c);

// Each rank's link class to every other rank, from the server each rank lives on.
std::vector<LinkClass> linkClasses(int rank, std::span<const int> serverOf, bool intraRoce);

// What carries the traffic to one peer, in UCX's own words.
struct LinkReport {
  int peer = 0;
  LinkClass linkClass = LinkClass::Self;
  std::string tls;  // the class's transport list
  std::vector<std::string>
      transports;       // "transport/device" of every lane: "posix/memory", "tcp/lo"
  std::string ucxText;  // ucp_ep_print_info's report
  std::string error;    // why there is no endpoint, if there is none
};

class UcxTransport final : public Transport {
 public:
  // serverOf[r] is the server (shared-memory domain) of rank r; its size is the group size.
  // Throws UcxError naming the bad value (rank, map, transport list, UCX status).
  UcxTransport(int rank, std::vector<int> serverOf, const AllGather& allGather,
               UcxOptions options = {});
  // Pending transfers are abandoned (their records are not touched again). Endpoints are
  // flushed for a bounded time so a peer's last transfers can complete, then closed.
  ~UcxTransport() override;

  int rank() const override;
  int size() const override;
  LinkClass linkClass(int peer) const override;

  void send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  void recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  int progress() override;
  // A receive not yet matched is withdrawn from UCX. A send, or a receive whose data is already
  // moving, cannot be withdrawn alone: the endpoint to that peer is closed, failing every
  // transfer on it, and later transfers to that peer fail at once. The peer is not told: its
  // own transfers with this rank fail by its own means (timeout, or this process ending). Only
  // cancel when the whole exchange with the peer is abandoned (the engine fails the collective).
  // A transfer UCX still holds 500 ms after being asked to give it up (a receive it had begun to
  // assemble from a peer that stopped) fails anyway and is left to UCX (see ucx_transfers.cpp).
  void cancel(Completion* done) override;
  std::size_t heldOrphans() const override;
  // Side messages are probed for every 64th progress call (with the coarse clock), and on every
  // call for a second after this rank sent one (its answer may be due).
  bool sideSend(int peer, std::span<const std::byte> message) override;
  void setSideHandler(SideHandler handler) override;
  std::size_t sidePending() const override;

  // Creates the endpoints to `peer` / to every peer now; errors land in linkReport().error.
  void connect(int peer);
  void connectAll();
  // Creates the endpoint if needed and reports what UCX chose for it.
  LinkReport linkReport(int peer);
  // Each class in use: its transport list and the transports/devices its context opened.
  std::string describe() const;
  const UcxOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hccl::tl
