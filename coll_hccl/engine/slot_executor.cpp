#include "coll_hccl/engine/slot_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace hccl::engine {

bool SlotProgram::compile(std::span<const algo::RankSchedule* const> schedules, std::uint32_t me,
                          std::span<const int> linkRank, std::size_t elemSize,
                          std::size_t payloadBytes, SlotProgram& out, std::string& why,
                          std::size_t window, std::size_t blockFromBytes,
                          std::size_t streamFromBytes, std::size_t blockBelowBytes) {
  const std::size_t p = schedules.size();
  if (p < 2 || me >= p || linkRank.size() != p || elemSize == 0 || window == 0) {
    why = fmt::format("{} ranks, rank {}, {} link ranks, element size {}, window {}", p, me,
                      linkRank.size(), elemSize, window);
    return false;
  }
  if (payloadBytes < elemSize) {
    why = fmt::format("an element of {} bytes does not fit a slot's {}", elemSize, payloadBytes);
    return false;
  }
  out.chunkElems = payloadBytes / elemSize;
  out.blockFrom = blockFromBytes == 0
                      ? 0
                      : std::max<std::uint64_t>((blockFromBytes + elemSize - 1) / elemSize, 1);
  out.blockBelow =
      blockBelowBytes == SIZE_MAX ? UINT64_MAX : (blockBelowBytes + elemSize - 1) / elemSize;
  out.streamFrom = streamFromBytes == 0
                       ? 0
                       : std::max<std::uint64_t>((streamFromBytes + elemSize - 1) / elemSize, 1);
  // posts[w]: the element counts of w's broadcast posts in order; from[r][w]: what r receives
  // from w, in order. Every rank's program needs both to agree.
  std::vector<std::vector<std::uint64_t>> posts(p);
  std::vector<std::vector<std::vector<std::uint64_t>>> from(
      p, std::vector<std::vector<std::uint64_t>>(p));
  std::vector<bool> seen(p);
  for (std::size_t r = 0; r < p; ++r) {
    for (std::size_t s = 0; s < schedules[r]->steps.size(); ++s) {
      const algo::Step& st = schedules[r]->steps[s];
      const algo::Slice* sent = nullptr;
      std::size_t sends = 0;
      std::fill(seen.begin(), seen.end(), false);
      for (const algo::Transfer& x : st.xfers) {
        if (x.peer >= p || x.peer == r) {
          why = fmt::format("rank {} step {} has a transfer with peer {}", r, s, x.peer);
          return false;
        }
        if (x.dir == algo::Dir::Recv) {
          from[r][x.peer].push_back(x.slice.count);
          continue;
        }
        if ((sent && !(*sent == x.slice)) || seen[x.peer]) {
          why = fmt::format("rank {} step {} sends different slices to its peers", r, s);
          return false;
        }
        sent = &x.slice;
        seen[x.peer] = true;
        ++sends;
      }
      if (sends == 0) continue;
      if (sends != p - 1) {
        why = fmt::format("rank {} step {} sends to {} of its {} peers", r, s, sends, p - 1);
        return false;
      }
      if (!out.blockPost(sent->count) && !out.streamPost(sent->count) &&
          out.chunksOf(sent->count) > window) {
        why = fmt::format("rank {} step {} sends {} bytes, above {} slots of {}", r, s,
                          sent->count * elemSize, window, payloadBytes);
        return false;
      }
      posts[r].push_back(sent->count);
    }
  }
  for (std::size_t r = 0; r < p; ++r)
    for (std::size_t w = 0; w < p; ++w)
      if (w != r && from[r][w] != posts[w]) {
        why = fmt::format("rank {} does not receive every post of rank {} as sent", r, w);
        return false;
      }

  out.steps.clear();
  for (const algo::Step& st : schedules[me]->steps) {
    Step& mine = out.steps.emplace_back();
    for (const algo::Transfer& x : st.xfers) {
      if (x.dir == algo::Dir::Send) {
        mine.post = true;
        mine.send = x.slice;
        mine.block = out.blockPost(x.slice.count);
        mine.postChunks = mine.block ? 1 : out.chunksOf(x.slice.count);
      } else {
        const bool block = out.blockPost(x.slice.count);
        mine.recvs.push_back(
            {linkRank[x.peer], x.slice, block ? 1 : out.chunksOf(x.slice.count), block});
      }
    }
    mine.ops = st.ops;
    const auto streamed = [&](std::uint64_t count) {
      return out.streamPost(count) && out.chunksOf(count) > window;
    };
    mine.stream = (mine.post && streamed(mine.send.count)) ||
                  std::any_of(mine.recvs.begin(), mine.recvs.end(),
                              [&](const Recv& r) { return streamed(r.dst.count); });
    // pollStream takes every arrival as a chunk: a step streams whole or not at all.
    if (mine.stream && (mine.block || std::any_of(mine.recvs.begin(), mine.recvs.end(),
                                                  [](const Recv& r) { return r.block; }))) {
      why = fmt::format("rank {} step {} streams and carries a block", me, out.steps.size() - 1);
      return false;
    }
  }
  // Fusing: a streamed step whose one op reduces its one receive (Mesh's ReduceScatter at two
  // ranks, Mesh one-shot) reduces each chunk straight from the slot, instead of copying the whole
  // slice to scratch and reading it back from memory; the receive's destination, in scratch, is
  // then never written, so no later step may read it.
  for (std::size_t s = 0; s < out.steps.size(); ++s) {
    Step& st = out.steps[s];
    if (!st.stream) continue;
    if (st.recvs.size() == 1 && st.ops.size() == 1) {
      const algo::LocalOp& op = st.ops[0];
      const algo::Slice& got = st.recvs[0].dst;
      bool fuse = op.kind == algo::OpKind::Reduce && got.buf == algo::Buf::Scratch &&
                  op.dst.count == got.count && (op.a == got) != (op.b == got) &&
                  !op.dst.overlaps(got);
      for (std::size_t t = s + 1; t < out.steps.size() && fuse; ++t) {
        const Step& later = out.steps[t];
        fuse = !(later.post && later.send.overlaps(got));
        for (const algo::LocalOp& o : later.ops)
          fuse =
              fuse && !o.a.overlaps(got) && !(o.kind == algo::OpKind::Reduce && o.b.overlaps(got));
      }
      st.fused = fuse;
      st.fusedB = fuse && op.b == got;
    }
    // A chunk written while this rank's own post may still have to read it: only where the
    // chunks line up (the same slice), and then gated.
    if (!st.post) continue;
    const auto clash = [&](const algo::Slice& written) {
      if (!written.overlaps(st.send)) return false;
      if (written == st.send) {
        st.gated = true;
        return false;
      }
      return true;
    };
    bool bad = st.fused && clash(st.ops[0].dst);
    for (const Recv& r : st.recvs) bad = bad || (!st.fused && clash(r.dst));
    if (bad) {
      why = fmt::format("rank {} step {} streams into the slice it sends", me, s);
      return false;
    }
  }
  // Merging (Step::merged). The chunks line up: the next step posts this one's reduced slice
  // (its chunks are the receive's), and receives the writer's reduced slice where this step
  // sends it, or apart from everything this step reads and writes. A writer's AllGather chunk j
  // needs its ReduceScatter chunk j from this rank, which this rank posts without waiting for
  // anything but slots its reader frees by reading in order (a read never waits): so no rank
  // waits in a circle.
  for (std::size_t s = 0; s + 1 < out.steps.size(); ++s) {
    Step& st = out.steps[s];
    const Step& nx = out.steps[s + 1];
    if (!st.fused || st.gated || !st.post || st.block || !nx.post || nx.block ||
        nx.recvs.size() != 1 || nx.recvs[0].block || !nx.ops.empty() ||
        nx.recvs[0].writer != st.recvs[0].writer || !(nx.send == st.ops[0].dst))
      continue;
    const algo::LocalOp& op = st.ops[0];
    const algo::Slice& back = nx.recvs[0].dst;
    if (back.overlaps(op.dst) || back.overlaps(op.a) || back.overlaps(op.b) ||
        (back.overlaps(st.send) && !(back == st.send)))
      continue;
    const auto order = [](std::uint32_t rs, std::uint32_t ag) {
      std::vector<std::int32_t> seq;
      seq.reserve(rs + ag);
      for (std::uint32_t t = 0; t < std::max(rs, ag + kMergeLag); ++t) {
        if (t < rs) seq.push_back(static_cast<std::int32_t>(t));
        if (t >= kMergeLag && t - kMergeLag < ag)
          seq.push_back(-1 - static_cast<std::int32_t>(t - kMergeLag));
      }
      return seq;
    };
    st.merged = true;
    st.mine = order(st.postChunks, nx.postChunks);
    st.theirs = order(st.recvs[0].chunks, nx.recvs[0].chunks);
    ++s;  // the next step is this one's second half
  }
  return true;
}

