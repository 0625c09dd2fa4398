// Who is behind a failed call: the rank every survivor names when a call times out or loses a
// peer, found without asking the culprit anything.
//
// A rank that times out only knows the peer it waited for, which is often itself waiting for
// someone else (with rank 2 stopped, rank 0 waits for rank 1, which waits for rank 2). So on a
// timeout or a lost peer the failing rank looks at every other rank of the communicator on its
// host, through the progress board (progress_board.hpp) and the kernel's process table, and names
// the first of, in this order (the lowest communicator rank within each rule):
//   1. a rank whose process has exited (killed, crashed);
//   2. a rank whose process is stopped (SIGSTOP, a debugger);
//      (for 1 and 2, ranks that failed a call themselves before come after all others: their
//      exit is a consequence of the fault, not its cause)
//   3. a rank that has not entered this call (its last call on the communicator is an earlier
//      one, or it never ran one): it is busy elsewhere;
//   3b. (a call ended because a peer gave the exchange up after its own failure) the culprit a
//      rank named when its own call failed first: that rank saw the cause (a rank of this host
//      through the board, looked at again until it publishes or kVerdictWait passes; one of
//      another host through the view its host sent, as it was then);
//   4. the end of the wait-for chain from this rank: follow "waits for" through the records to a
//      rank that waits for nobody, to a rank on another host (whose record this host cannot read),
//      or round a cycle (the ranks' calls do not match; its lowest rank is named).
// The first three depend only on the culprit's state, which every survivor of the host sees
// alike, so they all name the same rank. Ranks of other hosts are inspected through the views
// their hosts sent (host_views.hpp), so survivors on every host see the same states; a rank whose
// host sent none is named by what the failing rank knows of it (host, pid from MPI_COMM_WORLD's
// set-up) but cannot be inspected.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coll_hccl/engine/progress_board.hpp"
#include "ucx_tl/ucx_liveness.hpp"

namespace hccl::engine {

// What MPI_COMM_WORLD's set-up learnt about each rank's process.
struct PeerProcess {
  std::string host;
  tl::ucx::ProcessId process;
  bool sameHost = false;  // on this process's host (same host name and boot id)
};

// What another host reported of one of its ranks (host_views.hpp).
struct RankView {
  int worldRank = -1;
  char state = '\0';         // its process state on its host (processState's letters; '\0' gone)
  bool recordKnown = false;  // its host has a progress board, so hasRecord means something
  bool hasRecord = false;
  bool torn = false;  // its record was being written when read (the rank stopped inside)
  CallProgress record;
};

struct DiagnosisInput {
  const ProgressBoard* board = nullptr;  // may be null: rules 3 and 4 are skipped
  std::span<const PeerProcess> world;    // by world rank
  // By world rank (or empty): what other hosts reported of their ranks. A rank with a view is
  // inspected as a rank of this host would be, through it.
  std::span<const std::optional<RankView>> remote;
  std::span<const int> members;  // communicator rank -> world rank
  int rank = 0;                  // the failing rank (communicator rank)
  CallProgress failed;           // its record of the failed call
  bool peerLost = false;         // the failure is a lost peer (failed.wait), not a timeout
  bool peerFailed = false;       // a peer withdrew what this rank was reading (rule 3b)
};

// "rank 2 (world rank 2, host vm, pid 1234)"
std::string describeRank(const DiagnosisInput& in, int rank);
// "call 117 (allreduce, 1048576 bytes)"
std::string describeCall(const CallProgress& p);
// "step 3/4, waiting to receive from rank 1" ("chunk 2/5 step 3/4, ..." for chunked calls)
std::string describeStep(const CallProgress& p);

struct Culprit {
  int rank = -1;       // communicator rank; -1: nothing points at one
  std::string reason;  // one sentence naming it, its process, its call and its step
};
// The rules in order, rule 3b waiting (sleeping) up to kVerdictWait for a peer's verdict.
Culprit findCulprit(const DiagnosisInput& in);

// findCulprit in stages, for a caller that must not sleep (the engine diagnoses under its lock,
// which other threads' calls need meanwhile): rules 1 to 3 (nullopt: none of them decides); rule
// 3b, one look at the board (nullopt: no verdict, or not a withdrawn read); rule 4.
// findCulprit is culpritByState, then culpritNamedByPeer again and again until kVerdictWait has
// passed, then culpritByChain.
std::optional<Culprit> culpritByState(const DiagnosisInput& in);
std::optional<Culprit> culpritNamedByPeer(const DiagnosisInput& in);
Culprit culpritByChain(const DiagnosisInput& in);
// How long rule 3b waits for a peer's verdict: past the side channel's 300 ms budget
// (DiagnosisChannel::kBudget), which bounds that peer's own diagnosis.
constexpr std::chrono::milliseconds kVerdictWait{500};

}  // namespace hccl::engine
