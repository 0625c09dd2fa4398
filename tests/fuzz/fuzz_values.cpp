// The scalar settings and number parsers: the first byte picks one, the rest is its value.
// Accepted values are in their documented range and, where the parser has one, survive their
// canonical spelling; rejections carry a well-formed message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "algorithms/config_values.hpp"
#include "fuzz_check.hpp"
#include "topology/error.hpp"
#include "topology/resolve.hpp"

namespace {

using namespace hccl;

template <typename T>
bool rejected(const algo::ConfigResult<T>& r) {
  if (r.ok()) return false;
  fuzz::checkMessage(r.error().message);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view v(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 9) {
    case 0: {
      const auto r = algo::parseBuffSize(v);
      if (rejected(r)) break;
      fuzz::check(r.value() >= 1, "buffsize 0 accepted", v);
      const auto again = algo::parseBuffSize(std::to_string(r.value()));
      fuzz::check(again.ok() && again.value() == r.value(), "buffsize round trip", v);
      break;
    }
    case 1: {
      const auto r = algo::parseDeterministic(v);
      if (rejected(r)) break;
      fuzz::check(algo::parseDeterministic(algo::name(r.value())).value() == r.value(),
                  "determinism round trip", v);
      break;
    }
    case 2: {
      const auto r = algo::parseSelectionMode(v);
      if (rejected(r)) break;
      fuzz::check(algo::parseSelectionMode(algo::name(r.value())).value() == r.value(),
                  "selection round trip", v);
      break;
    }
    case 3: {
      const auto r = algo::parseTimeout(v);
      if (rejected(r)) break;
      const std::int64_t ms = r.value().count();
      fuzz::check(
          ms == 0 || (ms >= 1 && ms <= static_cast<std::int64_t>(algo::kMaxTimeoutSeconds * 1000)),
          "timeout out of range", v);
      const auto again = algo::parseTimeout(std::to_string(ms / 1000) + "." +
                                            std::to_string(1000 + ms % 1000).substr(1));
      fuzz::check(again.ok() && again.value() == r.value(), "timeout round trip", v);
      break;
    }
    case 4: {
      const auto r = algo::parseIntraRoce(v);
      if (rejected(r)) break;
      break;
    }
    case 5: {
      const auto r = algo::parseVerbose(v);
      if (rejected(r)) break;
      fuzz::check(r.value() >= 0 && r.value() <= algo::kMaxVerbose, "verbose out of range", v);
      break;
    }
    case 6: {
      const auto r = algo::parseTransportList("roce_tls", v);
      if (rejected(r)) break;
      const auto again = algo::parseTransportList("roce_tls", r.value());
      fuzz::check(again.ok() && again.value() == r.value(), "transport list round trip", v);
      break;
    }
    case 7: {
      const auto r = algo::parseByteSize("size", v);
      if (rejected(r)) break;
      const auto again = algo::parseByteSize("size", std::to_string(r.value()));
      fuzz::check(again.ok() && again.value() == r.value(), "byte size round trip", v);
      break;
    }
    case 8: {
      try {
        const topo::SupernodeGrouping g = topo::SupernodeGrouping::parse(v);
        if (g.kind == topo::SupernodeGrouping::Kind::ServersPerSupernode)
          fuzz::check(g.serversPerSupernode >= 1, "zero servers per supernode", v);
      } catch (const topo::TopologyError& e) {
        fuzz::checkMessage(e.what());
      }
      break;
    }
  }
  return 0;
}
