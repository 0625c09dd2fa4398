// The communicator's slot entries: blocking calls small enough for the shared-memory slots run
// as a program compiled once per call shape (fastBuild, kept in a small cache of entries,
// fastFind), with in-place buffers rebound onto the out-of-place program (rebindInPlace), and
// their failures diagnosed as a failed request's are (fastFail, fastPoll).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "coll_hccl/engine/communicator.hpp"
#include "coll_hccl/engine/diagnosis.hpp"

namespace hccl::engine {
namespace {

// Collectives whose in-place calls the slots run as the out-of-place program on rebound buffers
// (Communicator::rebindInPlace): only the root may be in place (Reduce, Gather, Scatter), any
// rank on its own (Scan, Exscan: MPI does not ask it of every rank), or every rank (Alltoall). The
// verdict then rests on the out-of-place shape, which every rank knows.
bool inPlaceRebound(hccl_coll_t c) {
  return c == HCCL_COLL_REDUCE || c == HCCL_COLL_GATHER || c == HCCL_COLL_SCATTER ||
         c == HCCL_COLL_ALLTOALL || c == HCCL_COLL_SCAN || c == HCCL_COLL_EXSCAN;
}

}  // namespace

bool Communicator::fastMatches(const FastEntry& e, const hccl_coll_desc_t& d) const {
  const hccl_coll_desc_t& k = e.key;
  // In place and not share an entry where in place only rebinds buffers (inPlaceRebound).
  if (!e.used || d.coll != k.coll || (d.in_place != k.in_place && !inPlaceRebound(d.coll)) ||
      d.count != k.count || d.dtype != k.dtype || d.elem_size != k.elem_size || d.op != k.op ||
      d.root != k.root)
    return false;
  if (d.coll != HCCL_COLL_REDUCE_SCATTER && d.coll != HCCL_COLL_ALLGATHERV) return true;
  return d.recvcounts && std::equal(e.recvcounts.begin(), e.recvcounts.end(), d.recvcounts);
}

void Communicator::fastBuild(FastEntry& e, const hccl_coll_desc_t& d) {
  e = FastEntry{};
  e.used = true;
  e.key = d;
  e.key.sendbuf = e.key.recvbuf = nullptr;
  e.key.recvcounts = e.key.sendcounts = e.key.sdispls = e.key.rdispls = nullptr;
  e.key.user_fn = nullptr;
  e.key.user_ctx = nullptr;
  if ((d.coll == HCCL_COLL_REDUCE_SCATTER || d.coll == HCCL_COLL_ALLGATHERV) && d.recvcounts)
    e.recvcounts.assign(d.recvcounts, d.recvcounts + size_);
  // Collectives whose problem every rank knows whole from the shared arguments, with an engine
  // kernel: Allgatherv's counts are shared (part of the key); the other V forms are rank-local (a
  // rank knows its own counts only) and stay on the executor.
  switch (d.coll) {
    case HCCL_COLL_ALLREDUCE:
    case HCCL_COLL_ALLGATHER:
    case HCCL_COLL_REDUCE_SCATTER:
    case HCCL_COLL_REDUCE_SCATTER_BLOCK:
    case HCCL_COLL_BCAST:
    case HCCL_COLL_BARRIER:
    case HCCL_COLL_REDUCE:
    case HCCL_COLL_GATHER:
    case HCCL_COLL_SCATTER:
    case HCCL_COLL_ALLTOALL:
    case HCCL_COLL_SCAN:
    case HCCL_COLL_EXSCAN:
    case HCCL_COLL_ALLGATHERV:
      break;
    default:
      return;
  }
  if (d.op == HCCL_OP_USER) return;
  const auto p = static_cast<std::uint32_t>(size_);
  std::vector<algo::RankSchedule> others(p);
  std::vector<const algo::RankSchedule*> all(p);
  std::string why;
  const std::size_t payload = SlotProgram::payloadOf(fastLink_->slotBytes());
  // In place is a buffer choice here, not part of the verdict (fastStart rebinds the buffers):
  // the program is compiled from the out-of-place shape, which every rank knows alike.
  hccl_coll_desc_t shared = d;
  if (inPlaceRebound(d.coll)) shared.in_place = 0;
  CallShape s;
  if (describe(shared, s, why) != HCCL_SUCCESS) return;
  std::shared_ptr<const Plan> plan = planFor(s, why);
  if (!plan || plan->chunks.size() != 1 || plan->schedules.size() != 1) return;
  const algo::PlanKey composed = plan->decision.plan;
  const algo::Layout& lay = *layout_;
  const algo::RankGenerator compose = [&lay, composed](const algo::Problem& q, std::uint32_t r) {
    return algo::compose(lay, composed, q, r);
  };
  for (std::uint32_t r = 0; r < p; ++r) {
    if (r == static_cast<std::uint32_t>(rank_)) {
      all[r] = plan->schedules[0].get();
      continue;
    }
    const std::vector<algo::Chunk> chunks = algo::planChunks(s.problem, r, 0);
    if (chunks.size() != 1) return;
    others[r] = algo::withPrivateInput(chunks[0].problem, r, compose);
    all[r] = &others[r];
  }
  // A post larger than a slot travels through up to slotsPerChannel slots, or from
  // stream_from_bytes streams through them, chunk by chunk (a reduction reducing each chunk
  // straight from the slot), or, in a call that only copies (Bcast, AllGather, ...) at the sizes
  // single_copy gives the collective (where the link has single copy), travels as a block its
  // readers copy once (CMA); a post no path takes leaves the call to the general executor.
  // Which is faster is the kernel's CMA against two user copies, a property of the machine: the
  // shared-memory class's paths or its fast_single_copy's, by the link's copy speed (linkPaths;
  // cost_model.hpp, LinkParams::pathsFor). Nothing streams where ranks outnumber cores (the link
  // yields): a stream hands every slot from a running writer to a running reader, where a block
  // needs its reader to run once; there copies keep blocks from a slot up, as before streaming, and
  // a reduction keeps to posts of one slot (above them the general executor reduces straight from
  // the peer's memory in one pass: AllReduce of 64-128 KiB measured 0.84-0.89x with blocks).
  const bool copies = !reduces(s.info.coll);
  const std::size_t window = copies ? fastLink_->slotsPerChannel() : 1;
  // Where ranks outnumber cores: blocks from a slot up.
  algo::LinkParams::ByteRange single{payload + 1, UINT64_MAX};
  std::size_t streamFrom = 0;
  if (const auto paths = linkPaths()) {
    single = paths->singleCopy[static_cast<std::size_t>(s.info.coll)];
    streamFrom = paths->streamFrom;
  }
  const bool blocks = copies && !single.empty() && fastLink_->singleCopy() != tl::SingleCopy::None;
  // A block below a slot's payload too: one CMA read of 16-64 KiB beat the slot's two copies
  // (AllGather, Bcast at np=2 where CMA is fast).
  const std::size_t blockFrom = blocks ? std::max<std::size_t>(single.from, 1) : 0;
  const std::size_t blockBelow = single.below >= SIZE_MAX ? SIZE_MAX : single.below;
  if (!SlotProgram::compile(all, static_cast<std::uint32_t>(rank_), members_, s.info.elemSize,
                            payload, e.program, why, window, blockFrom, streamFrom, blockBelow))
    return;
  if (reduces(s.info.coll)) e.reduction.emplace(Reduction::predefined(*s.info.type, *s.info.op));
  e.elemSize = s.info.elemSize;
  e.scratchBytes = plan->scratchElems * e.elemSize;
  // After the schedule's scratch: where an in-place call keeps its input (or, for Scatter's root,
  // the result it does not write).
  if (inPlaceRebound(d.coll))
    e.stageBytes = (d.coll == HCCL_COLL_GATHER || d.coll == HCCL_COLL_SCATTER ? s.info.count
                                                                              : s.problem.total()) *
                   e.elemSize;
  if (fastScratch_.size() < e.scratchBytes + e.stageBytes)
    fastScratch_.resize(e.scratchBytes + e.stageBytes);
  // A Barrier this rank leaves as soon as it posted (SlotProgram::fenceLastPost).
  e.program.fenceLastPost = d.coll == HCCL_COLL_BARRIER && e.program.endsWithPost();
  e.slots = true;
}

void Communicator::rebindInPlace(const FastEntry& e, const hccl_coll_desc_t& d,
                                 std::byte* bufs[3]) {
  std::byte* const stage = fastScratch_.data() + e.scratchBytes;
  std::byte* const recv = bufs[1];
  if (d.coll == HCCL_COLL_SCATTER) {
    // The root's data is in its receive buffer, which stays unchanged; its own block lands in
    // the stage and is dropped.
    bufs[0] = recv;
    bufs[1] = stage;
    return;
  }
  // The input read from a copy, so that no schedule reads what it already wrote: Reduce, Scan,
  // Exscan and Alltoall from the whole receive buffer, Gather's root from its own block there
  // (written back unchanged).
  const std::size_t at =
      d.coll == HCCL_COLL_GATHER ? static_cast<std::size_t>(d.root) * e.stageBytes : 0;
  std::memcpy(stage, recv + at, e.stageBytes);
  bufs[0] = stage;
}

Communicator::FastEntry& Communicator::fastFind(const hccl_coll_desc_t& d) {
  static_assert(std::tuple_size_v<decltype(fast_)> <= 256, "fastLast_ holds uint8_t indices");
  const auto remember = [&](std::size_t i) {
    if (d.coll < HCCL_COLL_COUNT) fastLast_[d.coll] = static_cast<std::uint8_t>(i);
  };
  for (std::size_t i = 0; i < fast_.size(); ++i)
    if (fastMatches(fast_[i], d)) {
      remember(i);
      return fast_[i];
    }
  const std::size_t i = fastNext_;
  fastNext_ = (fastNext_ + 1) % fast_.size();
  remember(i);
  FastEntry* const e = &fast_[i];
  fastBuild(*e, d);
  return *e;
}

bool Communicator::fastAccepts(const hccl_coll_desc_t& desc) {
  if (!fastLink_) return false;
  hccl_coll_desc_t barrier;
  const hccl_coll_desc_t& d = keyed(desc, prevBcastRoot_, prevBcastBytes_, barrier);
  const FastEntry& last = fastLastOf(d);
  return fastMatches(last, d) ? last.slots : fastFind(d).slots;
}

hccl_status_t Communicator::fastStart(const hccl_coll_desc_t& desc, unsigned spins,
                                      std::string& err) {
  if (!fastLink_) return HCCL_ERR_UNSUPPORTED;
  hccl_coll_desc_t barrier;
  const hccl_coll_desc_t& d = keyed(desc, prevBcastRoot_, prevBcastBytes_, barrier);
  FastEntry* e = &fastLastOf(d);
  if (!fastMatches(*e, d)) e = &fastFind(d);  // this collective's last shape again: no call
  if (!e->slots) return HCCL_ERR_UNSUPPORTED;
  if (broken_) return brokenError(err);
  std::byte* bufs[3] = {
      d.in_place ? nullptr : static_cast<std::byte*>(const_cast<void*>(d.sendbuf)),
      static_cast<std::byte*>(d.recvbuf), fastScratch_.data()};
  if (d.in_place && e->stageBytes) rebindInPlace(*e, d, bufs);
  // A number like any other call's, so that calls count alike on every rank whatever path they
  // took, and the header tells this call from its neighbours.
  fastSeq_ = seq_++;
  fastAfter_ = prevBcastRoot_;
  fastAfterBytes_ = prevBcastBytes_;
  fastRan_ = true;
  // The fence of a Barrier this rank leaves first (SlotProgram::fenceLastPost) only after a
  // Bcast whose data shares the flag's lines (below SlotProgram::kAlignFrom): measured in
  // osu_bcast's loop at np=2, it made the root's next Bcast of 8-256 B 0.19-0.21 -> 0.07-0.11 us
  // with the loop's period (Bcast + Barrier) within 3% of before, but after Bcasts of 512-1024 B
  // the reader's next Bcast waited longer for the root's post (period 1.06 -> 1.18 us).
  const bool fence =
      e->program.fenceLastPost && prevBcastBytes_ != 0 && prevBcastBytes_ < SlotProgram::kAlignFrom;
  noteNumbered(d.coll, d.root, d.count * d.elem_size);
  fastRun_.begin(e->program, *fastLink_, bufs, e->elemSize, e->reduction ? &*e->reduction : nullptr,
                 (std::uint64_t{commTag_} << 32) | fastSeq_, fence);
  fastIdle_ = 0;
  return fastPoll(spins, err);
}

hccl_status_t Communicator::fastFail(hccl_status_t status, std::string message, std::string& err) {
  err = fmt::format("{} rank {}, call {} on the shared-memory slots: {}", label_, rank_,
                    fastSeq_ + 1, message);
  if (status == HCCL_ERR_TIMEOUT || status == HCCL_ERR_PEER_LOST) {
    // Name the culprit as a failed request does, from the kernel's view of the server's
    // processes (exited, stopped). Calls on slots leave no record on the progress board, so
    // its rules (who has not entered the call) are not asked.
    DiagnosisInput in;
    in.world = worldProcesses();
    in.members = members();
    in.rank = rank_;
    in.failed.comm = commTag_;
    in.failed.seq = fastSeq_;
    in.failed.state = CallProgress::State::Failed;
    in.failed.waitRecv = true;
    const int w = fastRun_.waitingFor();
    const auto at = std::find(members_.begin(), members_.end(), w);
    in.failed.wait = at == members_.end() ? -1 : static_cast<std::int32_t>(at - members_.begin());
    in.peerLost = status == HCCL_ERR_PEER_LOST;
    const Culprit c = findCulprit(in);
    if (c.rank >= 0)
      err = fmt::format("call {} failed: {}. Here, {}: {}", fastSeq_ + 1, c.reason,
                        describeRank(in, rank_), err);
  }
  fastRun_.abandon();
  markBroken(fastSeq_, status, err);
  return status;
}

hccl_status_t Communicator::fastPoll(unsigned spins, std::string& err) {
  switch (fastRun_.spin(spins)) {
    case SlotRun::Result::Done:
      return HCCL_SUCCESS;
    case SlotRun::Result::Failed:
      switch (fastRun_.fault()) {
        case tl::Fault::Timeout:
          return fastFail(HCCL_ERR_TIMEOUT, fastRun_.error(), err);
        case tl::Fault::PeerLost:
        case tl::Fault::Withdrawn:  // the writer's call failed first
          return fastFail(HCCL_ERR_PEER_LOST, fastRun_.error(), err);
        case tl::Fault::Mismatch:
          return fastFail(HCCL_ERR_MISMATCH, fastRun_.error(), err);
        default:
          return fastFail(HCCL_ERR_TRANSPORT, fastRun_.error(), err);
      }
    case SlotRun::Result::Pending:
      break;
  }
  if (fastRun_.moved()) {
    fastIdle_ = 0;
    return HCCL_PENDING;
  }
  // The clock only now and then: a wait that lasts sees it every 16 rounds of polls.
  if ((++fastIdle_ & 15) != 0) return HCCL_PENDING;
  const auto now = std::chrono::steady_clock::now();
  const tl::ShmOptions& o = fastLink_->options();
  if (fastIdle_ == 16) {
    fastSince_ = now;
    fastLiveness_ = now + o.liveness;
    return HCCL_PENDING;
  }
  const int peer = fastRun_.waitingFor();
  // Named only when the wait fails: a wait that goes on formats nothing (no allocation).
  const auto whom = [peer] {
    return peer >= 0 ? fmt::format("the post of rank {}", peer)
                     : std::string("its readers' release of the slot it writes next");
  };
  if (o.timeout.count() > 0 && now - fastSince_ > o.timeout)
    return fastFail(
        HCCL_ERR_TIMEOUT,
        fmt::format("waited for {} for {} ms (the transport's timeout)", whom(), o.timeout.count()),
        err);
  if (now >= fastLiveness_) {
    fastLiveness_ = now + o.liveness;
    for (int w : fastLink_->localRanks()) {
      if (w == fastLink_->rank() || (peer >= 0 && w != peer) || fastLink_->peerRunning(w)) continue;
      return fastFail(
          HCCL_ERR_PEER_LOST,
          fmt::format("waited for {}, but rank {}'s process on this server has exited", whom(), w),
          err);
    }
  }
  return HCCL_PENDING;
}

std::optional<algo::LinkParams::Paths> Communicator::linkPaths() const {
  const algo::CostModel& model = selector_->model();
  if (fastLink_->options().yield || !model.sharedMemory) return std::nullopt;
  // The class's, or its fast_single_copy's where the link timed its CMA fast: the same on every
  // rank of the server, as every rank must compile the same program.
  return model.sharedMemory->pathsFor(fastLink_->copyRatio());
}

std::string Communicator::slotPaths() const {
  const tl::ShmLink& link = *fastLink_;
  const auto paths = linkPaths();
  if (!paths)
    return link.options().yield
               ? "ranks outnumber cores: copies above a slot as blocks, nothing streams"
               : "no shared-memory link class in the cost model: copies above a slot as blocks";
  std::vector<std::string> blocks;
  if (link.singleCopy() != tl::SingleCopy::None)
    for (int c = 0; c < kNumCollectives; ++c) {
      const algo::LinkParams::ByteRange& r = paths->singleCopy[static_cast<std::size_t>(c)];
      if (!r.empty())
        blocks.push_back(
            fmt::format("{} [{}, {})", name(static_cast<Collective>(c)), r.from, r.below));
    }
  const double ratio = link.copyRatio();
  const double below = selector_->model().sharedMemory->fastSingleCopy.belowRatio;
  return fmt::format(
      "posts as blocks (one {} read) for {}; streamed from {} B posts; {}",
      tl::name(link.singleCopy()),
      blocks.empty() ? "none" : fmt::format("{}", fmt::join(blocks, ", ")), paths->streamFrom,
      ratio <= 0    ? "the link did not time its single copy (the class's paths)"
      : paths->fast ? fmt::format("fast_single_copy: the link's single copy took {:.2f} times a "
                                  "memcpy, at most {}",
                                  ratio, below)
                    : fmt::format("the class's paths: the link's single copy took {:.2f} times a "
                                  "memcpy, fast_single_copy needs at most {}",
                                  ratio, below));
}

}  // namespace hccl::engine
