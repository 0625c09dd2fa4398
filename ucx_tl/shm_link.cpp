// ShmLink: the slot protocol and single-copy transfers; set-up in shm_link_setup.cpp, see
// shm_link.hpp.
#include "ucx_tl/shm_link.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <fstream>

#include "ucx_tl/shm_link_impl.hpp"

namespace hccl::tl {

const char* name(SingleCopy s) {
  switch (s) {
    case SingleCopy::Auto:
      return "auto";
    case SingleCopy::Cma:
      return "cma";
    case SingleCopy::UcxRma:
      return "ucx-rma";
    case SingleCopy::None:
      return "none";
  }
  return "?";
}

using namespace shm_detail;

namespace {

// The file backing the mapping that holds `address`, from /proc/self/maps.
std::string mappingPath(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || a < lo || a >= hi) continue;
    const auto slash = line.find('/');
    return slash == std::string::npos ? std::string() : line.substr(slash);
  }
  return {};
}

}  // namespace

// ---- queries ------------------------------------------------------------------------------------

int ShmLink::rank() const {
  return impl_->rank;
}
int ShmLink::size() const {
  return impl_->size;
}
const std::vector<int>& ShmLink::localRanks() const {
  return impl_->localRanks;
}
bool ShmLink::local(int peer) const {
  return peer >= 0 && peer < impl_->size &&
         impl_->localIndexOf[static_cast<std::size_t>(peer)] >= 0;
}
std::size_t ShmLink::slotBytes() const {
  return impl_->layout.slotBytes;
}
std::size_t ShmLink::slotsPerChannel() const {
  return impl_->layout.slotsPerChannel;
}
SingleCopy ShmLink::singleCopy() const {
  return impl_->singleCopy;
}
double ShmLink::copyRatio() const {
  return impl_->copyRatio;
}
std::size_t ShmLink::segmentBytes() const {
  return impl_->base == nullptr ? 0 : impl_->layout.bytes();
}
void ShmLink::setYield(bool yield) {
  impl_->options.yield = yield;
}
std::string ShmLink::segmentPath() const {
  return impl_->base == nullptr ? std::string() : mappingPath(impl_->base);
}
const void* ShmLink::segmentBase() const {
  return impl_->base;
}

std::string ShmLink::describe() const {
  const auto& s = *impl_;
  if (s.base == nullptr)
    return fmt::format("shared-memory link: rank {} has no peer on its server\n", s.rank);
  return fmt::format(
      "shared-memory link: ranks {} on one segment of {} bytes ({} slots of {} bytes per "
      "channel; {}: {}), single copy: {}{}\n",
      fmt::join(s.localRanks, ","), s.layout.bytes(), s.layout.slotsPerChannel, s.layout.slotBytes,
      s.options.segment == SegmentSource::Memfd ? "memfd" : "UCX posix", segmentPath(),
      name(s.singleCopy),
      s.copyRatio > 0 ? fmt::format(" ({:.2f} times a memcpy's time at {} MiB)", s.copyRatio,
                                    kCopyProbeBytes >> 20)
                      : std::string());
}

void ShmLink::progress() {
  if (impl_->ucx) impl_->ucx->progress();
}

// ---- writer side --------------------------------------------------------------------------------

std::span<std::byte> ShmLink::tryAcquire(int reader) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "tryAcquire");
  auto& w = s.writing[r];
  const std::uint64_t next = w.published + 1;
  if (next > s.layout.slotsPerChannel && !s.releasedBy(r, next - s.layout.slotsPerChannel)) {
    return {};
  }
  w.acquired = true;
  return {s.payload(s.me, r, next), s.layout.slotBytes};
}

Completion ShmLink::acquire(int reader, std::span<std::byte>* slot) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "acquire");
  const std::uint64_t next = s.writing[r].published + 1;
  Completion c =
      s.waitFor([&] { return !(*slot = tryAcquire(reader)).empty(); }, s.readersOfChannel(r),
                [&] {
                  return fmt::format(
                      "post {} on the {} over the HCCS class (shared memory): post {} "
                      "not yet released by its readers",
                      next, s.channelName(s.me, r), next - s.layout.slotsPerChannel);
                });
  return c;
}

