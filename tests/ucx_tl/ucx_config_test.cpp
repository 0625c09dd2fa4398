// Set-up errors of the UCX transport: bad transport lists and settings, and ranks that disagree.
// Each must fail construction on every rank with a message naming the bad value, never a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "fork_group.hpp"
#include "ucx_checks.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {
namespace {

using namespace std::chrono_literals;

// Every rank runs `options(rank)`; construction must throw on every rank, and each rank's
// message must contain every string in `expected`.
void expectSetupError(const std::vector<int>& serverOf,
                      const std::function<tl::UcxOptions(int)>& options,
                      const std::vector<std::string>& expected,
                      const std::function<std::vector<int>(int)>& mapOf = {}) {
  const auto r = runGroup(static_cast<int>(serverOf.size()), 30s, [&](Child& child) {
    try {
      tl::UcxTransport t(child.rank(), mapOf ? mapOf(child.rank()) : serverOf, child.allGather(),
                         options(child.rank()));
    } catch (const tl::UcxError& e) {
      child.report(e.what());
      for (const auto& part : expected) CHILD_CHECK(contains(e.what(), part), e.what());
      return;
    }
    CHILD_CHECK(false, "construction succeeded");
  });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxConfig, UnknownTransportNamesTheListAndWhatExists) {
  tl::UcxOptions o;
  o.hccs.tls = "nosuch_tl";
  expectSetupError({0}, [&](int) { return o; },
                   {"HCCS-class", "'nosuch_tl'", "available on this machine", "tcp"});
}

// What a user copying an RDMA cluster's settings gets on a machine without RDMA devices.
TEST(UcxConfig, RdmaOnlyListWithoutRdmaDeviceNamesWhatExists) {
  const auto r = runGroup(2, 30s, [](Child& child) {
    const auto& here = tl::availableTransports();
    const bool rdma = std::find(here.begin(), here.end(), "rc_verbs") != here.end();
    tl::UcxOptions o;
    o.roce.tls = "rc_verbs,ud_verbs";
    try {
      tl::UcxTransport t(child.rank(), {0, 1}, child.allGather(), o);
      CHILD_CHECK(rdma, "construction succeeded without an RDMA device");
      child.report("this machine has RDMA: nothing to refuse");
    } catch (const tl::UcxError& e) {
      child.report(e.what());
      CHILD_CHECK(!rdma, e.what());
      CHILD_CHECK(contains(e.what(),
                           "RoCE-class UCX context with transport list "
                           "'rc_verbs,ud_verbs' failed") &&
                      contains(e.what(), "available on this machine"),
                  e.what());
    }
  });
  EXPECT_TRUE(r.ok()) << r.summary();
}

TEST(UcxConfig, NetworkTransportInTheHccsClassIsRefused) {
  tl::UcxOptions o;
  o.hccs.tls = "tcp";
  expectSetupError({0, 0}, [&](int) { return o; },
                   {"HCCS-class transport list 'tcp'", "network transports", "intraRoce"});
}

TEST(UcxConfig, SharedMemoryInTheRoceClassIsRefused) {
  tl::UcxOptions o;
  o.roce.tls = "posix,cma,tcp";
  expectSetupError({0, 1}, [&](int) { return o; },
                   {"RoCE-class transport list 'posix,cma,tcp'", "shared-memory"});
}

TEST(UcxConfig, LoopbackOnlyHccsListCannotReachPeers) {
  tl::UcxOptions o;
  o.hccs.tls = "self";
  expectSetupError({0, 0}, [&](int) { return o; }, {"no other rank can be reached"});
}

// Ranks that outnumber cores send eagerly up to kOversubscribedEagerLimit on the HCCS class (a
// rendezvous waits for its receiver to be scheduled) and keep UCX's threshold otherwise; the
// RoCE class, TCP alone on this machine, sends eagerly at every size either way (a rendezvous
// only adds a handshake there: kTcpEagerLimit), its connections' send buffers capped
// (kTcpSendBuffer). Read from UCX's own endpoint report (its
// tag_send protocol ranges), so a setting UCX did not take fails too.
TEST(UcxConfig, EagerLimitsFollowOversubscriptionAndTcp) {
  for (const bool oversubscribed : {false, true}) {
    const auto r = runGroup(3, 30s, [&](Child& child) {
      unsetenv("UCX_RNDV_THRESH");  // the rules yield to a user's threshold
      tl::UcxOptions o;
      o.oversubscribed = oversubscribed;
      const std::vector<int> servers{0, 0, 1};
      tl::UcxTransport t(child.rank(), servers, child.allGather(), o);
      const std::string described = t.describe();
      child.report(described);
      const auto classLine = [&](const std::string& cls) {
        const auto at = described.find(cls);
        CHILD_CHECK(at != std::string::npos, described);
        return described.substr(at, described.find('\n', at) - at);
      };
      const std::string hccs = classLine("HCCS class"), roce = classLine("RoCE class");
      CHILD_CHECK(contains(hccs, "eager up to 1m") == oversubscribed, hccs);
      CHILD_CHECK(contains(roce, "eager at every size (TCP alone between servers)"), roce);
      CHILD_CHECK(contains(roce, "send buffers of 256k a connection"), roce);
      CHILD_CHECK(!contains(hccs, "send buffers"), hccs);
      for (const int peer : {0, 1, 2}) {
        if (peer == child.rank()) continue;
        const tl::LinkReport rep = t.linkReport(peer);
        CHILD_CHECK(rep.error.empty(), rep.error);
        // "tag_send: 0..<egr/short>..8185..<egr/bcopy>..1048576..<rndv>..(inf)"
        const auto tag = rep.ucxText.find("tag_send:");
        CHILD_CHECK(tag != std::string::npos, rep.ucxText);
        const std::string line = rep.ucxText.substr(tag, rep.ucxText.find('\n', tag) - tag);
        if (servers[static_cast<std::size_t>(peer)] ==
            servers[static_cast<std::size_t>(child.rank())])
          CHILD_CHECK(contains(line, "..1048576..<rndv>") == oversubscribed, line);
        else
          CHILD_CHECK(!contains(line, "<rndv>"), line);
      }
      // A rank that reported must not tear its worker down while a peer still connects to it
      // for its own report (CI: "cannot reach rank 0 over the HCCS class ... Shared memory
      // error", rank 0 having exited).
      child.barrier();
    });
    EXPECT_TRUE(r.ok()) << "oversubscribed " << oversubscribed << ": " << r.summary();
  }
}

TEST(UcxConfig, BadUcxSettingIsRejected) {
  tl::UcxOptions o;
  o.roce.ucxConfig = {{"KEEPALIVE_INTERVAL", "soon"}};
  expectSetupError({0, 1}, [&](int) { return o; }, {"KEEPALIVE_INTERVAL='soon'", "rejected"});
}

// One rank's bad list fails every rank, with that rank's reason, instead of leaving the others
// waiting for it.
TEST(UcxConfig, OneRanksFailureFailsEveryRank) {
  expectSetupError({0, 0, 0},
                   [](int rank) {
                     tl::UcxOptions o;
                     if (rank == 2) o.hccs.tls = "nosuch_tl";
                     return o;
                   },
                   {"failed on 1 of 3 ranks", "rank 2: HCCS-class", "'nosuch_tl'"});
}

TEST(UcxConfig, NegativeTimeoutOnOneRankFailsEveryRank) {
  expectSetupError({0, 1},
                   [](int rank) {
                     tl::UcxOptions o;
                     if (rank == 0) o.timeout = std::chrono::milliseconds(-5);
                     return o;
                   },
                   {"rank 0: UcxTransport: timeout -5 ms is negative"});
}

TEST(UcxConfig, RanksDisagreeingOnTheServerMapFail) {
  expectSetupError(
      {0, 0}, [](int) { return tl::UcxOptions{}; }, {"disagrees", "server map"},
      [](int rank) {
        return rank == 0 ? std::vector<int>{0, 0} : std::vector<int>{0, 1};
      });
}

}  // namespace
}  // namespace hccl::test
