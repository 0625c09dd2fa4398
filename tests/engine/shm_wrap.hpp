// Runs the engine's in-process checks over the shared-memory link: every rank thread's endpoint
// is wrapped in a ShmTransport over a ShmLink between the rank threads of the run (servers as
// the endpoints' link classes say), so level0 traffic travels in slots and by CMA, and receives
// are read in place, exactly as between processes.
#pragma once

#include "coll_hccl/engine/local_cluster.hpp"
#include "ucx_tl/shm_link.hpp"

namespace hccl::test {

engine::TransportWrap shmWrap(tl::ShmOptions options);

// The link options the checks use: slots small enough that messages of a few hundred bytes
// already go by CMA, and two per channel, so that senders run into full windows.
tl::ShmOptions checkShmOptions();

// Whether this binary runs its checks over the link (COLL_HCCL_TEST_LEVEL0=shm; set by meson for
// the *_shm variants of the tests). Linking shm_wrap.cpp into a test binary installs the wrap.
bool checksOverShm();

}  // namespace hccl::test
