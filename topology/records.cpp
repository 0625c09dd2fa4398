#include "topology/records.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "topology/error.hpp"

namespace hccl::topo {

std::string_view name(NicKind k) {
  switch (k) {
    case NicKind::None:
      return "none";
    case NicKind::Ethernet:
      return "ethernet";
    case NicKind::Verbs:
      return "verbs";
  }
  return "?";
}

std::optional<BootId> parseBootId(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  BootId id{};
  std::size_t nibbles = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '-') {
      if (i != 8 && i != 13 && i != 18 && i != 23) return std::nullopt;
      continue;
    }
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0 || nibbles >= 32) return std::nullopt;
    id[nibbles / 2] = static_cast<std::uint8_t>(id[nibbles / 2] | (v << (nibbles % 2 ? 0 : 4)));
    ++nibbles;
  }
  if (nibbles != 32 || text.size() != 36) return std::nullopt;
  return id;
}

std::string formatBootId(const BootId& id) {
  std::string out;
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", id[i]);
  }
  return out;
}

HostIdentity localHostIdentity() {
  HostIdentity id;
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0)
    throw TopologyError(fmt::format("topology: gethostname failed: {}", std::strerror(errno)));
  id.hostname = buf;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (in && std::getline(in, line)) id.bootId = parseBootId(line);
  return id;
}

namespace {

// Wire layout (offsets in bytes, integers little-endian):
//   0 magic u32 | 4 version u16 | 6 flags u16 (bit 0: boot id present) | 8 boot id [16]
//  24 package i32 | 28 numa i32 | 32 nic numa i32 | 36 nic package i32 | 40 nic kind u8
//  41..45 lengths u8: hostname, verbs, netdev, pci bus id, hint | 46 reserved [2] = 0
//  48 hostname [64] | 112 verbs [32] | 144 netdev [16] | 160 pci bus id [16] | 176 hint [32]
// 208 checksum u32: FNV-1a over bytes 0..207
constexpr std::size_t kOffBootId = 8, kOffPackage = 24, kOffNuma = 28, kOffNicNuma = 32,
                      kOffNicPackage = 36, kOffNicKind = 40, kOffLengths = 41, kOffReserved = 46,
                      kOffHostname = 48, kOffVerbs = 112, kOffNetdev = 144, kOffBusId = 160,
                      kOffHint = 176, kOffChecksum = 208;
static_assert(kOffVerbs == kOffHostname + RankRecord::kHostnameMax);
static_assert(kOffNetdev == kOffVerbs + RankRecord::kNicNameMax);
static_assert(kOffBusId == kOffNetdev + RankRecord::kNetdevMax);
static_assert(kOffHint == kOffBusId + RankRecord::kPciBusIdMax);
static_assert(kOffChecksum == kOffHint + RankRecord::kHintMax);
static_assert(RankRecord::kSize == kOffChecksum + 4);
constexpr std::uint16_t kFlagBootId = 1;

struct StringField {
  std::string_view label;
  std::size_t offset;
  std::size_t max;
};
constexpr StringField kStrings[] = {
    {"hostname", kOffHostname, RankRecord::kHostnameMax},
    {"verbs device name", kOffVerbs, RankRecord::kNicNameMax},
    {"network interface name", kOffNetdev, RankRecord::kNetdevMax},
    {"PCI bus id", kOffBusId, RankRecord::kPciBusIdMax},
    {"supernode hint", kOffHint, RankRecord::kHintMax},
};

std::uint32_t fnv1a(std::span<const std::byte> bytes) {
  std::uint32_t h = 2166136261u;
  for (std::byte b : bytes) {
    h ^= std::to_integer<std::uint32_t>(b);
    h *= 16777619u;
  }
  return h;
}

void put(std::span<std::byte> out, std::size_t off, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i)
    out[off + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::uint64_t get(std::span<const std::byte> in, std::size_t off, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i)
    v |= std::to_integer<std::uint64_t>(in[off + i]) << (8 * i);
  return v;
}

bool printable(char c) {
  return c >= 0x20 && c <= 0x7e;
}

}  // namespace