std::uint64_t ShmLink::publish(int reader, std::size_t bytes, bool fence) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "publish");
  auto& w = s.writing[r];
  if (!w.acquired) {
    throw std::logic_error(fmt::format("ShmLink::publish on the {} without acquiring its slot",
                                       s.channelName(s.me, r)));
  }
  if (bytes > s.layout.slotBytes) {
    throw std::invalid_argument(
        fmt::format("ShmLink::publish: {} bytes exceed the slot's {}", bytes, s.layout.slotBytes));
  }
  const std::uint64_t number = s.commit(r, bytes, shm::PostKind::Inline, fence);
  if (!w.registered.empty()) s.unregisterReleased(r);
  return number;
}

Completion ShmLink::post(int reader, std::span<const std::byte> bytes, std::uint64_t* number) {
  auto& s = *impl_;
  if (bytes.size() > s.layout.slotBytes) {
    throw std::invalid_argument(fmt::format(
        "ShmLink::post: {} bytes exceed the slot's {} (use publishBlock for larger blocks)",
        bytes.size(), s.layout.slotBytes));
  }
  std::span<std::byte> slot;
  Completion c = acquire(reader, &slot);
  if (c.state != Completion::State::Done) return c;
  if (!bytes.empty()) std::memcpy(slot.data(), bytes.data(), bytes.size());
  const std::uint64_t n = publish(reader, bytes.size());
  if (number != nullptr) *number = n;
  c.bytes = bytes.size();
  return c;
}

Completion ShmLink::publishBlock(int reader, void* data, std::size_t bytes, std::uint64_t* number) {
  const IoVec one{data, bytes};
  return publishBlock(reader, Segments(&one, 1), {}, number);
}

bool ShmLink::blockFits(std::size_t segments, std::size_t metaBytes) const {
  return descriptorBytes(segments, 0, metaBytes) <= impl_->layout.slotBytes;
}

Completion ShmLink::publishBlock(int reader, Segments segments, std::span<const std::byte> meta,
                                 std::uint64_t* number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "publishBlock");
  if (s.singleCopy == SingleCopy::None) {
    throw std::logic_error(
        "ShmLink::publishBlock: this link has no single copy (SingleCopy::None): send the block "
        "through slots");
  }
  if (segments.size() != 1 && s.singleCopy != SingleCopy::Cma) {
    throw std::invalid_argument(
        fmt::format("ShmLink::publishBlock: a block of {} ranges needs CMA (single copy here: {})",
                    segments.size(), name(s.singleCopy)));
  }
  if (!blockFits(segments.size(), meta.size())) {
    throw std::invalid_argument(fmt::format(
        "ShmLink::publishBlock: {} ranges and {} meta bytes do not fit in a slot of {} bytes",
        segments.size(), meta.size(), s.layout.slotBytes));
  }
  std::span<std::byte> slot;
  Completion c = acquire(reader, &slot);
  if (c.state != Completion::State::Done) return c;
  BlockDescriptor d{0, static_cast<std::uint32_t>(segments.size()), 0,
                    static_cast<std::uint32_t>(meta.size()), 0};
  std::byte* at = slot.data() + sizeof d;
  for (const IoVec& v : segments) {
    const BlockSegment seg{reinterpret_cast<std::uint64_t>(v.base), v.length};
    std::memcpy(at, &seg, sizeof seg);
    at += sizeof seg;
    d.bytes += v.length;
  }
  if (s.singleCopy == SingleCopy::UcxRma) {
    std::string why;
    auto reg = s.ucx->registerBlock(segments[0].base, segments[0].length, &why);
    if (!why.empty() ||
        descriptorBytes(segments.size(), reg.rkey.size(), meta.size()) > slot.size()) {
      s.writing[r].acquired = false;
      if (reg.memh != nullptr) s.ucx->unregister(reg);
      c.state = Completion::State::Failed;
      c.fault = Fault::Transport;
      c.error = fmt::format("block of {} bytes on the {}: {}", d.bytes, s.channelName(s.me, r),
                            why.empty() ? "its rkey does not fit in a slot" : why);
      return c;
    }
    d.rkeyBytes = static_cast<std::uint32_t>(reg.rkey.size());
    std::memcpy(at, reg.rkey.data(), reg.rkey.size());
    at += reg.rkey.size();
    s.writing[r].registered.emplace_back(s.writing[r].published + 1, std::move(reg));
  }
  if (!meta.empty()) std::memcpy(at, meta.data(), meta.size());
  at += meta.size();
  std::memcpy(slot.data(), &d, sizeof d);
  const std::uint64_t n =
      s.commit(r, static_cast<std::size_t>(at - slot.data()), shm::PostKind::Block);
  if (number != nullptr) *number = n;
  c.bytes = d.bytes;
  return c;
}

