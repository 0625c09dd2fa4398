// HCCL rank tables (RANK_TABLE_FILE): parseRankTable on arbitrary bytes, then the hierarchy of an
// accepted table, which must hold every rank on the server the table names.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "topology/error.hpp"
#include "topology/hierarchy.hpp"
#include "topology/rank_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hccl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  topo::RankTable table;
  try {
    table = topo::parseRankTable(text, "fuzz.json");
  } catch (const topo::TopologyError& e) {
    fuzz::checkMessage(e.what());
    return 0;
  }
  fuzz::check(table.ranks >= 1, "a table without ranks was accepted");
  if (table.ranks > 1u << 16) return 0;  // valid, but too large to rebuild quickly
  const topo::Hierarchy h = topo::hierarchyFromRankTable(table);
  fuzz::check(h.size() == table.ranks, "hierarchy size");
  fuzz::check(h.numServers() == table.servers.size(), "hierarchy servers");
  for (std::size_t s = 0; s < table.servers.size(); ++s)
    for (const auto& d : table.servers[s].devices)
      fuzz::check(h.serverName(h.serverOf(d.rank)) == table.servers[s].id, "rank on its server");
  return 0;
}