void SlotRun::begin(const SlotProgram& program, tl::ShmLink& link, std::byte* const bufs[3],
                    std::size_t elemSize, Reduction* reduction, std::uint64_t tag,
                    bool fenceLastPost) {
  program_ = &program;
  fence_ = fenceLastPost && program.fenceLastPost;
  link_ = &link;
  for (int b = 0; b < 3; ++b) bufs_[b] = bufs[b];
  elemSize_ = elemSize;
  reduction_ = reduction;
  tag_ = tag;
  step_ = recv_ = 0;
  chunk_ = posted_ = 0;
  block_ = 0;
  moved_ = flagSet_ = learned_ = false;
  error_.clear();
  fault_ = tl::Fault::None;
}

SlotRun::Result SlotRun::fail(std::string message, tl::Fault fault) {
  error_ = std::move(message);
  fault_ = fault;
  return Result::Failed;
}

SlotRun::Result SlotRun::poll() {
  const std::vector<SlotProgram::Step>& steps = program_->steps;
  while (step_ < steps.size()) {
    const SlotProgram::Step& st = steps[step_];
    if (st.merged) {
      const Result r = pollMerged(st, steps[step_ + 1]);
      if (r != Result::Done) return r;
      step_ += 2;
      recv_ = 0;
      posted_ = 0;
      continue;
    }
    if (st.stream) {
      const Result r = pollStream(st);
      if (r != Result::Done) return r;
    }
    while (posted_ < st.postChunks) {
      const std::span<std::byte> slot = link_->tryAcquire(tl::ShmLink::kEveryPeer);
      if (slot.empty()) return Result::Pending;
      if (st.block) {  // the slot is free: publishBlock takes it without waiting
        const tl::IoVec whole{at(st.send), st.send.count * elemSize_};
        const tl::Completion c = link_->publishBlock(
            tl::ShmLink::kEveryPeer, tl::ShmLink::Segments(&whole, 1),
            {reinterpret_cast<const std::byte*>(&tag_), SlotProgram::kHeaderBytes}, &block_);
        if (c.state != tl::Completion::State::Done) return fail(c.error, c.fault);
        ++posted_;
        moved_ = true;
        break;
      }
      postChunk(st, slot);
      moved_ = true;
    }
    while (recv_ < st.recvs.size()) {
      const SlotProgram::Recv& r = st.recvs[recv_];
      // One load of the flag while the post is not there; the link's bookkeeping once it is.
      if (!flagSet_) {
        flag_ = link_->nextFlag(r.writer, true);
        flagSet_ = true;
      }
      if (!flag_.ready()) return Result::Pending;
      flagSet_ = false;
      tl::ShmLink::Post post;
      if (!link_->tryPeek(r.writer, true, &post)) return Result::Pending;
      if (r.block) {
        const std::size_t n = r.dst.count * elemSize_;
        std::uint64_t tag = 0;
        if (post.block && post.meta.size() == SlotProgram::kHeaderBytes)
          std::memcpy(&tag, post.meta.data(), SlotProgram::kHeaderBytes);
        if (!post.block || tag != tag_ || post.blockBytes != n) {
          return fail(fmt::format(
              "step {}: the post of rank {} on its broadcast slots is {} of {} bytes of call "
              "{:#x}, this rank expects a block of {} bytes of call {:#x}: the ranks' calls do "
              "not match",
              step_, r.writer, post.block ? "a block" : "inline data",
              post.block ? post.blockBytes : post.data.size(), tag, n, tag_));
        }
        const tl::Completion c = link_->read(post, 0, at(r.dst), n);
        link_->release(r.writer, true);
        if (c.state != tl::Completion::State::Done) return fail(c.error, c.fault);
        moved_ = true;
        ++recv_;
        continue;
      }
      const std::uint64_t first = chunk_ * program_->chunkElems;
      const std::size_t n = std::min(program_->chunkElems, r.dst.count - first) * elemSize_;
      std::uint64_t tag = 0;
      if (!post.block && post.data.size() >= SlotProgram::kHeaderBytes)
        std::memcpy(&tag, post.data.data(), SlotProgram::kHeaderBytes);
      const std::size_t off = SlotProgram::dataOffset(post.data.data(), n);
      if (post.block || tag != tag_ || post.data.size() != off + n) {
        return fail(fmt::format(
            "step {}: the post of rank {} on its broadcast slots is {} bytes of call {:#x}, this "
            "rank expects {} bytes of call {:#x} (slot {} of {}): the ranks' calls do not match",
            step_, r.writer, post.data.size() - std::min(post.data.size(), off), tag, n, tag_,
            chunk_ + 1, r.chunks));
      }
      if (n) std::memcpy(at(r.dst) + first * elemSize_, post.data.data() + off, n);
      link_->release(r.writer, true);
      moved_ = true;
      if (++chunk_ < r.chunks) continue;
      chunk_ = 0;
      ++recv_;
    }
    // The sent slice stays as it is until every reader copied it (ops may write it).
    if (block_ != 0) {
      if (!link_->released(tl::ShmLink::kEveryPeer, block_)) return Result::Pending;
      block_ = 0;
      moved_ = true;
    }
    for (const algo::LocalOp& op : st.ops) {
      if (st.fused) break;  // reduced chunk by chunk as the receive streamed in
      if (op.kind == algo::OpKind::Copy) {
        std::memmove(at(op.dst), at(op.a), op.dst.count * elemSize_);
      } else {
        reduction_->apply(at(op.dst), at(op.a), at(op.b), op.dst.count);
      }
    }
    ++step_;
    recv_ = 0;
    posted_ = 0;
  }
  return Result::Done;
}