void ShmLink::revoke(int reader, std::uint64_t number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "revoke");
  if (number == 0 || number > s.writing[r].published) {
    throw std::invalid_argument(fmt::format("ShmLink::revoke: post {} of the {} is not published",
                                            number, s.channelName(s.me, r)));
  }
  if (s.releasedBy(r, number)) return;
  s.control(s.me, r, number).revoked.store(1, std::memory_order_seq_cst);
}

void ShmLink::learnReleased(int reader) const {
  const auto& s = *impl_;
  (void)s.releasedBy(s.readerIndex(reader, "learnReleased"), ~std::uint64_t{0});
}

bool ShmLink::released(int reader, std::uint64_t number) const {
  auto& s = *impl_;
  return s.releasedBy(s.readerIndex(reader, "released"), number);
}

Completion ShmLink::waitReleased(int reader, std::uint64_t number) {
  auto& s = *impl_;
  const std::size_t r = s.readerIndex(reader, "waitReleased");
  Completion c = s.waitFor(
      [&] { return s.releasedBy(r, number); }, s.readersOfChannel(r),
      [&] {
        return fmt::format("post {} on the {} over the HCCS class (shared memory): not released",
                           number, s.channelName(s.me, r));
      });
  if (c.state == Completion::State::Done && !s.writing[r].registered.empty()) {
    s.unregisterReleased(r);
  }
  return c;
}

// ---- reader side --------------------------------------------------------------------------------

bool ShmLink::Impl::postAt(std::size_t w, bool broadcast, std::uint64_t number, Post* post) const {
  const std::size_t r = broadcast ? w : me;
  const auto& ctl = control(w, r, number);
  if (ctl.seq.load(std::memory_order_acquire) != number) return false;
  post->number = number;
  post->writer = localRanks[w];
  post->broadcast = broadcast;
  post->block = ctl.kind == shm::PostKind::Block;
  post->data = {payload(w, r, number), static_cast<std::size_t>(ctl.bytes)};
  post->blockBytes = 0;
  post->meta = {};
  if (post->block) {
    BlockDescriptor d;
    std::memcpy(&d, post->data.data(), sizeof d);
    post->blockBytes = d.bytes;
    post->meta = post->data.subspan(descriptorBytes(d.segments, d.rkeyBytes, 0), d.metaBytes);
  }
  return true;
}

void ShmLink::Impl::releaseNumber(std::size_t w, bool broadcast, std::uint64_t number) {
  Reading& g = reading(w, broadcast);
  if (number <= g.released || number > g.taken || ((g.done >> (number - g.released - 1)) & 1)) {
    const std::size_t r = broadcast ? w : me;
    throw std::logic_error(
        fmt::format("ShmLink::release: post {} of the {} is not held", number, channelName(w, r)));
  }
  g.done |= std::uint64_t{1} << (number - g.released - 1);
  if ((g.done & 1) == 0) return;
  while (g.done & 1) {
    g.done >>= 1;
    ++g.released;
  }
  ack(me, w, broadcast).released.store(g.released, std::memory_order_release);
}

bool ShmLink::tryPeek(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "tryPeek");
  return s.postAt(w, broadcast, s.reading(w, broadcast).released + 1, post);
}

Completion ShmLink::peek(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "peek");
  const std::uint64_t next = s.reading(w, broadcast).released + 1;
  Completion c = s.waitFor(
      [&] { return tryPeek(writer, broadcast, post); }, [w](const auto& f) { f(w); },
      [&] {
        return fmt::format("post {} on the {} over the HCCS class (shared memory): not published",
                           next, s.channelName(w, broadcast ? w : s.me));
      });
  if (c.state == Completion::State::Done)
    c.bytes = post->block ? post->blockBytes : post->data.size();
  return c;
}

