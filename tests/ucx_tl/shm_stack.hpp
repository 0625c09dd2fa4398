// The shared-memory tests' fixtures: a ShmTransport over a UcxTransport for forked test ranks,
// the two ranks of one server most tests run on (with a link, or with a transport), and the
// helpers they share.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "fork_group.hpp"
#include "ucx_tl/shm_transport.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::test {

struct ShmStack {
  std::shared_ptr<tl::UcxTransport> ucx;
  std::shared_ptr<tl::ShmTransport> shm;
};

inline ShmStack makeShmStack(Child& child, const std::vector<int>& serverOf, tl::ShmOptions so) {
  using namespace std::chrono_literals;
  tl::UcxOptions uo;
  uo.timeout = 30s;
  ShmStack s;
  s.ucx = std::make_shared<tl::UcxTransport>(child.rank(), serverOf, child.allGather(), uo);
  s.shm = std::make_shared<tl::ShmTransport>(
      s.ucx, std::make_shared<tl::ShmLink>(child.rank(), serverOf, child.allGather(), so));
  return s;
}

// Runs `body` on two forked ranks of one server, each with its end of a link over `o`, and
// returns the group's result for the test to judge.
inline GroupResult onLinkPair(const tl::ShmOptions& o,
                              const std::function<void(Child&, tl::ShmLink&)>& body) {
  using namespace std::chrono_literals;
  return runGroup(2, 60s, [&](Child& child) {
    tl::ShmLink link(child.rank(), {0, 0}, child.allGather(), o);
    body(child, link);
  });
}

// The same with each rank's end of a ShmTransport over that link (and UCX, makeShmStack).
inline GroupResult onShmPair(const tl::ShmOptions& so,
                             const std::function<void(Child&, tl::ShmTransport&)>& body) {
  using namespace std::chrono_literals;
  return runGroup(2, 60s, [&](Child& child) {
    ShmStack st = makeShmStack(child, {0, 0}, so);
    body(child, *st.shm);
  });
}

// A ring of `slotsPerChannel` slots of `slotBytes`, small enough that posts soon find their slot
// still held, and a timeout no healthy run reaches.
inline tl::ShmOptions smallRing(std::size_t slotBytes, std::size_t slotsPerChannel = 2) {
  using namespace std::chrono_literals;
  tl::ShmOptions so;
  so.slotBytes = slotBytes;
  so.slotsPerChannel = slotsPerChannel;
  so.timeout = 30s;
  return so;
}

// Progresses until `c` completes or 10 s pass.
inline void waitOne(tl::Transport& t, const tl::Completion& c) {
  using namespace std::chrono_literals;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (c.pending() && std::chrono::steady_clock::now() < end) t.progress();
  CHILD_CHECK(!c.pending(), "still pending after 10 s");
}

// Small slots and short timeouts, so that failure tests fail fast.
inline tl::ShmOptions quickFailures() {
  using namespace std::chrono_literals;
  tl::ShmOptions so;
  so.slotBytes = 1024;
  so.timeout = 800ms;
  so.liveness = 100ms;
  return so;
}

}  // namespace hccl::test