SlotRun::Result SlotRun::badChunk(const tl::ShmLink::Post& post, const SlotProgram::Recv& r,
                                  std::uint32_t chunk, std::size_t n) {
  std::uint64_t tag = 0;
  if (!post.block && post.data.size() >= SlotProgram::kHeaderBytes)
    std::memcpy(&tag, post.data.data(), SlotProgram::kHeaderBytes);
  const std::size_t off = SlotProgram::dataOffset(post.data.data(), n);
  if (!post.block && tag == tag_ && post.data.size() == off + n) return Result::Done;
  return fail(fmt::format(
      "step {}: the post of rank {} on its broadcast slots is {} bytes of call {:#x}, this "
      "rank expects {} bytes of call {:#x} (slot {} of {}): the ranks' calls do not match",
      step_, r.writer,
      post.block ? post.blockBytes : post.data.size() - std::min(post.data.size(), off), tag, n,
      tag_, chunk + 1, r.chunks));
}

// Chunk posted_ of the step's post into `slot`, behind the call's header, published.
void SlotRun::postChunk(const SlotProgram::Step& st, std::span<std::byte> slot) {
  const std::uint64_t first = posted_ * program_->chunkElems;
  const std::size_t n = std::min(program_->chunkElems, st.send.count - first) * elemSize_;
  const std::size_t off = SlotProgram::dataOffset(slot.data(), n);
  std::memcpy(slot.data(), &tag_, SlotProgram::kHeaderBytes);
  if (n) std::memcpy(slot.data() + off, at(st.send) + first * elemSize_, n);
  const bool last = fence_ && step_ + 1 == program_->steps.size() && posted_ + 1 == st.postChunks;
  link_->publish(tl::ShmLink::kEveryPeer, off + n, last);
  ++posted_;
}

