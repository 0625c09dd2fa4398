#include "ucx_tl/shm_bootstrap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace hccl::tl::shm {

namespace {

constexpr std::uint32_t kRecordMagic = 0x4d485348;  // "HSHM"

class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  void bytes(std::span<const std::byte> b) {
    put(static_cast<std::uint32_t>(b.size()));
    out.insert(out.end(), b.begin(), b.end());
  }
  std::vector<std::byte> out;
};

class Reader {
 public:
  Reader(std::span<const std::byte> in, int rank) : in_(in), rank_(rank) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::vector<std::byte> bytes() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::vector<std::byte> v(in_.begin() + static_cast<std::ptrdiff_t>(at_),
                             in_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return v;
  }

 private:
  void need(std::size_t n) const {
    if (at_ + n > in_.size()) {
      throw UcxError(
          fmt::format("shared-memory link bootstrap: rank {}'s record is malformed ({} bytes)",
                      rank_, in_.size()));
    }
  }
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
  int rank_;
};

}  // namespace

std::vector<std::byte> encode(const Record& r) {
  Writer w;
  w.put(kRecordMagic);
  w.bytes(std::as_bytes(std::span(r.error.data(), r.error.size())));
  if (!r.error.empty()) return w.out;
  w.put(r.process);
  w.bytes(r.address);
  w.put(r.probeAddress);
  w.put(r.probeValue);
  w.put(r.source);
  w.put(r.token);
  w.put(r.segmentBase);
  w.put(r.segmentBytes);
  w.bytes(r.rkey);
  w.put(r.cmaNanos);
  w.put(r.copyNanos);
  w.put(r.yields);
  return w.out;
}

Record decode(std::span<const std::byte> bytes, int rank) {
  Reader in(bytes, rank);
  if (in.get<std::uint32_t>() != kRecordMagic) {
    throw UcxError(fmt::format(
        "shared-memory link bootstrap: the all-gather put something that is not a record at "
        "rank {}'s position",
        rank));
  }
  Record r;
  const auto error = in.bytes();
  r.error.assign(reinterpret_cast<const char*>(error.data()), error.size());
  if (!r.error.empty()) return r;
  r.process = in.get<ucx::ProcessId>();
  r.address = in.bytes();
  r.probeAddress = in.get<std::uint64_t>();
  r.probeValue = in.get<std::uint64_t>();
  r.source = in.get<std::uint8_t>();
  r.token = in.get<std::array<std::uint8_t, 16>>();
  r.segmentBase = in.get<std::uint64_t>();
  r.segmentBytes = in.get<std::uint64_t>();
  r.rkey = in.bytes();
  r.cmaNanos = in.get<std::uint64_t>();
  r.copyNanos = in.get<std::uint64_t>();
  r.yields = in.get<std::uint8_t>();
  return r;
}

std::vector<std::vector<std::byte>> gatherBlobs(const AllGather& allGather, int size,
                                                std::span<const std::byte> mine, const char* what) {
  const auto n = static_cast<std::size_t>(size);
  auto gather = [&](std::span<const std::byte> part, std::span<std::byte> all) {
    try {
      allGather(part, all);
    } catch (const std::exception& e) {
      throw UcxError(fmt::format("shared-memory link bootstrap: the all-gather of {} failed: {}",
                                 what, e.what()));
    }
  };
  const auto length = static_cast<std::uint64_t>(mine.size());
  std::vector<std::uint64_t> lengths(n);
  gather(std::as_bytes(std::span(&length, 1)), std::as_writable_bytes(std::span(lengths)));
  const std::uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<std::byte> padded(longest);
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<std::byte> all(longest * n);
  gather(padded, all);
  std::vector<std::vector<std::byte>> out(n);
  for (std::size_t r = 0; r < n; ++r) {
    if (lengths[r] > longest) throw UcxError("shared-memory link bootstrap: inconsistent lengths");
    const auto* p = all.data() + r * longest;
    out[r].assign(p, p + lengths[r]);
  }
  return out;
}

}  // namespace hccl::tl::shm
