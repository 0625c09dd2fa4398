// Emulation specs (HCCL_TOPO_EMULATE): parseEmulationSpec on arbitrary bytes. Accepted specs
// format to text that parses back to the same spec, place every rank on a server, and (when
// small enough to build quickly) give a hierarchy of as many ranks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "topology/emulation.hpp"
#include "topology/error.hpp"
#include "topology/hierarchy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hccl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  topo::EmulationSpec spec;
  try {
    spec = topo::parseEmulationSpec(text);
  } catch (const topo::TopologyError& e) {
    fuzz::checkMessage(e.what());
    return 0;
  }
  fuzz::check(spec.ranks() >= 1 && spec.ranks() <= topo::kMaxEmulatedRanks, "rank count", text);
  const std::string canonical = topo::formatEmulationSpec(spec);
  topo::EmulationSpec again;
  try {
    again = topo::parseEmulationSpec(canonical);
  } catch (const topo::TopologyError& e) {
    fuzz::broken("canonical spec does not parse", e.what());
  }
  fuzz::check(again == spec, "canonical spec parses to another layout", canonical);
  if (spec.ranks() <= 4096) {
    const auto owner = topo::serverOfRank(spec);
    fuzz::check(owner.size() == spec.ranks(), "serverOfRank size", canonical);
    for (std::uint32_t s : owner) fuzz::check(s < spec.servers(), "server index", canonical);
    const topo::Hierarchy h = topo::Hierarchy::fromSpec(spec);
    fuzz::check(h.size() == spec.ranks(), "hierarchy size", canonical);
    fuzz::check(h.numServers() == spec.servers(), "hierarchy servers", canonical);
  }
  return 0;
}