void RankRecord::serializeTo(std::span<std::byte> out) const {
  if (out.size() < kSize)
    throw TopologyError(fmt::format("rank record: output buffer holds {} bytes, a record needs {}",
                                    out.size(), kSize));
  const std::string* values[] = {&hostname, &nicVerbs, &nicNetdev, &nicPciBusId, &supernodeHint};
  for (std::size_t f = 0; f < std::size(kStrings); ++f) {
    const std::string& v = *values[f];
    if (v.size() > kStrings[f].max)
      throw TopologyError(fmt::format("rank record: {} \"{}\" is {} bytes; at most {} fit",
                                      kStrings[f].label, v, v.size(), kStrings[f].max));
    if (!std::all_of(v.begin(), v.end(), printable))
      throw TopologyError(fmt::format("rank record: {} \"{}\" holds a byte outside printable ASCII",
                                      kStrings[f].label, v));
  }
  std::fill(out.begin(), out.begin() + kSize, std::byte{0});
  put(out, 0, kMagic, 4);
  put(out, 4, kVersion, 2);
  put(out, 6, bootId ? kFlagBootId : 0, 2);
  if (bootId)
    for (std::size_t i = 0; i < bootId->size(); ++i) out[kOffBootId + i] = std::byte{(*bootId)[i]};
  put(out, kOffPackage, static_cast<std::uint32_t>(package), 4);
  put(out, kOffNuma, static_cast<std::uint32_t>(numa), 4);
  put(out, kOffNicNuma, static_cast<std::uint32_t>(nicNuma), 4);
  put(out, kOffNicPackage, static_cast<std::uint32_t>(nicPackage), 4);
  put(out, kOffNicKind, static_cast<std::uint8_t>(nicKind), 1);
  for (std::size_t f = 0; f < std::size(kStrings); ++f) {
    const std::string& v = *values[f];
    put(out, kOffLengths + f, v.size(), 1);
    std::memcpy(out.data() + kStrings[f].offset, v.data(), v.size());
  }
  put(out, kOffChecksum, fnv1a(out.first(kOffChecksum)), 4);
}

std::array<std::byte, RankRecord::kSize> RankRecord::serialize() const {
  std::array<std::byte, kSize> out{};
  serializeTo(out);
  return out;
}

