// The Transport contract (transport.hpp) with same-server traffic on the shared-memory link
// (shm_link.hpp) and everything else on another transport (UCX's RoCE class, or a test's).
//
// What changes against UCX's tagged messages on the same peers: no request, no tag-matching
// engine, no progress round per message. A message of up to inlineBytes() travels inline: its tag
// and bytes are written into the next slot of the pair's channel and the send is complete at
// once; the receiver copies them out (or, receiving in place, reduces straight from the slot).
// A larger message is posted as a descriptor of the sender's memory (its iov as it is) and read
// by the receiver with one cross-memory copy (CMA) straight into its own memory; the send
// completes when the receiver releases the post. Where the link has no CMA, larger messages go
// over the other transport; which way a message goes depends only on its peer and size, so both
// ends agree without asking each other.
//
// Matching. Every post carries its tag. A receiver takes posts off a channel in order and pairs
// each with the posted receive of equal tag; a post nobody waits for yet stays in its slot (at
// most slotsPerChannel per channel), so a fast sender's next message meets its receive in place.
// When a channel's window is full, or a receive from that peer waits behind such a post, the
// oldest one is copied out of its slot (an unexpected message): the sender never stalls on a
// receiver that makes progress, whatever the order in which communicators and calls post.
//
// Receiving in place (Transport::direct): a message stays in its slot, or in the sender's
// memory, until the receiver finishes with it; readDirect shows inline bytes in place and
// copies block ranges with CMA into the caller's (cache-sized) buffer.
//
// Pushing (Transport::pushable, CMA only, messages above inlineBytes()): the receiver posts a
// descriptor of its own iov, flagged as an exposure in its header, on its channel to the sender
// (a block send the other way); the sender's pushed send matches it by tag like a direct
// receive, writes into it with CMA, and releases it, which completes the receive. Exposures and
// messages keep apart in matching (same tags may travel both ways), and an exposure is never
// copied out of its slot to free a window.
//
// Errors as the other transports: a wait with no progress on the link for the link's timeout
// fails with Fault::Timeout; a peer whose process exited fails its pending transfers with
// Fault::PeerLost (checked every liveness interval while transfers wait); unequal sizes on the
// two ends fail the receive with Fault::Mismatch. cancel() of a block the peer may still be
// reading withdraws it (ShmLink::revoke), so that read fails instead of delivering changed
// memory.
//
// Threading: one thread at a time, like the link and the transports it wraps.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ucx_tl/shm_link.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::tl {

class ShmTransport final : public Transport {
 public:
  // `link` spans the same group as `base`, rank for rank.
  ShmTransport(std::shared_ptr<Transport> base, std::shared_ptr<ShmLink> link);
  ~ShmTransport() override;

  int rank() const override;
  int size() const override;
  LinkClass linkClass(int peer) const override;
  void send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  void recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  int progress() override;
  void cancel(Completion* done) override;

  bool direct(int peer, std::size_t bytes) const override;
  void recvDirect(int peer, std::size_t bytes, Tag tag, Completion* done) override;
  Completion readDirect(const Completion* done, std::size_t offset, std::span<std::byte> into,
                        std::span<const std::byte>* view) override;
  void finishDirect(Completion* done) override;
  // Pushes (Transport's "writing in place"): with CMA, for messages above inlineBytes().
  bool pushable(int peer, std::size_t bytes) const override;
  void recvPushed(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) override;
  void sendPushed(int peer, std::size_t bytes, Tag tag, Completion* done) override;
  Completion writeDirect(const Completion* done, std::size_t offset,
                         std::span<const std::byte> from) override;
  // The side channel is the other transport's.
  bool sideSend(int peer, std::span<const std::byte> message) override {
    return base_->sideSend(peer, message);
  }
  void setSideHandler(SideHandler handler) override { base_->setSideHandler(std::move(handler)); }
  std::size_t sidePending() const override { return base_->sidePending(); }
  // The slots and pushed writes hold nothing after a cancel (a withdrawn block fails its late
  // reader); what UCX holds is the base's.
  std::size_t heldOrphans() const override { return base_->heldOrphans(); }

  // Whether a message of `bytes` to or from `peer` goes over the link (else over base).
  bool onLink(int peer, std::size_t bytes) const;
  // The largest message that travels inline in a slot.
  std::size_t inlineBytes() const { return inlineBytes_; }
  ShmLink& link() { return *link_; }
  Transport& base() { return *base_; }

  struct Counters {
    std::uint64_t inlineSends = 0, blockSends = 0;  // messages sent over the link, by kind
    std::uint64_t unexpected = 0;                   // posts copied out of their slot
    std::uint64_t viaBase = 0;                      // messages the other transport carried
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Message;
  struct Op;
  struct Peer;
  Op* newOp();
  void freeOp(Op* op);
  Peer* peerOf(int peer);
  void queueSend(int peer, std::span<const IoVec> iov, Tag tag, std::size_t bytes, bool exposed,
                 Completion* done);
  void queueDirect(int peer, std::size_t bytes, Tag tag, bool exposed, Completion* done);
  bool trySend(Peer& p, Op& op);
  void pump(Peer& p);
  void take(Peer& p, const ShmLink::Post& post);
  bool match(Peer& p, Message& m);
  void deliver(Peer& p, Op& op, Message& m);
  void copyOut(Peer& p, Message& m);
  void complete(Op& op, Completion::State state, std::string error = {}, Fault f = Fault::None);
  void checkStale();
  Op* findDirect(const Completion* done) const;
  std::string describe(const Op& op) const;

  std::shared_ptr<Transport> base_;
  std::shared_ptr<ShmLink> link_;
  int rank_;
  std::size_t inlineBytes_;
  bool blocks_;                               // messages above inlineBytes_ go over the link (CMA)
  std::vector<std::unique_ptr<Peer>> peers_;  // by group rank: null unless a link peer
  std::vector<Peer*> active_;                 // link peers in use, for progress()
  std::vector<std::unique_ptr<Op>> ops_;      // every Op made
  std::vector<Op*> freeOps_;
  std::vector<Op*> direct_;                     // direct receives that are Done, until finished
  std::vector<Op*> abandoned_;                  // pushes cancelled unfinished: never released
  std::vector<const Completion*> basePending_;  // transfers handed to base, not yet seen done
  // The clock as of the last stale check: what "last progress" times are measured in. A long
  // gap between checks (nobody progressed) resets them, so coarse is enough.
  std::chrono::steady_clock::time_point coarseNow_ = std::chrono::steady_clock::now();
  Counters counters_;
  unsigned ticks_ = 0;
  std::chrono::steady_clock::time_point nextLiveness_{};
  std::chrono::steady_clock::time_point lastCheck_{};
};

}  // namespace hccl::tl
