// What the tests ask of a UcxTransport's links, judged from UCX's own endpoint report
// (ucp_ep_print_info) with a parser of the tests' own.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "fork_group.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The transport name of every "lane[i]:  k:transport/device.path" line.
inline std::vector<std::string> lanesInReport(const std::string& ucxText) {
  static const std::regex lane(R"(lane\[\d+\]:\s+\d+:([A-Za-z0-9_]+)/)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(ucxText.begin(), ucxText.end(), lane);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

inline bool isSharedMemoryName(const std::string& tl) {
  return tl == "posix" || tl == "sysv" || tl == "cma" || tl == "xpmem" || tl == "knem";
}

inline bool isNetworkName(const std::string& tl) {
  return tl == "tcp" || tl.starts_with("rc_") || tl.starts_with("ud_") || tl.starts_with("dc_");
}

inline tl::LinkClass expectedClass(int rank, int peer, const std::vector<int>& serverOf,
                                   bool intraRoce) {
  if (rank == peer) return tl::LinkClass::Self;
  const bool sameServer =
      serverOf[static_cast<std::size_t>(rank)] == serverOf[static_cast<std::size_t>(peer)];
  return sameServer && !intraRoce ? tl::LinkClass::Hccs : tl::LinkClass::Roce;
}

// Connects to `peer`, reports which UCX transports carry the link, and fails the child if the
// HCCS class uses any network transport or the RoCE class any shared memory.
inline void checkLink(Child& child, tl::UcxTransport& t, int peer, const std::vector<int>& serverOf,
                      bool intraRoce = false) {
  const tl::LinkReport report = t.linkReport(peer);
  const tl::LinkClass want = expectedClass(t.rank(), peer, serverOf, intraRoce);
  CHILD_CHECK(report.error.empty(), report.error);
  CHILD_CHECK(report.linkClass == want && t.linkClass(peer) == want,
              fmt::format("rank {} -> {}: class {} expected {}", t.rank(), peer,
                          tl::className(report.linkClass), tl::className(want)));
  const auto lanes = lanesInReport(report.ucxText);
  child.report(fmt::format("{} -> {} [{}] tls '{}': lanes {}", t.rank(), peer,
                           tl::className(report.linkClass), report.tls,
                           fmt::join(report.transports, " ")));
  CHILD_CHECK(!lanes.empty(), "no lane in the endpoint report:\n" + report.ucxText);
  CHILD_CHECK(lanes.size() == report.transports.size(),
              fmt::format("report.transports {} disagrees with the report's lanes {}",
                          fmt::join(report.transports, " "), fmt::join(lanes, " ")));
  if (want == tl::LinkClass::Hccs) {
    CHILD_CHECK(std::none_of(lanes.begin(), lanes.end(), isNetworkName),
                "the HCCS class uses a network transport:\n" + report.ucxText);
    CHILD_CHECK(std::any_of(lanes.begin(), lanes.end(), isSharedMemoryName),
                "the HCCS class uses no shared memory:\n" + report.ucxText);
  }
  if (want == tl::LinkClass::Roce) {
    CHILD_CHECK(std::none_of(lanes.begin(), lanes.end(), isSharedMemoryName),
                "the RoCE class uses shared memory:\n" + report.ucxText);
    CHILD_CHECK(std::all_of(lanes.begin(), lanes.end(), isNetworkName),
                "the RoCE class uses a non-network transport:\n" + report.ucxText);
  }
}

}  // namespace hccl::test