// Every rank writes its chunks in order as its readers free slots and takes every chunk that
// arrived, in each writer's order: a writer waits only for readers that keep reading, so the
// step needs no more slots than the channel has, whatever its length. A chunk is copied out
// (or reduced, fused) before its slot is released, as in poll().
SlotRun::Result SlotRun::pollStream(const SlotProgram::Step& st) {
  const std::size_t R = st.recvs.size();
  if (posted_ == 0 && recv_ == 0) {
    got_.assign(R, 0);
    recv_ = R;  // marks got_ as set for this step; poll()'s receive loop then has nothing left
  }
  const std::uint64_t ce = program_->chunkElems;
  for (;;) {
    bool moved = false;
    if (posted_ < st.postChunks) {
      const std::span<std::byte> slot = link_->tryAcquire(tl::ShmLink::kEveryPeer);
      if (!slot.empty()) {
        postChunk(st, slot);
        moved = true;
      }
    }
    bool done = posted_ == st.postChunks;
    for (std::size_t i = 0; i < R; ++i) {
      const SlotProgram::Recv& r = st.recvs[i];
      if (got_[i] == r.chunks) continue;
      tl::ShmLink::Post post;
      if ((!st.gated || got_[i] < posted_) && link_->tryPeek(r.writer, true, &post)) {
        const std::uint64_t first = got_[i] * ce;
        const std::uint64_t count = std::min(ce, r.dst.count - first);
        const std::size_t n = count * elemSize_;
        if (badChunk(post, r, got_[i], n) == Result::Failed) return Result::Failed;
        const std::byte* const data =
            post.data.data() + SlotProgram::dataOffset(post.data.data(), n);
        if (st.fused) {
          const algo::LocalOp& op = st.ops[0];
          const std::size_t off = first * elemSize_;
          const std::byte* const mine = at(st.fusedB ? op.a : op.b) + off;
          reduction_->apply(at(op.dst) + off, st.fusedB ? mine : data, st.fusedB ? data : mine,
                            count);
        } else if (n) {
          std::memcpy(at(r.dst) + first * elemSize_, data, n);
        }
        link_->release(r.writer, true);
        ++got_[i];
        moved = true;
      }
      done = done && got_[i] == r.chunks;
    }
    if (moved) moved_ = true;
    if (done) return Result::Done;
    if (!moved) return Result::Pending;
  }
}

