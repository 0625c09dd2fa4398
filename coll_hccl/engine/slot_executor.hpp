// Small blocking collectives straight over the shared-memory link's slots: a schedule compiled
// once per call shape into broadcast posts, run without requests, tags or the general executor.
//
// Open MPI's XHC and UCC's shared-memory TL serve small calls this way: each rank writes its
// data once into a slot of its own with a sequence flag (single writer), every peer reads it in
// place (multiple readers) and acknowledges, and a blocking call spins on the flags directly.
// Here the schedule stays the contract: SlotProgram::compile takes the schedules the selector's
// plan produced for every rank of the group and accepts them when every step a rank sends in
// sends one slice to every other rank (one broadcast post on the writer's broadcast channel,
// read by all), and every rank's receives from a writer are that writer's posts in order, of the
// same sizes. Mesh one-shot AllReduce, AllGather and Broadcast at any size of group, and every
// two-rank schedule, have that form; ReduceScatter on more than two ranks (a different slice
// for each peer) does not, and runs on the general executor.
//
// Running a step: the rank copies its send slice into its broadcast channel's next slot
// (after a header naming the call: the communicator's tag and the call's number), publishes it,
// then takes each receive's post from its writer's broadcast channel in the schedule's order,
// checks the header and the size, copies the bytes where the schedule receives them and
// releases the slot at once, then runs the step's ops (Copy, Reduce in the schedule's operand
// order, so every rank reduces alike). Back to back: a writer reuses a slot only when every
// reader released it (ShmLink's ring of slotsPerChannel), so a fast rank can run that many
// posts ahead of a slow reader and then waits; a reader copies before it releases, so nothing
// it still reads can change.
//
// A slice larger than a slot travels one of two ways, chosen by the caller (compile's window and
// blockFromBytes, equal on every rank):
//  - as a block: one post holding a descriptor of the writer's memory (and the header as its
//    meta); each reader copies it once straight into its destination (CMA) and releases it, and
//    the writer waits for every release at the end of the step, before its ops may change the
//    slice. A run that fails withdraws its block (abandon), so a late reader's copy fails.
//    Measured at np=2, this beats both two copies through the slots and the general executor's
//    CMA path (which adds a request, tag matching and progress rounds) for Bcast and AllGather.
//  - as consecutive posts of at most a slot each (up to the channel's slotsPerChannel), each with
//    the header: a pipeline in which the reader copies chunk i while the writer writes chunk
//    i + 1 (the chunked pipeline of Open MPI's coll/sm), for links without single copy.
//  - streamed (compile's stream): consecutive posts as above but more of them than the window,
//    so the writer reuses the slots of its own post's earlier chunks. Such a step interleaves: it
//    posts what its ring has room for, takes whatever chunks of its receives have arrived (in
//    any order among the step's writers), and repeats, so that no rank waits for a release
//    while a reader of its posts waits for it. Two copies (into the slot, out of it, the slot
//    staying in cache) where the block's one copy is the kernel's: on this VM's kernel CMA
//    moved 16 MiB in 2.4-2.6 ms against 0.6-0.8 ms for a memcpy (the pinning of 4 KiB pages),
//    so the two copies of a stream through 16 KiB slots beat it (see communicator_slots.cpp).
//
// Every rank compiles every rank's schedule and decides from the same data, so all ranks of a
// group run a call on slots or all run it on the general executor. The broadcast channels are
// the fast path's alone (ShmTransport carries tagged messages on the pair channels), and only a
// group spanning the whole server uses them: every reader of a channel takes part in every
// post, in the one order every rank's blocking calls share.
//
// Threading: one thread at a time. Nothing here waits: poll() advances as far as the peers'
// flags allow and says whether the call is over; the caller spins on it (and gives the core
// away between polls when ranks outnumber cores).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "coll_hccl/engine/reduction.hpp"
#include "ucx_tl/shm_link.hpp"

namespace hccl::engine {

struct SlotProgram {
  struct Recv {
    int writer = -1;           // link rank whose broadcast post this is
    algo::Slice dst;           // where the schedule receives it
    std::uint32_t chunks = 1;  // slots it spans
    bool block = false;        // a descriptor of the writer's buffer, read with one copy
  };
  struct Step {
    bool post = false;
    std::uint32_t postChunks = 0;  // slots the post spans (0: no post)
    bool block = false;            // the post is a block (one slot, a descriptor)
    // The post or a receive spans more slots than the window: the step streams (see compile).
    bool stream = false;
    algo::Slice send;  // the one slice sent to every peer, when post
    std::vector<Recv> recvs;
    std::vector<algo::LocalOp> ops;
  };
  std::vector<Step> steps;
  // Elements of a slot's payload: a post of c elements spans max(1, ceil(c / chunkElems)) slots
  // of its writer's broadcast channel, chunk i holding elements [i * chunkElems, ...).
  std::uint64_t chunkElems = 1;
  // Posts of at least blockFrom and fewer than blockBelow elements travel as a descriptor of the
  // writer's memory that readers copy once (ShmLink::publishBlock: CMA), the writer waiting for
  // their release at the end of the step (blockFrom 0: never).
  std::uint64_t blockFrom = 0;
  std::uint64_t blockBelow = 0;
  bool blockPost(std::uint64_t count) const {
    return blockFrom != 0 && count >= blockFrom && count < blockBelow;
  }