void ShmLink::release(int writer, bool broadcast) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "release");
  Impl::Reading& g = s.reading(w, broadcast);
  const std::uint64_t next = g.released + 1;
  const std::size_t r = broadcast ? w : s.me;
  if (s.control(w, r, next).seq.load(std::memory_order_acquire) != next) {
    throw std::logic_error(fmt::format("ShmLink::release: the {} has no unreleased post {}",
                                       s.channelName(w, r), next));
  }
  g.taken = std::max(g.taken, next);
  if (g.done == 0) {  // nothing released out of order: the oldest post alone is acknowledged
    g.released = next;
    s.ack(s.me, w, broadcast).released.store(next, std::memory_order_release);
    return;
  }
  s.releaseNumber(w, broadcast, next);
}

ShmLink::Flag ShmLink::nextFlag(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "nextFlag");
  const std::uint64_t next = s.reading(w, broadcast).released + 1;
  return {&s.control(w, broadcast ? w : s.me, next).seq, next};
}

bool ShmLink::tryTake(int writer, bool broadcast, Post* post) {
  auto& s = *impl_;
  const std::size_t w = s.writerIndex(writer, "tryTake");
  Impl::Reading& g = s.reading(w, broadcast);
  if (g.taken - g.released >= s.layout.slotsPerChannel) return false;
  if (!s.postAt(w, broadcast, g.taken + 1, post)) return false;
  ++g.taken;
  return true;
}

void ShmLink::releasePost(const Post& post) {
  auto& s = *impl_;
  s.releaseNumber(s.writerIndex(post.writer, "releasePost"), post.broadcast, post.number);
}

std::size_t ShmLink::held(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const Impl::Reading& g = s.reading(s.writerIndex(writer, "held"), broadcast);
  return static_cast<std::size_t>(g.taken - g.released) -
         static_cast<std::size_t>(std::popcount(g.done));
}

bool ShmLink::windowFull(int writer, bool broadcast) const {
  const auto& s = *impl_;
  const Impl::Reading& g = s.reading(s.writerIndex(writer, "windowFull"), broadcast);
  return g.taken - g.released >= s.layout.slotsPerChannel;
}

bool ShmLink::peerRunning(int peer) const {
  const auto& s = *impl_;
  const ucx::ProcessId& p = s.processes[s.localOf(peer, "peerRunning")];
  return p.startTime == 0 || ucx::isRunning(p);
}

std::string ShmLink::channelState(int peer) const {
  const auto& s = *impl_;
  const std::size_t j = s.localOf(peer, "channelState");
  const Impl::Reading& g = s.reading(j, false);
  const std::uint64_t acked = s.ack(j, s.me, false).released.load(std::memory_order_acquire);
  return fmt::format(
      "to rank {}: {} posts published, {} released by it; from rank {}: {} taken, {} released "
      "({} out of order)",
      peer, s.writing[j].published, acked, peer, g.taken, g.released, std::popcount(g.done));
}

const ShmOptions& ShmLink::options() const {
  return impl_->options;
}

// ---- single copy --------------------------------------------------------------------------------

namespace {

// How long a failed copy waits for its peer's process to show as exited before it calls the
// failure the transport's (ucx::exitsWithin): exit tears the memory down first, then the
// process becomes a zombie; under load that takes a few milliseconds.
constexpr std::chrono::milliseconds kExitGrace{250};

struct BlockRef {
  BlockDescriptor d;
  std::span<const std::byte> segments;  // d.segments BlockSegments
  std::span<const std::byte> rkey;
  BlockSegment segment(std::size_t i) const {
    BlockSegment g;
    std::memcpy(&g, segments.data() + i * sizeof g, sizeof g);
    return g;
  }
};

BlockRef blockOf(const ShmLink::Post& post, std::size_t offset, std::size_t bytes,
                 const char* what) {
  if (!post.block) {
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: post {} of rank {} carries inline bytes, not a block", what,
                    post.number, post.writer));
  }
  BlockRef b;
  std::memcpy(&b.d, post.data.data(), sizeof b.d);
  if (offset > b.d.bytes || bytes > b.d.bytes - offset) {
    throw std::invalid_argument(
        fmt::format("ShmLink::{}: range [{}, {}) outside post {}'s block of {} bytes", what, offset,
                    offset + bytes, post.number, b.d.bytes));
  }
  b.segments = post.data.subspan(sizeof b.d, b.d.segments * sizeof(BlockSegment));
  b.rkey = post.data.subspan(sizeof b.d + b.segments.size(), b.d.rkeyBytes);
  return b;
}

}  // namespace

