#include "tests/engine/shm_wrap.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ucx_tl/shm_transport.hpp"

namespace hccl::test {

engine::TransportWrap shmWrap(tl::ShmOptions options) {
  return [options](tl::Transport& endpoint, const engine::AllGatherFn& allGather) {
    const int p = endpoint.size();
    const auto up = static_cast<std::size_t>(p);
    // Each rank knows its own link classes; the servers follow from everyone's.
    std::vector<std::byte> mine(up), all(up * up);
    for (int q = 0; q < p; ++q)
      mine[static_cast<std::size_t>(q)] =
          static_cast<std::byte>(endpoint.linkClass(q) != tl::LinkClass::Roce ? 1 : 0);
    allGather(mine, all);
    std::vector<int> serverOf(up);
    for (std::size_t q = 0; q < up; ++q) {
      std::size_t first = q;
      for (std::size_t r = 0; r < q; ++r)
        if (all[r * up + q] == std::byte{1}) {
          first = r;
          break;
        }
      serverOf[q] = static_cast<int>(first);
    }
    auto link = std::make_shared<tl::ShmLink>(endpoint.rank(), serverOf, allGather, options);
    // The endpoint outlives the run's transports: borrow it.
    std::shared_ptr<tl::Transport> base(&endpoint, [](tl::Transport*) {});
    return std::make_shared<tl::ShmTransport>(std::move(base), std::move(link));
  };
}

tl::ShmOptions checkShmOptions() {
  tl::ShmOptions o;
  o.slotBytes = 256;
  o.slotsPerChannel = 2;
  o.timeout = std::chrono::seconds(60);
  return o;
}

bool checksOverShm() {
  const char* v = std::getenv("COLL_HCCL_TEST_LEVEL0");
  return v != nullptr && std::string_view(v) == "shm";
}

namespace {
const bool installed = [] {
  if (checksOverShm()) engine::setDefaultTransportWrap(shmWrap(checkShmOptions()));
  return true;
}();
}  // namespace

}  // namespace hccl::test
