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
    algo::Slice send;              // the one slice sent to every peer, when post
    std::vector<Recv> recvs;
    std::vector<algo::LocalOp> ops;
    // Streamed (posts or receives of more slots than the window): chunks are written as slots
    // free up and read as they arrive, interleaved, so the step runs as a pipeline however long
    // its slices are (SlotRun::pollStream).
    bool stream = false;
    // Streamed, and its one op reduces the one receive with a slice of this rank: the op runs
    // chunk by chunk straight from the slot (fusedB: the receive is the op's second operand),
    // and the receive's destination is never written (no later step reads it).
    bool fused = false;
    bool fusedB = false;
    // Streamed, and what a chunk's arrival writes (the receive's destination, or the fused op's)
    // is the sent slice itself (in place, Mesh one-shot): chunk i is taken only once this rank
    // posted its own chunk i, which it must send unreduced.
    bool gated = false;
    // Fused, and the next step sends back the slice this one reduces, to the one writer it reads
    // (Mesh's and the ring's AllGather after their ReduceScatter at two ranks): both steps run
    // as one stream, each reduced chunk posted while still in the cache instead of read back from
    // memory when the next step starts. Both ranks post in a fixed order, a ReduceScatter chunk
    // before the AllGather chunk kMergeLag behind it: mine, and the writer's as this rank reads
    // it (>= 0: ReduceScatter chunk t; < 0: AllGather chunk -1 - j).
    bool merged = false;
    std::vector<std::int32_t> mine, theirs;
  };
  // How many ReduceScatter chunks a merged stream posts before the first AllGather chunk.
  static constexpr std::uint32_t kMergeLag = 2;
  std::vector<Step> steps;
  // The run's last post is published with a store fence (ShmLink::publish): it is visible to
  // every reader when the run returns. For a Barrier whose last step is this rank's post with
  // nothing received after it (the gathered Barrier's root, which leaves first): without the
  // fence the post's line transfer (the release's line, which the waiting readers poll) is still
  // in the store buffer when the caller's next call starts, and that call's first hundred-odd
  // stores (its pushes and spills) queue behind it. In osu_bcast (Bcast timed, then Barrier, at
  // np=2) the root's next Bcast paid it. The fence comes before the commit takes the next slot's
  // lines ahead, whose transfers (up to kOwnedLines, after a Bcast of 512 B or more) still drain
  // behind the caller's next work: a fence at the end of the run waited for them too and made
  // osu_bcast's loop slower at 512-1024 B (the reader's Bcast 0.33 -> 0.48 us). Set by the
  // communicator (fastBuild), which knows the collective; a run fences only when its caller asks
  // (begin: Communicator::fastStart, after a Bcast below kAlignFrom).
  bool fenceLastPost = false;
  // Whether the last step posts and receives nothing: this rank leaves as soon as it posted.
  bool endsWithPost() const {
    return !steps.empty() && steps.back().postChunks > 0 && steps.back().recvs.empty() &&
           !steps.back().stream && !steps.back().merged;
  }
  // Elements of a slot's payload: a post of c elements spans max(1, ceil(c / chunkElems)) slots
  // of its writer's broadcast channel, chunk i holding elements [i * chunkElems, ...).
  std::uint64_t chunkElems = 1;
  // Posts of at least this many elements travel as a descriptor of the writer's memory that
  // readers copy once (ShmLink::publishBlock: CMA), the writer waiting for their release at the
  // end of the step (0: never).
  std::uint64_t blockFrom = 0;
  // ... and below this many (the link class's single_copy range for the collective).
  std::uint64_t blockBelow = UINT64_MAX;
  bool blockPost(std::uint64_t count) const {
    return blockFrom != 0 && count >= blockFrom && count < blockBelow;
  }
  // Posts of at least this many elements (and more than the window's slots) stream through the
  // slots (Step::stream; 0: never).
  std::uint64_t streamFrom = 0;
  bool streamPost(std::uint64_t count) const {
    return streamFrom != 0 && count >= streamFrom && !blockPost(count);
  }

  // Bytes of call header in front of every post's payload.
  static constexpr std::size_t kHeaderBytes = 8;
  // A post of at least kAlignFrom bytes starts its data on a cache line of its own behind the
  // header (the slot's payload starts 16 B into the flag's line, so the data would otherwise
  // start 24 B into a line): every copy into or out of the slot, and a reduction straight from
  // it, then moves whole lines on both sides (the user's buffer being line-aligned, and chunks
  // a multiple of kLine bytes) instead of splitting every vector access across two lines. In an
  // emulation of the two-rank 16 MiB AllReduce stream the split cost 4-5%. Smaller posts keep
  // their data right behind the header, in the flag's line, where one line transfer is their
  // latency.
  static constexpr std::size_t kLine = 64;
  static constexpr std::size_t kAlignFrom = 512;
  // Bytes from a post's start (`at`, as mapped here) to its data of `bytes`. Every rank maps the
  // segment page-aligned, so writer and reader agree; a reader also checks the post's length.
  static std::size_t dataOffset(const std::byte* at, std::size_t bytes) {
    if (bytes < kAlignFrom) return kHeaderBytes;
    const auto a = reinterpret_cast<std::uintptr_t>(at) + kHeaderBytes;
    return kHeaderBytes + (kLine - a % kLine) % kLine;
  }
  // The data bytes a slot of slotBytes carries (compile's payloadBytes): room for the header and
  // the padding up to a line, rounded down to whole lines.
  static std::size_t payloadOf(std::size_t slotBytes) {
    return slotBytes < 2 * kLine ? slotBytes - kHeaderBytes : (slotBytes - kLine) / kLine * kLine;
  }

  // schedules[r]: group rank r's schedule; linkRank[r]: its rank on the link. Returns false, with
  // why, unless every step of every rank has the form above and every post fits `window` slots
  // of payloadBytes each (payloadOf(slot bytes)), or is a block (at least blockFromBytes,
  // when not 0, and below blockBelowBytes). Then `out` is rank me's program.
  // window <= the link's slotsPerChannel: a step's posts then never wait for a release of a post
  // of the same step, only of earlier steps (and calls), which every reader finishes without
  // waiting for this step; so a post of several slots is written whole, then read whole.
  // Posts of at least streamFromBytes (not 0) may span any number of slots: their steps stream
  // (Step::stream), every rank writing its next chunk when a slot frees and reading whatever
  // chunk arrived, so no rank waits on a reader that itself waits.
  static bool compile(std::span<const algo::RankSchedule* const> schedules, std::uint32_t me,
                      std::span<const int> linkRank, std::size_t elemSize, std::size_t payloadBytes,
                      SlotProgram& out, std::string& why, std::size_t window = 1,
                      std::size_t blockFromBytes = 0, std::size_t streamFromBytes = 0,
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
  // fenceLastPost: publish the program's last post with a fence (only where the program allows
  // it: SlotProgram::fenceLastPost).
  void begin(const SlotProgram& program, tl::ShmLink& link, std::byte* const bufs[3],
             std::size_t elemSize, Reduction* reduction, std::uint64_t tag,
             bool fenceLastPost = false);
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
  // A streamed step (Step::stream): posts and receives interleaved, as far as slots allow.
  Result pollStream(const SlotProgram::Step& st);
  // Copies chunk posted_ of the step's post into `slot` and publishes it (poll, pollStream).
  void postChunk(const SlotProgram::Step& st, std::span<std::byte> slot);
  // A merged pair of steps (Step::merged), the same way.
  Result pollMerged(const SlotProgram::Step& st, const SlotProgram::Step& next);
  // Checks a chunk's post (header, size) against what the receive expects.
  Result badChunk(const tl::ShmLink::Post& post, const SlotProgram::Recv& r, std::uint32_t chunk,
                  std::size_t n);
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
  bool fence_ = false;  // begin's fenceLastPost, where the program allows it
  std::size_t step_ = 0;
  std::size_t recv_ = 0;
  std::uint32_t chunk_ = 0;         // chunks of recv_ taken
  std::uint32_t posted_ = 0;        // chunks of step_'s post published
  std::uint64_t block_ = 0;         // step_'s block post, until its readers released it
  std::vector<std::uint32_t> got_;  // a streamed step's chunks taken, per receive
  bool moved_ = false;
  std::string error_;
  tl::Fault fault_ = tl::Fault::None;
};

}  // namespace hccl::engine