// As pollStream, over the fixed orders of Step::merged: got_[0] counts the writer's posts taken,
// got_[1] the chunks this rank reduced (an AllGather chunk is posted once its chunk is reduced).
// The chunk copies stay glibc memcpy and the reduction writes its destination with ordinary
// stores: in an emulation of this stream (np=2, 16 MiB fp32, 4 KiB pages, same-run rounds),
// streaming stores for the AllGather copy-out were no faster (0.95-1.12x the time), streaming
// stores for the reduced chunk 1.15-1.29x slower (the AllGather post reads it back from DRAM),
// an AVX2 copy loop 1.47-1.64x (memcpy of 64 KiB is a rep movsb here), reducing into cache
// then copying out 0.96-1.37x, streaming stores to the receive buffer with the AllGather post
// reduced again from the held slot 1.5-1.7x, streaming stores into the slots 0.79-1.19x (median
// 0.99), prefetching the next slot 0.93-1.08x, user buffers collapsed into 2 MiB pages 0.87-1.09x.
// Timed per call as the emulation is (median of the slower rank), the engine takes 1.04x its
// time (0.97-1.16, 6 rounds): the stream is bound by the memory and core-to-core traffic, not
// by the code around it.
SlotRun::Result SlotRun::pollMerged(const SlotProgram::Step& st, const SlotProgram::Step& next) {
  if (posted_ == 0 && recv_ == 0) {
    got_.assign(2, 0);
    recv_ = 1;  // got_ set for this step
  }
  const std::uint64_t ce = program_->chunkElems;
  const auto chunk = [&](const algo::Slice& s, std::uint32_t i, std::size_t* bytes) {
    const std::uint64_t first = std::uint64_t{i} * ce;
    *bytes = std::min(ce, s.count - first) * elemSize_;
    return at(s) + first * elemSize_;
  };
  const SlotProgram::Recv& rs = st.recvs[0];
  const SlotProgram::Recv& ag = next.recvs[0];
  for (;;) {
    bool moved = false;
    if (posted_ < st.mine.size()) {
      const std::int32_t item = st.mine[posted_];
      const bool ready = item >= 0 || static_cast<std::uint32_t>(-1 - item) < got_[1];
      const std::span<std::byte> slot =
          ready ? link_->tryAcquire(tl::ShmLink::kEveryPeer) : std::span<std::byte>{};
      if (!slot.empty()) {
        std::size_t n = 0;
        const std::byte* src = item >= 0
                                   ? chunk(st.send, static_cast<std::uint32_t>(item), &n)
                                   : chunk(next.send, static_cast<std::uint32_t>(-1 - item), &n);
        const std::size_t off = SlotProgram::dataOffset(slot.data(), n);
        std::memcpy(slot.data(), &tag_, SlotProgram::kHeaderBytes);
        if (n) std::memcpy(slot.data() + off, src, n);
        link_->publish(tl::ShmLink::kEveryPeer, off + n);
        ++posted_;
        moved = true;
      }
    }
    tl::ShmLink::Post post;
    if (got_[0] < st.theirs.size() && link_->tryPeek(rs.writer, true, &post)) {
      const std::int32_t item = st.theirs[got_[0]];
      const bool reduce = item >= 0;
      const auto i = static_cast<std::uint32_t>(reduce ? item : -1 - item);
      std::size_t n = 0;
      std::byte* const dst = chunk(reduce ? rs.dst : ag.dst, i, &n);
      if (badChunk(post, reduce ? rs : ag, i, n) == Result::Failed) return Result::Failed;
      const std::byte* const data = post.data.data() + SlotProgram::dataOffset(post.data.data(), n);
      if (reduce) {
        const algo::LocalOp& op = st.ops[0];
        const std::size_t off = std::uint64_t{i} * ce * elemSize_;
        const std::byte* const own = at(st.fusedB ? op.a : op.b) + off;
        reduction_->apply(at(op.dst) + off, st.fusedB ? own : data, st.fusedB ? data : own,
                          n / elemSize_);
        ++got_[1];
      } else if (n) {
        std::memcpy(dst, data, n);
      }
      link_->release(rs.writer, true);
      ++got_[0];
      moved = true;
    }
    if (moved) moved_ = true;
    if (posted_ == st.mine.size() && got_[0] == st.theirs.size()) return Result::Done;
    if (!moved) return Result::Pending;
  }
}

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

