#include "ucx_tl/ucx_bootstrap.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace hccl::tl::ucx {

namespace {

constexpr std::uint32_t kMagic = 0x48554358;  // "HUCX"
constexpr std::uint32_t kVersion = 2;

// Round one: fixed size, so the blob size of round two can be agreed on.
struct Header {
  std::uint32_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::uint32_t rank = 0;
  std::uint32_t size = 0;
  std::uint64_t fingerprint = 0;
  std::uint32_t blobLength = 0;
  std::uint32_t failed = 0;
};

void gather(const AllGather& allGather, std::span<const std::byte> mine, std::span<std::byte> all,
            const char* what) {
  try {
    allGather(mine, all);
  } catch (const std::exception& e) {
    throw UcxError(fmt::format("UCX bootstrap: the all-gather of {} failed: {}", what, e.what()));
  }
}

void put32(std::vector<std::byte>& out, std::uint32_t v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

std::uint32_t get32(std::span<const std::byte> in, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

std::vector<std::byte> encode(const RankRecord& r) {
  std::vector<std::byte> out;
  if (!r.error.empty()) {
    const auto* p = reinterpret_cast<const std::byte*>(r.error.data());
    out.assign(p, p + r.error.size());
    return out;
  }
  const auto* id = reinterpret_cast<const std::byte*>(&r.process);
  out.insert(out.end(), id, id + sizeof r.process);
  put32(out, static_cast<std::uint32_t>(r.hccs.size()));
  put32(out, static_cast<std::uint32_t>(r.roce.size()));
  out.insert(out.end(), r.hccs.begin(), r.hccs.end());
  out.insert(out.end(), r.roce.begin(), r.roce.end());
  return out;
}

RankRecord decode(std::span<const std::byte> blob, bool failed, int rank) {
  RankRecord r;
  if (failed) {
    r.error.assign(reinterpret_cast<const char*>(blob.data()), blob.size());
    return r;
  }
  constexpr std::size_t kFixed = sizeof(ProcessId) + 8;
  if (blob.size() < kFixed) {
    throw UcxError(fmt::format("UCX bootstrap: rank {}'s address record is malformed", rank));
  }
  std::memcpy(&r.process, blob.data(), sizeof r.process);
  const std::size_t hccsLength = get32(blob, sizeof(ProcessId));
  const std::size_t roceLength = get32(blob, sizeof(ProcessId) + 4);
  if (kFixed + hccsLength + roceLength > blob.size()) {
    throw UcxError(fmt::format("UCX bootstrap: rank {}'s address record is malformed", rank));
  }
  const auto* p = blob.data() + kFixed;
  r.hccs.assign(p, p + hccsLength);
  r.roce.assign(p + hccsLength, p + hccsLength + roceLength);
  return r;
}

}  // namespace

std::uint64_t layoutFingerprint(std::span<const int> serverOf, bool intraRoce) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(serverOf.size());
  for (int s : serverOf) mix(static_cast<std::uint64_t>(static_cast<std::int64_t>(s)));
  mix(intraRoce ? 1 : 0);
  return h;
}

std::vector<RankRecord> exchangeRecords(const AllGather& allGather, int rank, int size,
                                        std::uint64_t fingerprint, const RankRecord& mine) {
  const auto n = static_cast<std::size_t>(size);
  const std::vector<std::byte> blob = encode(mine);

  Header header;
  header.rank = static_cast<std::uint32_t>(rank);
  header.size = static_cast<std::uint32_t>(size);
  header.fingerprint = fingerprint;
  header.blobLength = static_cast<std::uint32_t>(blob.size());
  header.failed = mine.error.empty() ? 0 : 1;
  std::vector<Header> headers(n);
  gather(allGather, std::as_bytes(std::span(&header, 1)),
         std::as_writable_bytes(std::span(headers)), "record sizes");

  std::size_t maxLength = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const Header& h = headers[r];
    if (h.magic != kMagic || h.version != kVersion || h.rank != r) {
      throw UcxError(fmt::format(
          "UCX bootstrap: the all-gather put a record that is not rank {}'s at position {} "
          "(it must place rank r's bytes at offset r * size)",
          r, r));
    }
    if (h.size != header.size || h.fingerprint != fingerprint) {
      throw UcxError(fmt::format(
          "UCX bootstrap: rank {} disagrees with rank {} on the group (size {} vs {}, or a "
          "different server map or intraRoce setting)",
          r, rank, h.size, header.size));
    }
    maxLength = std::max<std::size_t>(maxLength, h.blobLength);
  }

  std::vector<std::byte> padded(maxLength);
  std::copy(blob.begin(), blob.end(), padded.begin());
  std::vector<std::byte> all(maxLength * n);
  gather(allGather, padded, all, "worker addresses");

  std::vector<RankRecord> records;
  // Ranks failing for the same reason are named together, so a group-wide mistake reads once.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> failures;
  std::size_t failed = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const auto part = std::span<const std::byte>(all).subspan(r * maxLength, headers[r].blobLength);
    records.push_back(decode(part, headers[r].failed != 0, static_cast<int>(r)));
    const std::string& why = records.back().error;
    if (why.empty()) continue;
    ++failed;
    auto same = std::find_if(failures.begin(), failures.end(),
                             [&why](const auto& f) { return f.first == why; });
    if (same == failures.end()) same = failures.insert(failures.end(), {why, {}});
    same->second.push_back(r);
  }
  if (!failures.empty()) {
    std::vector<std::string> parts;
    for (const auto& [why, ranks] : failures) {
      parts.push_back(
          fmt::format("rank{} {}: {}", ranks.size() > 1 ? "s" : "", fmt::join(ranks, ","), why));
    }
    throw UcxError(fmt::format("UCX set-up failed on {} of {} ranks: {}", failed, size,
                               fmt::join(parts, "; ")));
  }
  return records;
}

}  // namespace hccl::tl::ucx
