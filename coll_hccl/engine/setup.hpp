// Communicator set-up in named stages, each usable (and tested) alone:
//
//   1. configure          the settings and cost model this rank resolves (local)
//   2. agreeOnWorld       MPI_COMM_WORLD only, collective: every rank's outcome so far, its
//                         configuration fingerprint, its topology record and, for a rank table or
//                         an emulation spec, the hierarchy it read; equal everywhere or an error
//                         that every rank reports alike
//   3. worldHierarchy /   the hierarchy: MPI_COMM_WORLD's from the rank table, the spec or the
//      memberHierarchy    records; any other communicator's as the subset of MPI_COMM_WORLD's
//                         (local: equal inputs give equal hierarchies on every rank)
//   4. openWorldTransport MPI_COMM_WORLD only, collective: the transport every communicator
//                         inside it shares: UCX, with level0 over the shared-memory link (one
//                         segment per server, made here) unless level0_link says tagged
//
// Only MPI_COMM_WORLD's set-up communicates, inside MPI_Init. Every other communicator is built
// from what it learnt, without communication, because Open MPI creates communicators inside its
// progress loop: a blocking exchange there nests Open MPI's wait inside another (which deadlocks
// under MPI_THREAD_MULTIPLE) and can wait on a peer whose progress loop is busy creating another
// communicator first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/progress_board.hpp"
#include "coll_hccl/engine/settings_bridge.hpp"
#include "coll_hccl/hccl_engine.h"
#include "topology/hierarchy.hpp"
#include "topology/records.hpp"
#include "topology/resolve.hpp"
#include "ucx_tl/shm_link.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::engine::setup {

// A failed stage: the status every rank returns and the message that explains it.
struct Failure {
  hccl_status_t status = HCCL_SUCCESS;
  std::string message;
  bool failed() const { return status != HCCL_SUCCESS; }
};

// Blocking all-gather over MPI_COMM_WORLD: `all` receives rank r's `mine` at r * mine.size().
// Returns false when the exchange itself failed.
using Exchange = std::function<bool(std::span<const std::byte> mine, std::span<std::byte> all)>;

// ---- 1. configure -------------------------------------------------------------------------------
struct Configuration {
  EngineOptions options;
  const algo::CostModel* model = nullptr;  // owned by the loader (the engine's model cache)
  // Everything the ranks must agree on to decide alike (settings, cost model, topology inputs).
  std::string fingerprint;
};
Failure configure(
    const hccl_setting_t (&layers)[HCCL_SETTING_COUNT],
    const std::function<const algo::CostModel*(const std::string&, std::string&)>& loadModel,
    Configuration& out);

// ---- 2. agreeOnWorld ----------------------------------------------------------------------------
struct WorldView {
  std::vector<topo::RankRecord> records;      // by world rank
  std::vector<tl::ucx::ProcessId> processes;  // by world rank
};
// `local` is this rank's outcome of the stages before; `declaredHierarchy` the hierarchy a rank
// table or spec gave it (nullptr for discovery). Every rank takes part even when `local` failed,
// and every rank returns the same Failure.
Failure agreeOnWorld(const Exchange& exchange, int worldRank, int worldSize, const Failure& local,
                     const std::string& fingerprint, const topo::Hierarchy* declaredHierarchy,
                     std::span<const std::byte> record, WorldView& out);

// For fault diagnosis: every rank's host and process, and this host's progress board, which every
// rank of the host opens under the same name (null with `why` set when it cannot).
std::vector<PeerProcess> peerProcesses(const WorldView& world, int worldRank);
std::unique_ptr<ProgressBoard> openProgressBoard(const std::vector<PeerProcess>& world,
                                                 int worldRank, std::string& why);

// ---- 3. the hierarchy ---------------------------------------------------------------------------
// MPI_COMM_WORLD's hierarchy from a rank table or an emulation spec, before any exchange (nullopt
// for discovery, which needs every rank's record). Throws topo::TopologyError.
std::optional<topo::Hierarchy> declaredWorldHierarchy(const topo::TopologySource& source,
                                                      std::uint32_t worldSize);
// MPI_COMM_WORLD's hierarchy by discovery from the records. Throws topo::TopologyError.
topo::Hierarchy discoveredWorldHierarchy(const topo::TopologySource& source,
                                         const WorldView& world);
// A communicator's hierarchy: rank i is world rank members[i]. Throws topo::TopologyError.
topo::Hierarchy memberHierarchy(const topo::Hierarchy& world, std::span<const int> members);

// ---- 4. openWorldTransport ----------------------------------------------------------------------
struct WorldTransport {
  std::shared_ptr<tl::Transport> transport;  // a tl::ShmTransport over UCX, or UCX alone
  std::string note;  // why level0 stays on tagged messages in auto mode, when it does
};
// Collective over MPI_COMM_WORLD; throws tl::UcxError alike on every rank when UCX (or, with
// level0_link=shm, the shared-memory link) cannot be set up. `oversubscribed`: ranks outnumber
// cores (Open MPI yields when idle; so do the link's own waits).
WorldTransport openWorldTransport(const Exchange& exchange, int worldRank,
                                  const topo::Hierarchy& world, const EngineOptions& options,
                                  bool oversubscribed);
// The shared-memory link's options for servers of up to `largestServer` ranks: at two ranks 16
// slots of 64 KiB a channel (a 1 MiB window), on larger servers 4 of 16 KiB while the segment,
// which grows with the square of the ranks per server, stays within 64 MiB, smaller beyond; each
// with a cache line more, so a message of the nominal size still travels inline. `slotBytes`
// (EngineOptions::shmSlotBytes, already validated; 0: the choice above) replaces the nominal
// size: exactly at two ranks, keeping the 1 MiB window (4 to 64 slots), a cap on larger servers.
tl::ShmOptions shmOptions(std::size_t largestServer, const tl::UcxOptions& ucx, bool oversubscribed,
                          std::size_t slotBytes);

}  // namespace hccl::engine::setup
