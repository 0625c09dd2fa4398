#include "coll_hccl/engine/slot_executor.hpp"

#include <fmt/format.h>

#include <cstring>

namespace hccl::engine {

bool SlotProgram::compile(std::span<const algo::RankSchedule* const> schedules, std::uint32_t me,
                          std::span<const int> linkRank, std::size_t elemSize,
                          std::size_t payloadBytes, SlotProgram& out, std::string& why,
                          std::size_t window, std::size_t blockFromBytes, bool stream,
                          std::size_t blockBelowBytes) {
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
      if (!stream && !out.blockPost(sent->count) && out.chunksOf(sent->count) > window) {
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

  // A step streams when its post or a receive spans more than the window; it then takes its
  // receives' chunks in any order, so their writers must be distinct (every rank checks every
  // rank's steps: all agree on whether the call runs here).
  const auto spans = [&](std::uint64_t count) {
    return !out.blockPost(count) && out.chunksOf(count) > window;
  };
  for (std::size_t r = 0; stream && r < p; ++r)
    for (std::size_t s = 0; s < schedules[r]->steps.size(); ++s) {
      bool streams = false, blocks = false;
      std::fill(seen.begin(), seen.end(), false);
      bool distinct = true;
      for (const algo::Transfer& x : schedules[r]->steps[s].xfers) {
        streams = streams || spans(x.slice.count);
        blocks = blocks || out.blockPost(x.slice.count);
        if (x.dir != algo::Dir::Recv) continue;
        distinct = distinct && !seen[x.peer];
        seen[x.peer] = true;
      }
      if (streams && !distinct) {
        why = fmt::format("rank {} step {} streams and receives twice from one writer", r, s);
        return false;
      }
      if (streams && blocks) {
        why = fmt::format("rank {} step {} streams and moves a block", r, s);
        return false;
      }
    }

  out.steps.clear();
  for (const algo::Step& st : schedules[me]->steps) {
    Step& mine = out.steps.emplace_back();
    for (const algo::Transfer& x : st.xfers) mine.stream = mine.stream || spans(x.slice.count);
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
  }
  return true;
}

void SlotRun::begin(const SlotProgram& program, tl::ShmLink& link, std::byte* const bufs[3],
                    std::size_t elemSize, Reduction* reduction, std::uint64_t tag) {
  program_ = &program;
  link_ = &link;
  for (int b = 0; b < 3; ++b) bufs_[b] = bufs[b];
  elemSize_ = elemSize;
  reduction_ = reduction;
  tag_ = tag;
  step_ = recv_ = 0;
  chunk_ = posted_ = 0;
  block_ = 0;
  got_.clear();
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
      if (takeChunk(r, chunk_, post) == Result::Failed) return Result::Failed;
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
      if (op.kind == algo::OpKind::Copy) {
        std::memmove(at(op.dst), at(op.a), op.dst.count * elemSize_);
      } else {
        reduction_->apply(at(op.dst), at(op.a), at(op.b), op.dst.count);
      }
    }
    ++step_;
    recv_ = 0;
    posted_ = 0;
    got_.clear();
  }
  return Result::Done;
}

void SlotRun::postChunk(const SlotProgram::Step& st, std::span<std::byte> slot) {
  const std::uint64_t first = posted_ * program_->chunkElems;
  const std::size_t n = std::min(program_->chunkElems, st.send.count - first) * elemSize_;
  std::memcpy(slot.data(), &tag_, SlotProgram::kHeaderBytes);
  if (n) std::memcpy(slot.data() + SlotProgram::kHeaderBytes, at(st.send) + first * elemSize_, n);
  link_->publish(tl::ShmLink::kEveryPeer, SlotProgram::kHeaderBytes + n);
  ++posted_;
  moved_ = true;
}

SlotRun::Result SlotRun::takeChunk(const SlotProgram::Recv& r, std::uint32_t chunk,
                                   const tl::ShmLink::Post& post) {
  const std::uint64_t first = chunk * program_->chunkElems;
  const std::size_t n = std::min(program_->chunkElems, r.dst.count - first) * elemSize_;
  std::uint64_t tag = 0;
  if (!post.block && post.data.size() >= SlotProgram::kHeaderBytes)
    std::memcpy(&tag, post.data.data(), SlotProgram::kHeaderBytes);
  if (post.block || tag != tag_ || post.data.size() != SlotProgram::kHeaderBytes + n) {
    return fail(fmt::format(
        "step {}: the post of rank {} on its broadcast slots is {} bytes of call {:#x}, this "
        "rank expects {} bytes of call {:#x} (slot {} of {}): the ranks' calls do not match",
        step_, r.writer, post.data.size() - std::min(post.data.size(), SlotProgram::kHeaderBytes),
        tag, n, tag_, chunk + 1, r.chunks));
  }
  if (n)
    std::memcpy(at(r.dst) + first * elemSize_, post.data.data() + SlotProgram::kHeaderBytes, n);
  link_->release(r.writer, true);
  moved_ = true;
  return Result::Done;
}

// Posts and takes in turns until neither moves: a rank whose ring is full (its readers have not
// released its earlier chunks) goes on taking its writers' chunks, so every reader drains every
// writer and no wait closes a cycle (p ranks reading each other in ring order would, with posts
// first). Such a step has no block (compile); its ops stay with poll(), after its transfers.
SlotRun::Result SlotRun::pollStream(const SlotProgram::Step& st) {
  if (got_.size() != st.recvs.size()) got_.assign(st.recvs.size(), 0);
  for (bool more = true; more;) {
    more = false;
    while (posted_ < st.postChunks) {
      const std::span<std::byte> slot = link_->tryAcquire(tl::ShmLink::kEveryPeer);
      if (slot.empty()) break;
      postChunk(st, slot);
      more = true;
    }
    for (std::size_t i = 0; i < st.recvs.size(); ++i) {
      const SlotProgram::Recv& r = st.recvs[i];
      tl::ShmLink::Post post;
      while (got_[i] < r.chunks && link_->tryPeek(r.writer, true, &post)) {
        if (takeChunk(r, got_[i], post) == Result::Failed) return Result::Failed;
        more = true;
        if (++got_[i] == r.chunks) ++recv_;
      }
    }
  }
  return posted_ < st.postChunks || recv_ < st.recvs.size() ? Result::Pending : Result::Done;
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
  if (st.stream) {  // the first writer whose chunks are not all here (recv_ counts, not indexes)
    for (std::size_t i = 0; i < st.recvs.size(); ++i)
      if (i >= got_.size() || got_[i] < st.recvs[i].chunks) return st.recvs[i].writer;
    return -1;
  }
  if (posted_ < st.postChunks) return -1;
  return recv_ < st.recvs.size() ? st.recvs[recv_].writer : -1;
}

}  // namespace hccl::engine
