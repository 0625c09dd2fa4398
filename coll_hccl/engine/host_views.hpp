// Fault diagnosis across hosts: the progress board (progress_board.hpp) and the process table
// only show one host's ranks, so on a timeout or a lost peer the failing rank also asks the other
// hosts, over the link layer's side channel (transport.hpp: links and a tag space of their own,
// handled inside every progress call), and every rank answers while it progresses.
//
// The exchange (DiagnosisChannel::gather):
//   1. the failing rank sends its host view (what its host's board and kernel say of every rank
//      of the host: process state, record of the failed communicator) to two ranks of each other
//      host of the communicator (viewPartners: chosen by its own index on its host, so the ranks
//      of a host spread their questions over the other host's ranks), asking for theirs. Any rank
//      of a host gives the same view, so two suffice where one may be stopped or dead, and a
//      failure costs at most 2 x (hosts - 1) questions per failing rank instead of one per
//      remote rank (4096 ranks on 512 hosts: 1022 instead of 4088, for every failing rank);
//   2. any rank that receives a view keeps it (the latest per sender and communicator) and, when
//      asked, answers with its own host's view; ranks waiting in a call (the usual case for
//      survivors) progress the transport, so they answer within a progress round;
//   3. the failing rank progresses until it holds a view of every other host of the
//      communicator, or the budget (a few hundred ms) is spent, and then until its own views
//      have left (at most 100 ms more): once it returns it may never progress again. A view
//      that reports the lost peer as still running is asked again (of the same two partners),
//      for a bounded time (a killed process closes its links a little before its host shows it
//      as exited).
// No rank waits for any one peer: a stopped or dead rank, or a whole host that does not answer,
// only costs the budget, and its ranks stay uninspected (diagnosis.hpp names them by what
// MPI_COMM_WORLD's set-up learnt). Views pushed by ranks that failed earlier are already in the
// receiver's inbox when it fails itself, so a survivor that has since returned to its
// application still counts.
//
// Why the side channel and not PMIx: every survivor already progresses the UCX workers while it
// waits, the endpoints to other hosts exist or are made in a round trip, and every wait is the
// engine's own and bounded; PMIx (through the adapter) would go through the daemons, whose fence
// needs the stuck process too, and would put MPI-side calls into the engine's progress path.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/progress_board.hpp"
#include "ucx_tl/transport.hpp"

namespace hccl::engine {

struct HostView {
  std::uint32_t comm = 0;  // the communicator's tag the records are for
  std::uint32_t seq = 0;   // the sender's failed (or current) call
  int from = -1;           // the sender's world rank
  bool wantsReply = false;
  bool board = false;  // the sender's host has a progress board (records are known)
  std::vector<RankView> ranks;
};

std::vector<std::byte> encode(const HostView& v);
// nullopt (with why) for anything that is not a well-formed view.
std::optional<HostView> decode(std::span<const std::byte> bytes, std::string* why = nullptr);

// What this host's board and kernel show of the host's ranks (`world`'s sameHost ones and this
// rank), for communicator `comm`.
HostView localView(const ProgressBoard* board, std::span<const PeerProcess> world, int worldRank,
                   std::uint32_t comm, std::uint32_t seq);

// The ranks of another host (`hostRanks`, in communicator order) that the rank at index
// `askerIndex` of its own host's members asks for the host's view: hostRanks[askerIndex mod n]
// and the next one round the host, skipping `lostWorldRank` (it cannot answer; it is asked only
// when no other rank is left). Two ranks, or one on a host of one; always at least one.
std::vector<int> viewPartners(std::span<const int> hostRanks, std::size_t askerIndex,
                              int lostWorldRank);

class DiagnosisChannel {
 public:
  // Installs the answering handler on `link` (the world's link layer, ranks = world ranks).
  DiagnosisChannel(tl::Transport& link, const ProgressBoard* board,
                   std::span<const PeerProcess> world, int worldRank, bool yieldWhenIdle);
  ~DiagnosisChannel();
  DiagnosisChannel(const DiagnosisChannel&) = delete;
  DiagnosisChannel& operator=(const DiagnosisChannel&) = delete;

  // The exchange above for a failed call of communicator `comm` (members: communicator rank ->
  // world rank). Returns the view of every world rank some other host reported (index: world
  // rank), and in `note` how many hosts answered.
  std::vector<std::optional<RankView>> gather(std::uint32_t comm, std::uint32_t seq,
                                              std::span<const int> members, int lostWorldRank,
                                              std::chrono::milliseconds budget, std::string& note);
  // A communicator with this tag is being created: views of an earlier one no longer apply.
  void forget(std::uint32_t comm);

  static constexpr std::chrono::milliseconds kBudget{300};

 private:
  void onMessage(int peer, std::span<const std::byte> bytes);
  bool reportsExited(const HostView& v, int worldRank) const;

  tl::Transport& link_;
  const ProgressBoard* board_;
  std::span<const PeerProcess> world_;
  int worldRank_;
  bool yield_;
  // Views received, by communicator tag and sender; `arrival` orders them.
  struct Received {
    HostView view;
    std::uint64_t arrival = 0;
  };
  std::map<std::uint32_t, std::map<int, Received>> inbox_;
  std::uint64_t arrivals_ = 0;
};

}  // namespace hccl::engine
