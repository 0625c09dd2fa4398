// A ShmTransport over a UcxTransport for forked test ranks, and the helpers the shm tests share.
#pragma once

#include <chrono>
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
