// The link layer's contract (HCCL's HCOMM role): nonblocking, tagged, point-to-point transfers of
// byte ranges between the ranks of one group, plus progress. It knows nothing of algorithms or
// MPI. The UCX transport implements it for the product; the in-process transport implements it for
// unit tests, so the same engine runs the same schedule on both.
//
// Completion model: the caller owns a Completion record per transfer and passes its address; the
// transport sets `state` exactly once (Done or Failed) from inside post or progress(), on the
// calling thread, and never touches the record afterwards. A send is Done when its buffer may be
// reused; a receive when the data is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace hccl::tl {

struct IoVec {
  void* base;
  std::size_t length;
};

// Which links carry a peer's traffic, after HCCL's link classes.
enum class LinkClass : std::uint8_t {
  Self,  // the rank itself
  Hccs,  // same server: shared memory
  Roce,  // another server: RDMA verbs, or TCP when there is no RDMA device
};
const char* name(LinkClass c);

// Keeps transfers of different communicators, different collectives on one communicator, and
// different messages of one collective apart. Two transfers between the same ordered pair of
// ranks with equal tags match in posting order.
struct Tag {
  std::uint32_t comm = 0;  // communicator id (wraps at the transport's width)
  std::uint32_t seq = 0;   // collective sequence number on that communicator
  std::uint32_t msg = 0;   // message index between the pair within the collective
  bool operator==(const Tag&) const = default;
};

// Why a transfer failed, so that callers act on the kind and never on the message's words.
enum class Fault : std::uint8_t {
  None,
  Timeout,    // no progress on the link for longer than the transport's timeout
  PeerLost,   // the peer's process exited or its endpoint failed
  Mismatch,   // the matching transfer has a different size: the two sides disagree
  Cancelled,  // the caller gave up on it (after a failure elsewhere)
  Withdrawn,  // the peer gave the exchange up: its own call failed first (a consequence)
  Transport,  // any other link-layer failure (unreachable peer, bad rank, UCX error)
};
const char* name(Fault f);

struct Completion {
  enum class State : std::uint8_t { Pending, Done, Failed };
  State state = State::Pending;
  std::size_t bytes = 0;      // bytes moved, set on Done
  std::string error;          // set on Failed: names the peer, the link class and the cause
  Fault fault = Fault::None;  // set on Failed