Completion ShmLink::Impl::copy(const Post& post, std::size_t offset, void* local, std::size_t bytes,
                               bool toPeer) {
  const char* what = toPeer ? "write" : "read";
  const std::size_t w = writerIndex(post.writer, what);
  const BlockRef b = blockOf(post, offset, bytes, what);
  std::string why;
  if (singleCopy == SingleCopy::Cma) {
    // The block's ranges that [offset, offset + bytes) covers, as the peer's side of one call.
    auto* at = static_cast<std::byte*>(local);
    std::size_t skip = offset, left = bytes;
    for (std::size_t i = 0; i < b.d.segments && left > 0 && why.empty(); ++i) {
      const BlockSegment g = b.segment(i);
      if (skip >= g.bytes) {
        skip -= g.bytes;
        continue;
      }
      const std::size_t n = std::min<std::size_t>(g.bytes - skip, left);
      why = shm::cmaCopy(processes[w].pid, at, g.address + skip, n, toPeer);
      at += n;
      left -= n;
      skip = 0;
    }
  } else {
    const BlockSegment g = b.segment(0);
    const auto start = Clock::now();
    const auto abort = [&] {
      if (!ucx::isRunning(processes[w])) {
        return fmt::format("the peer's process (pid {}) on this server has exited",
                           processes[w].pid);
      }
      if (options.timeout.count() > 0 && Clock::now() - start > options.timeout) {
        return fmt::format("no progress on this link for {} ms (the transport's timeout)",
                           options.timeout.count());
      }
      return std::string();
    };
    const auto peer = static_cast<int>(w);
    why = toPeer ? ucx->put(peer, b.rkey, g.address + offset, local, bytes, abort)
                 : ucx->get(peer, b.rkey, g.address + offset, local, bytes, abort);
  }
  Fault fault = Fault::Transport;
  // A copy that failed because the peer is gone (CMA answers ESRCH, or the mapping went with
  // it) is a lost peer, for the engine's diagnosis and the error class. A killed process's memory
  // goes before /proc shows it exited: give it kExitGrace to finish (failures only).
  if (!why.empty() && processes[w].startTime != 0 && ucx::exitsWithin(processes[w], kExitGrace)) {
    fault = Fault::PeerLost;
    // The copy's own reason (the mapping went, or no memory to attach) says less than this.
    why = fmt::format("the peer's process (pid {}) on this server has exited", processes[w].pid);
  }
  if (why.empty()) {
    // After the copy: a withdrawal that came before its end may have changed what it read.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const auto& ctl = control(w, post.broadcast ? w : me, post.number);
    if (ctl.revoked.load(std::memory_order_acquire) != 0) {
      why = "the writer withdrew the block (its call failed or was abandoned)";
      fault = Fault::Withdrawn;
    }
  }
  Completion c;
  if (why.empty()) {
    c.state = Completion::State::Done;
    c.bytes = bytes;
  } else {
    c.state = Completion::State::Failed;
    c.fault = fault;
    c.error = fmt::format("{} of {} bytes {} post {} of rank {} over the HCCS class ({}): {}", what,
                          bytes, toPeer ? "into" : "from", post.number, post.writer,
                          name(singleCopy), why);
  }
  return c;
}

Completion ShmLink::read(const Post& post, std::size_t offset, void* dst, std::size_t bytes) {
  return impl_->copy(post, offset, dst, bytes, false);
}

Completion ShmLink::write(const Post& post, std::size_t offset, const void* src,
                          std::size_t bytes) {
  return impl_->copy(post, offset, const_cast<void*>(src), bytes, true);
}

Completion ShmLink::stream(
    const Post& post, std::size_t offset, std::size_t bytes, std::size_t piece,
    const std::function<void(std::span<const std::byte>, std::size_t)>& consume) {
  auto& s = *impl_;
  if (piece == 0) throw std::invalid_argument("ShmLink::stream: piece of 0 bytes");
  blockOf(post, offset, bytes, "stream");
  if (s.bounce.size() < std::min(piece, bytes)) s.bounce.resize(std::min(piece, bytes));
  Completion c;
  c.state = Completion::State::Done;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(piece, bytes - done);
    c = read(post, offset + done, s.bounce.data(), n);
    if (c.state != Completion::State::Done) return c;
    consume({s.bounce.data(), n}, done);
    done += n;
  }
  c.bytes = bytes;
  return c;
}

}  // namespace hccl::tl