SlotRun::Result SlotRun::spin(unsigned polls) {
  Result r = poll();
  for (unsigned i = 1; i < polls && r == Result::Pending; ++i) {
    // Waiting for a peer's post: spin on its flag alone (one load a turn), then take it.
    if (flagSet_) {
      // Idle until the peer posts: the moment to learn what the readers of this rank's posts
      // released (a line transfer), once a call, instead of when a later post needs its slot.
      // Every call, not only when the next slots are not known free: measured at np=2 (OSU 5.7,
      // 8 rounds), learning only then left 8-32 B AllReduce 9-14% and Barrier 18% slower.
      if (!learned_) {
        link_->learnReleased(tl::ShmLink::kEveryPeer);
        learned_ = true;
      }
      i = waitFlag(i, polls);
      if (!flag_.ready()) break;
    } else {
      cpuRelax();
    }
    r = poll();
  }
  return r;
}

// Kept out of line: its cost is the idle waiting, which an instruction profile then shows apart.
__attribute__((noinline)) unsigned SlotRun::waitFlag(unsigned i, unsigned polls) const {
  while (i < polls && !flag_.ready()) {
    cpuRelax();
    ++i;
  }
  return i;
}

void SlotRun::abandon() {
  if (block_ != 0 && link_) link_->revoke(tl::ShmLink::kEveryPeer, block_);
  block_ = 0;
}

int SlotRun::waitingFor() const {
  if (!program_ || step_ >= program_->steps.size()) return -1;
  const SlotProgram::Step& st = program_->steps[step_];
  if (st.merged) return got_.size() == 2 && got_[0] < st.theirs.size() ? st.recvs[0].writer : -1;
  if (st.stream)
    for (std::size_t i = 0; i < st.recvs.size() && i < got_.size(); ++i)
      if (got_[i] < st.recvs[i].chunks) return st.recvs[i].writer;
  if (posted_ < st.postChunks) return -1;
  return recv_ < st.recvs.size() ? st.recvs[recv_].writer : -1;
}

}  // namespace hccl::engine