  // Bytes of call header in front of every post's payload.
  static constexpr std::size_t kHeaderBytes = 8;

  // schedules[r]: group rank r's schedule; linkRank[r]: its rank on the link. Returns false, with
  // why, unless every step of every rank has the form above and every post fits `window` slots
  // of payloadBytes each (slot bytes less the header), or is a block (at least blockFromBytes,
  // when not 0, and below blockBelowBytes). Then `out` is rank me's program.
  // stream: a post above `window` slots that is not a block is accepted and streamed, where every
  // step with such a post or receive receives from distinct writers (it takes their chunks in any
  // order, one channel per writer).
  // window <= the link's slotsPerChannel: a step's posts then never wait for a release of a post
  // of the same step, only of earlier steps (and calls), which every reader finishes without
  // waiting for this step; so a post of several slots is written whole, then read whole.
  static bool compile(std::span<const algo::RankSchedule* const> schedules, std::uint32_t me,
                      std::span<const int> linkRank, std::size_t elemSize, std::size_t payloadBytes,
                      SlotProgram& out, std::string& why, std::size_t window = 1,
                      std::size_t blockFromBytes = 0, bool stream = false,
                      std::size_t blockBelowBytes = SIZE_MAX);
  // Slots a post of `count` elements spans.
  std::uint32_t chunksOf(std::uint64_t count) const {
    return count <= chunkElems ? 1
                               : static_cast<std::uint32_t>((count + chunkElems - 1) / chunkElems);
  }
};

class SlotRun {
 public:
  enum class Result : std::uint8_t { Done, Pending, Failed };

  // Starts running `program` (valid until the run is over). bufs: Input, Output, Scratch base
  // pointers (null where absent); `tag` names the call in every header and must be equal on
  // every rank for the same call.
  void begin(const SlotProgram& program, tl::ShmLink& link, std::byte* const bufs[3],
             std::size_t elemSize, Reduction* reduction, std::uint64_t tag);
  // Advances without waiting.
  Result poll();
  // The run ends here (failed): a block post of this rank its readers may still read is
  // withdrawn, so that their reads fail instead of copying memory the caller reuses.
  void abandon();
  // Polls up to `polls` times while pending, with the CPU's spin hint in between.
  Result spin(unsigned polls);
  // Something moved since the last call (for the caller's timeout).
  bool moved() {
    const bool m = moved_;
    moved_ = false;
    return m;
  }
  // The link rank the run waits for (-1 when it waits for readers of its own post).
  int waitingFor() const;
  const std::string& error() const { return error_; }
  // Why the run failed: Mismatch (the calls differ), or the link's fault on a block read
  // (PeerLost, Timeout, Withdrawn: the writer's own call failed and withdrew its block).
  tl::Fault fault() const { return fault_; }

 private:
  std::byte* at(const algo::Slice& s) const {
    return bufs_[static_cast<int>(s.buf)] + s.offset * elemSize_;
  }
  Result fail(std::string message, tl::Fault fault = tl::Fault::Mismatch);
  // Copies chunk posted_ of the step's post into `slot` (after the header) and publishes it.
  void postChunk(const SlotProgram::Step& st, std::span<std::byte> slot);
  // Checks that `post` is chunk `chunk` of receive r, copies it out and releases it.
  Result takeChunk(const SlotProgram::Recv& r, std::uint32_t chunk, const tl::ShmLink::Post& post);
  // A streaming step's posts and receives, interleaved, as far as the flags allow.
  Result pollStream(const SlotProgram::Step& st);
  // Spins on flag_ from turn i while turns remain; returns the turn it stopped at.
  unsigned waitFlag(unsigned i, unsigned polls) const;
  // The flag of the receive the run waits for (flagSet_: taken for recv_ of step_).
  tl::ShmLink::Flag flag_;
  bool flagSet_ = false;
  // The acknowledgements of this rank's broadcast channel were loaded during this run's wait.
  bool learned_ = false;

  const SlotProgram* program_ = nullptr;
  tl::ShmLink* link_ = nullptr;
  std::byte* bufs_[3] = {nullptr, nullptr, nullptr};
  std::size_t elemSize_ = 1;
  Reduction* reduction_ = nullptr;
  std::uint64_t tag_ = 0;
  std::size_t step_ = 0;
  std::size_t recv_ = 0;
  std::uint32_t chunk_ = 0;   // chunks of recv_ taken
  std::uint32_t posted_ = 0;  // chunks of step_'s post published
  std::uint64_t block_ = 0;   // step_'s block post, until its readers released it
  // A streaming step's chunks taken per receive (recv_ then counts the receives complete).
  std::vector<std::uint32_t> got_;
  bool moved_ = false;
  std::string error_;
  tl::Fault fault_ = tl::Fault::None;
};

}  // namespace hccl::engine
