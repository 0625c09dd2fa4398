// A direct-access link between the ranks of one server (HCCL's HCCS class as load/store): one
// shared segment per server holding per-rank slots with sequence flags, and single-copy access
// to peers' buffers. No tag matching, no request and no progress round per message: a small
// block is written into a slot and read in place; a large block is copied once, peer to peer.
// It knows nothing of algorithms or MPI.
//
// Channels. Every ordered pair of ranks on a server has a channel (writer -> reader), and every
// rank a broadcast channel (writer -> every other rank of its server). A channel is a ring of
// slotsPerChannel slots; its posts are numbered 1, 2, ... and post p lives in slot (p-1) mod K.
// One writer, readers in order:
//   writer:  wait until every reader of the channel has released post p-K (the slot's previous
//            use), write the payload, then store p into the slot's flag with release;
//   reader:  wait until the flag, loaded with acquire, reads p; use the payload in place (reduce
//            straight from it); then store p into its own acknowledgement line with release.
// A slot's flag shares its line with the first bytes of its payload (a small post moves as one
// line); each acknowledgement has its own line; every line has a single writer. A writer loads
// its readers' acknowledgements only when the last ones it saw do not cover the slot it reuses,
// so a reader's acknowledgement moves a line only every few posts; a caller that waits anyway
// can have them loaded then (learnReleased), off the next posts' path. Right after a post the
// writer stores into its next slot's control word when it knows that slot free, so that the
// next post's store finds the line in its own cache instead of first invalidating the copy the
// reader kept from the slot's previous use (measured at np=2 with OSU 5.7, in two batches:
// 8 B AllReduce 0.47-0.49 -> 0.37-0.44 us, Barrier 0.43 -> 0.32-0.36 us with both). A fast rank
// can run K posts ahead of a slow reader (starting collective k+1 while the reader still works
// on k) and then waits: a slot is never overwritten before all its readers released it.
//
// Blocks. A post may carry, instead of bytes, a descriptor of a buffer in the writer's memory
// (publishBlock; with CMA also a list of byte ranges read as one block) and a few bytes of the
// writer's own (meta: what the block is): readers copy from it once (read, or stream() in
// cache-sized pieces for a one-pass reduction), and the writer must keep the buffer unchanged
// until the post is released. The other direction works the same way: a reader posts a descriptor
// of where it wants data, and the peer write()s into it. The copy is the kernel's cross-memory
// attach (process_vm_readv/writev: CMA), or UCX RMA on request.
//
// The segment. The lowest rank of each server makes it; the others map it; the header carries a
// 128-bit token the leader draws and publishes through this job's bootstrap, and a rank whose
// mapped segment carries another token (a reused pid, a forged record) refuses it. Two ways to
// make it, both verified on UCX 1.13.1 here:
//  - Memfd (default): memfd_create, mode 0600, mapped by peers through /proc/<pid>/fd/<fd>,
//    which the kernel allows only to processes that may ptrace the leader. It never has a name
//    in /dev/shm or anywhere, so no exit, kill -9 included, can leave it behind.
//  - UcxPosix: ucp_mem_map(UCP_MEM_MAP_ALLOCATE) on UCX's posix domain, published as a packed
//    rkey, mapped by peers with ucp_ep_rkey_unpack + ucp_rkey_ptr. UCX creates the file in
//    /dev/shm (O_EXCL, mode 0600, random name), writes its whole length, and only then unlinks
//    it (UCX_POSIX_USE_PROC_LINK, forced on): a kill -9 in that window (measured 0.1-35 ms
//    per allocation on this VM under load) leaves the file in /dev/shm for good. Hence not
//    the default. UCX's sysv domain is never used: mode 0660 and guessable ids.
//
// Single copy. UCX 1.13.1 has no RMA lane over cma (cma offers only zero-copy operations, and
// UCX's RMA lanes need short/bcopy ones), so ucp_get_nbx on a user buffer runs UCX's software
// emulation over the posix active-message lane: two copies, moving only while the owner
// progresses UCX (measured 0.03-5 GB/s for 8 MiB). process_vm_readv is the call UCX's own cma
// transport makes, without the emulation; it is what Auto picks when every rank of the server
// can use it. Where the kernel forbids it (ptrace restrictions), Auto gives None: blocks then go
// through slots, which beats the emulation. UcxRma stays available on request (every wait of
// the link progresses UCX so peers' reads move). This machine has no XPMEM or KNEM module.
//
// Errors follow UcxTransport's contract: set-up errors throw UcxError on every rank alike;
// blocking calls report failures in the returned Completion (Failed, with a message naming the
// peer, the HCCS class and the cause): a peer whose process exited, or no progress for the
// timeout. Bad arguments (a peer on another server, a block larger than a slot) throw
// std::invalid_argument naming the value and what is valid.
//
// Reading in order or through a window. peek/release hand out and release the oldest unreleased
// post of a channel. take/releasePost hand posts out in order too, but up to slotsPerChannel
// of them may be held at once and released in any order: a reader can look past a post it is
// not ready for (tag matching above the link), or keep one in place while it reads the next.
// A slot is reused only once every post up to it is released. Use one style per channel.
//
// Waiting spins (with the CPU's pause hint); with yield set, for ranks that outnumber cores,
// every wait gives the core away between polls instead.
//
// Threading: one thread at a time.
//
// Use:
//   tl::ShmLink link(rank, serverOf, allGather);          // collective over the whole group
//   std::span<std::byte> slot;
//   link.acquire(peer, &slot);                            // wait for the slot, then fill it
//   std::memcpy(slot.data(), data, n);
//   link.publish(peer, n);
//   tl::ShmLink::Post post;
//   link.peek(peer, false, &post);                        // on the peer: wait for the post
//   consume(post.data);                                   // in place, in shared memory
//   link.release(peer, false);
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucx_tl/transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl {

enum class SingleCopy : std::uint8_t {
  Auto,    // CMA where every rank of the server can use it, else None
  Cma,     // process_vm_readv/writev; set-up fails if the kernel forbids it
  UcxRma,  // ucp_get_nbx/ucp_put_nbx (on UCX 1.13.1: software emulation over posix)
  None,    // no single copy: blocks must travel through slots (or the tagged transport)
};
const char* name(SingleCopy s);

enum class SegmentSource : std::uint8_t {
  Memfd,     // memfd_create, attached through /proc/<pid>/fd (never named in /dev/shm)
  UcxPosix,  // ucp_mem_map + ucp_rkey_ptr on UCX's posix domain (briefly named in /dev/shm)
};

struct ShmOptions {
  // Payload bytes per slot (rounded up to a cache line) and slots per channel. The segment holds
  // L * L channels for L ranks on the server: L * L * slotsPerChannel * (slotBytes + 64) bytes.
  std::size_t slotBytes = 16384;
  std::size_t slotsPerChannel = 4;
  SingleCopy singleCopy = SingleCopy::Auto;
  SegmentSource segment = SegmentSource::Memfd;
  // Waits give the core away between polls (ranks outnumber cores). Any rank of a server asking
  // for it sets it on every rank of the server (options().yield after set-up).
  bool yield = false;
  // A wait with no progress for this long fails (0: never); a peer's process is checked every
  // `liveness` while a wait lasts. The defaults follow UcxOptions.
  std::chrono::milliseconds timeout = std::chrono::seconds(1836);
  std::chrono::milliseconds liveness = std::chrono::seconds(1);
};

class ShmLink {
 public:
  static constexpr int kEveryPeer = -1;  // a writer's broadcast channel

  // A post as its reader sees it. data points into shared memory (Inline) and stays valid, and
  // unchanged, until the post is released.
  struct Post {
    std::uint64_t number = 0;
    bool block = false;               // a descriptor of the writer's buffer: see read()/stream()
    std::span<const std::byte> data;  // Inline: the bytes; Block: the descriptor (opaque)
    std::size_t blockBytes = 0;       // Block: the buffer's length
    std::span<const std::byte> meta;  // Block: the writer's meta bytes (in shared memory)
    int writer = -1;
    bool broadcast = false;  // read from the writer's broadcast channel
  };
  // Ranks of a block (CMA only), read as one block in this order.
  using Segments = std::span<const IoVec>;

  // Collective over the whole group: every rank calls it with the same server map and options.
  // serverOf[r] is rank r's server; only ranks on the caller's server are its peers. Throws
  // UcxError (on every rank alike) naming the failing rank and the cause.
  ShmLink(int rank, std::vector<int> serverOf, const AllGather& allGather, ShmOptions options = {});
  ~ShmLink();
  ShmLink(const ShmLink&) = delete;
  ShmLink& operator=(const ShmLink&) = delete;

  int rank() const;
  int size() const;
  // Ranks on this rank's server, itself included, in rank order.
  const std::vector<int>& localRanks() const;
  bool local(int peer) const;
  std::size_t slotBytes() const;
  std::size_t slotsPerChannel() const;
  SingleCopy singleCopy() const;  // what Auto resolved to
  // How many times a memcpy's time the single copy (CMA) took on this server, as the link timed
  // it at set-up: shm::timeCopies of kCopyProbeBytes by the server's leader (its first local
  // rank), handed to every rank of the server in the set-up's status round, so every rank reads
  // the same number. 16 MiB, not a cache-sized block: the VM whose defaults the cost model
  // carries read 512 KiB by CMA at about memcpy's speed but 16 MiB at 3.5 times its time; this
  // one 1.4-1.8 times at 16 MiB. 0: not timed (no CMA, no peer on the server, or the link yields
  // because ranks outnumber cores).
  double copyRatio() const;
  static constexpr std::size_t kCopyProbeBytes = std::size_t{16} << 20;
  std::size_t segmentBytes() const;
  void setYield(bool yield);
  // The segment's file as /proc/self/maps names it ("/memfd:hccl-shm (deleted)",
  // "/dev/shm/ucx_shm_posix_... (deleted)"), and its address in this process: for reports.
  std::string segmentPath() const;
  const void* segmentBase() const;
  std::string describe() const;

  // ---- writer side (reader = a local peer, or kEveryPeer) --------------------------------------
  // The next slot of the channel if all readers released its previous use, else empty.
  std::span<std::byte> tryAcquire(int reader);
  Completion acquire(int reader, std::span<std::byte>* slot);
  // Makes the acquired slot's first `bytes` visible as the channel's next post; returns its
  // number. bytes <= slotBytes(). `fence`: the post's stores are globally visible when publish
  // returns (a store fence right after the flag, before the next slot's lines are taken ahead),
  // for a writer that leaves right after its post and should not start its next work with the
  // post's line transfers still queued in its store buffer.
  std::uint64_t publish(int reader, std::size_t bytes, bool fence = false);
  // Acquires, copies and publishes: bytes <= slotBytes().
  Completion post(int reader, std::span<const std::byte> bytes, std::uint64_t* number = nullptr);
  // Posts a descriptor of [data, data + bytes): readers copy from it with read()/stream(), or
  // write into it with write(). The memory must stay valid (and, unless readers write into it,
  // unchanged) until released(reader, number).
  Completion publishBlock(int reader, void* data, std::size_t bytes,
                          std::uint64_t* number = nullptr);
  // The same for a block made of several ranges (more than one needs CMA), with `meta` bytes
  // the readers see as Post::meta. Throws std::invalid_argument when descriptor and meta do not
  // fit in a slot (blockCapacity()).
  Completion publishBlock(int reader, Segments segments, std::span<const std::byte> meta,
                          std::uint64_t* number = nullptr);
  // Whether a block of `segments` ranges with `metaBytes` of meta fits in a slot.
  bool blockFits(std::size_t segments, std::size_t metaBytes) const;
  // Withdraws a published block post not yet released (its buffer is about to change): every
  // read of it that has not finished fails. The post still has to be released by its readers.
  void revoke(int reader, std::uint64_t number);
  // Every reader of the channel has released post `number`.
  bool released(int reader, std::uint64_t number) const;
  // Loads the readers' acknowledgements of the channel now, for a caller that waits anyway (for
  // a peer's post): the next posts then find their slots free from what this rank already knows,
  // without a load of a line the readers write (a cache-line transfer) on their critical path.
  void learnReleased(int reader) const;
  Completion waitReleased(int reader, std::uint64_t number);

  // ---- reader side (writer = a local peer; broadcast: its broadcast channel) --------------------
  // The oldest post of the channel this rank has not released, if published.
  bool tryPeek(int writer, bool broadcast, Post* post);
  Completion peek(int writer, bool broadcast, Post* post);
  // Releases the oldest unreleased post of the channel (the one peek returns).
  void release(int writer, bool broadcast);
  // Where a reader spins for the oldest unreleased post of a channel: its flag, and the number
  // the flag reads once the post is published (then tryPeek finds it). Valid until the next
  // release on the channel. For callers that wait on many channels themselves: one load per
  // poll, no call.
  struct Flag {
    const std::atomic<std::uint64_t>* seq = nullptr;
    std::uint64_t number = 0;
    bool ready() const { return seq->load(std::memory_order_acquire) == number; }
  };
  Flag nextFlag(int writer, bool broadcast) const;
  // The next post not yet taken, if published and fewer than slotsPerChannel are held.
  bool tryTake(int writer, bool broadcast, Post* post);
  // Releases a taken post (any order). The post's data is not to be touched afterwards.
  void releasePost(const Post& post);
  // Posts taken and not yet released on the channel.
  std::size_t held(int writer, bool broadcast) const;
  // Whether tryTake must wait for a release: slotsPerChannel posts are taken since the oldest
  // one still held, and until that one is released its writer cannot reuse a slot (releases
  // of later posts do not help).
  bool windowFull(int writer, bool broadcast) const;

  // Whether a peer's process still runs (false once it exited), and the options' waits: for
  // callers that wait through the try* calls themselves.
  bool peerRunning(int peer) const;
  // Both pair channels with a peer in words (posts published, taken, released), for reports.
  std::string channelState(int peer) const;
  const ShmOptions& options() const;

  // ---- single copy on a Block post --------------------------------------------------------------
  // Copies [offset, offset + bytes) of the post's block into dst / from src into it.
  Completion read(const Post& post, std::size_t offset, void* dst, std::size_t bytes);
  Completion write(const Post& post, std::size_t offset, const void* src, std::size_t bytes);
  // Reads [offset, offset + bytes) in pieces of at most `piece` bytes through a buffer of this
  // rank, calling consume(piece bytes, offset of the piece) after each: a reduction then reads
  // the peer's data once from memory and again from cache.
  Completion stream(const Post& post, std::size_t offset, std::size_t bytes, std::size_t piece,
                    const std::function<void(std::span<const std::byte>, std::size_t)>& consume);

  // Drives UCX (serves peers' UCX RMA reads of this rank's blocks); waits call it themselves.
  void progress();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hccl::tl