  bool pending() const { return state == State::Pending; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual LinkClass linkClass(int peer) const = 0;

  // Post a transfer. The iov describes the bytes (total may be zero); the memory must stay valid
  // until *done leaves Pending. The receive's total length must equal the matching send's.
  virtual void send(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) = 0;
  virtual void recv(int peer, std::span<const IoVec> iov, Tag tag, Completion* done) = 0;

  // Advance every pending transfer; returns how many completions it delivered.
  virtual int progress() = 0;

  // Give up on a pending transfer (after a failure elsewhere): the transport stops touching its
  // memory and marks it Failed. Safe to call on a completed record (no effect; a direct receive
  // that is Done is finished as by finishDirect). One exception, counted by heldOrphans().
  virtual void cancel(Completion* done) = 0;

  // Transfers given up (cancelled or timed out) whose memory the link below may still touch:
  // UCX can neither finish nor withdraw a receive it had begun to assemble from a peer that then
  // stopped, and writes the rest of the message into its buffer if that peer resumes. Memory of
  // such a transfer that the caller owns must outlive this transport while this is not zero.
  // Default: none.
  virtual std::size_t heldOrphans() const;

  // ---- receiving in place (optional) ------------------------------------------------------------
  // A link that reaches a peer's data directly (the shared-memory link) can leave a received
  // message where it is and let the receiver read it from there: a reduction then reads a peer's
  // bytes once, straight from shared memory or the peer's buffer, instead of after a copy.
  //
  //   if (t.direct(peer, n)) t.recvDirect(peer, n, tag, &done);   // instead of recv
  //   ... once done is Done:
  //   Completion c = t.readDirect(&done, offset, piece, &view);   // any ranges, any number
  //   use(view);                                                  // valid until finishDirect
  //   t.finishDirect(&done);                                      // exactly once
  //
  // The sender's side is an ordinary send. A direct receive holds link resources (a slot, the
  // sender's buffer) until finished: finish it soon after it completes.

  // Whether recvDirect serves a message of `bytes` from `peer`. Default: never.
  virtual bool direct(int peer, std::size_t bytes) const;
  // Posts a receive of `bytes` whose data stays with the link (only where direct() says yes).
  virtual void recvDirect(int peer, std::size_t bytes, Tag tag, Completion* done);
  // Bytes [offset, offset + into.size()) of a completed direct receive: *view shows them in
  // place when the link holds them addressable, else they are copied into `into` and *view is
  // `into`. Returns Done, or Failed with the error and fault (the peer went away, or withdrew its
  // buffer).
  virtual Completion readDirect(const Completion* done, std::size_t offset,
                                std::span<std::byte> into, std::span<const std::byte>* view);
  // Releases a completed direct receive, or ends a pushed send (the receive completes); no
  // effect on a failed one.
  virtual void finishDirect(Completion* done);

  // ---- writing in place (optional) ------------------------------------------------------------
  // The other direction: the receiver exposes where the bytes go and the sender writes them there
  // itself, piece by piece as it produces them (a reduction's result then leaves from the cache
  // instead of being read back from memory by the receiver).
  //
  //   receiver: if (t.pushable(peer, n)) t.recvPushed(peer, iov, tag, &done);  // instead of recv
  //   sender:   if (t.pushable(peer, n)) t.sendPushed(peer, n, tag, &done);     // instead of send
  //             ... once done is Done (the receiver's buffer is known):
  //             Completion c = t.writeDirect(&done, offset, piece);  // every byte, in any order
  //             t.finishDirect(&done);                              // exactly once
  //
  // Both ends must take the pushed form, or neither: pushable() depends on the peer and the size
  // only and answers alike on both ends. The receive completes when the sender finishes, so the
  // sender writes every byte first; a receiver that fails meanwhile withdraws its buffer (a
  // write that overlapped the withdrawal fails with Fault::Withdrawn), a sender that dies fails
  // the receive with Fault::PeerLost.

  // Whether a message of `bytes` between this rank and `peer` can be pushed. Default: never.
  virtual bool pushable(int peer, std::size_t bytes) const;
  // The receiver's end: exposes iov (its memory, valid until *done leaves Pending).
  virtual void recvPushed(int peer, std::span<const IoVec> iov, Tag tag, Completion* done);
  // The sender's end: Done once the receiver's buffer is known; then writeDirect and finishDirect.
  virtual void sendPushed(int peer, std::size_t bytes, Tag tag, Completion* done);
  // Writes `from` at byte `offset` of a pushed message whose sendPushed is Done. Returns Done, or
  // Failed with the error and fault.
  virtual Completion writeDirect(const Completion* done, std::size_t offset,
                                 std::span<const std::byte> from);

  // ---- side channel (optional) ------------------------------------------------------------------
  // Small messages kept apart from every transfer, for fault diagnosis between processes that
  // share no memory: a side message needs no posted receive and never matches a transfer (nor
  // a transfer it); the receiving rank's handler gets it from inside progress(), whenever that
  // rank progresses for any reason. It travels on links of its own, so a link that a timeout or
  // a cancel closed still carries it, and a side link's failure touches no transfer. Best
  // effort and unordered: a message to a stopped, dead or unreachable peer is lost unnoticed.
  // The handler may call sideSend, never progress(). Default: no side channel.
  using SideHandler = std::function<void(int peer, std::span<const std::byte> message)>;
  // False when nothing was sent (no side channel, no such peer, its side link failed, or
  // kSideBacklog messages still wait to leave).
  virtual bool sideSend(int peer, std::span<const std::byte> message);
  // Replaces the handler (an empty one drops what arrives).
  virtual void setSideHandler(SideHandler handler);
  // Side messages accepted but not yet gone: a new side link needs both ends to progress
  // before its first message leaves, so a sender about to stop progressing waits for this.
  virtual std::size_t sidePending() const;
  static constexpr std::size_t kSideMaxBytes = 64 * 1024;
  static constexpr std::size_t kSideBacklog = 4096;
};

}  // namespace hccl::tl