RankRecord RankRecord::deserialize(std::span<const std::byte> in) {
  if (in.size() != kSize)
    throw TopologyError(fmt::format(
        "rank record: got {} bytes, a record has exactly {}: mismatched coll_hccl builds?",
        in.size(), kSize));
  const auto magic = static_cast<std::uint32_t>(get(in, 0, 4));
  if (magic != kMagic)
    throw TopologyError(fmt::format(
        "rank record: magic 0x{:08x} is not 0x{:08x} (\"HCTP\"): these bytes are not a coll_hccl "
        "topology record",
        magic, kMagic));
  const auto version = static_cast<std::uint16_t>(get(in, 4, 2));
  if (version != kVersion)
    throw TopologyError(fmt::format(
        "rank record: version {} is not supported (this build reads version {}): are all ranks "
        "running the same coll_hccl build?",
        version, kVersion));
  const auto stored = static_cast<std::uint32_t>(get(in, kOffChecksum, 4));
  const std::uint32_t computed = fnv1a(in.first(kOffChecksum));
  if (stored != computed)
    throw TopologyError(fmt::format(
        "rank record: checksum 0x{:08x} does not match the contents (0x{:08x}): the record is "
        "corrupt",
        stored, computed));
  const auto flags = static_cast<std::uint16_t>(get(in, 6, 2));
  if ((flags & ~kFlagBootId) != 0)
    throw TopologyError(fmt::format("rank record: unknown flags 0x{:04x} (valid: 0x0001)", flags));
  if (get(in, kOffReserved, 2) != 0)
    throw TopologyError("rank record: reserved bytes 46..47 are not zero");
  RankRecord r;
  if (flags & kFlagBootId) {
    BootId id{};
    for (std::size_t i = 0; i < id.size(); ++i)
      id[i] = std::to_integer<std::uint8_t>(in[kOffBootId + i]);
    r.bootId = id;
  } else if (get(in, kOffBootId, 8) != 0 || get(in, kOffBootId + 8, 8) != 0) {
    throw TopologyError("rank record: boot id bytes are set but the boot-id flag is not");
  }
  auto index = [&](std::size_t off, std::string_view label) {
    const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(get(in, off, 4)));
    if (v < -1)
      throw TopologyError(fmt::format(
          "rank record: {} index {} is invalid (expected -1 or a logical index >= 0)", label, v));
    return v;
  };
  r.package = index(kOffPackage, "package");
  r.numa = index(kOffNuma, "NUMA node");
  r.nicNuma = index(kOffNicNuma, "NIC NUMA node");
  r.nicPackage = index(kOffNicPackage, "NIC package");
  const auto kind = get(in, kOffNicKind, 1);
  if (kind > static_cast<std::uint8_t>(NicKind::Verbs))
    throw TopologyError(
        fmt::format("rank record: NIC kind {} is invalid (0 none, 1 ethernet, 2 verbs)", kind));
  r.nicKind = static_cast<NicKind>(kind);
  std::string* values[] = {&r.hostname, &r.nicVerbs, &r.nicNetdev, &r.nicPciBusId,
                           &r.supernodeHint};
  for (std::size_t f = 0; f < std::size(kStrings); ++f) {
    const StringField& field = kStrings[f];
    const std::size_t len = static_cast<std::size_t>(get(in, kOffLengths + f, 1));
    if (len > field.max)
      throw TopologyError(fmt::format("rank record: {} length {} exceeds its {}-byte field",
                                      field.label, len, field.max));
    const auto text = in.subspan(field.offset, field.max);
    std::string v(len, '\0');
    for (std::size_t i = 0; i < len; ++i)
      v[i] = static_cast<char>(std::to_integer<std::uint8_t>(text[i]));
    if (!std::all_of(v.begin(), v.end(), printable))
      throw TopologyError(
          fmt::format("rank record: {} holds a byte outside printable ASCII", field.label));
    if (std::any_of(text.begin() + static_cast<std::ptrdiff_t>(len), text.end(),
                    [](std::byte b) { return b != std::byte{0}; }))
      throw TopologyError(fmt::format("rank record: {} padding is not zero", field.label));
    *values[f] = std::move(v);
  }
  if (r.hostname.empty()) throw TopologyError("rank record: the hostname is empty");
  return r;
}

std::vector<RankRecord> deserializeRecords(std::span<const std::byte> gathered) {
  if (gathered.empty() || gathered.size() % RankRecord::kSize != 0)
    throw TopologyError(
        fmt::format("rank records: {} bytes is not a positive multiple of the {}-byte record size",
                    gathered.size(), RankRecord::kSize));
  std::vector<RankRecord> out;
  const std::size_t n = gathered.size() / RankRecord::kSize;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      out.push_back(
          RankRecord::deserialize(gathered.subspan(i * RankRecord::kSize, RankRecord::kSize)));
    } catch (const TopologyError& e) {
      throw TopologyError(fmt::format("rank {}: {}", i, e.what()));
    }
  }
  return out;
}

std::string describe(const RankRecord& r) {
  auto idx = [](std::int32_t v) { return v < 0 ? std::string("?") : std::to_string(v); };
  std::string out = fmt::format("host {} (boot {}) package {} NUMA {}", r.hostname,
                                r.bootId ? formatBootId(*r.bootId).substr(0, 8) : "unknown",
                                idx(r.package), idx(r.numa));
  if (r.nicKind == NicKind::None) {
    out += ", no NIC";
  } else {
    std::string nic = r.nicVerbs;
    if (!r.nicNetdev.empty()) nic += (nic.empty() ? "" : "/") + r.nicNetdev;
    out +=
        fmt::format(", NIC {} ({}, PCI {}, package {} NUMA {})", nic, name(r.nicKind),
                    r.nicPciBusId.empty() ? "?" : r.nicPciBusId, idx(r.nicPackage), idx(r.nicNuma));
  }
  if (!r.supernodeHint.empty()) out += fmt::format(", supernode hint \"{}\"", r.supernodeHint);
  return out;
}

}  // namespace hccl::topo
