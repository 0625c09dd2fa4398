#include "coll_hccl/engine/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "algorithms/scratch_ranks.hpp"
#include "algorithms/write_contract.hpp"
#include "coll_hccl/engine/engine_state.hpp"
#include "coll_hccl/engine/hierarchy_layout.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"
#include "coll_hccl/engine/request.hpp"
#include "coll_hccl/engine/sub_transport.hpp"
#include "topology/error.hpp"
#include "topology/resolve.hpp"
#include "ucx_tl/shm_transport.hpp"
#include "ucx_tl/ucx_tag.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::engine {
namespace {

static_assert(HCCL_DT_COUNT == kNumDataTypes);
static_assert(static_cast<int>(HCCL_DT_BFLOAT16) == static_cast<int>(DataType::BFloat16));
static_assert(static_cast<int>(HCCL_DT_BYTE) == static_cast<int>(DataType::Byte));
static_assert(static_cast<int>(HCCL_OP_BXOR) == static_cast<int>(ReduceOp::BXor));

// Tag::comm carries this many bits in the UCX tag: communicators with larger ids decline, on
// every rank alike (Open MPI agrees on the id and hands out the lowest free one).
constexpr std::uint64_t kCommTags = std::uint64_t{1} << tl::ucx::kCommBits;

// Groups up to this size may run small blocking calls on the slots (every rank compiles every
// rank's schedule once per call shape).
constexpr int kMaxSlotRanks = 16;

const char* collName(hccl_coll_t c) {
  static constexpr const char* kNames[HCCL_COLL_COUNT] = {
      "allreduce", "allgather",  "reduce_scatter", "reduce_scatter_block",
      "bcast",     "reduce",     "scatter",        "gather",
      "alltoall",  "allgatherv", "gatherv",        "scatterv",
      "alltoallv", "barrier",    "scan",           "exscan"};
  return c >= 0 && c < HCCL_COLL_COUNT ? kNames[c] : "?";
}

// ReduceScatter and AllGather with MPI's per-rank counts (recvcounts, in elements of `scale`).
void setPerRankCounts(algo::Problem base, const std::size_t* counts, std::uint32_t p,
                      std::uint64_t scale, CallShape& s) {
  std::vector<std::uint64_t> blocks(p);
  for (std::uint32_t r = 0; r < p; ++r) blocks[r] = counts[r] * scale;
  s.problem = std::move(base);
  s.problem.blocks = algo::Blocks::of(blocks);
  s.info.count = s.problem.total() / p;
  s.info.uneven = !s.problem.blocks.isUniform();
}

// False, with why, when a rooted call names a root outside the communicator.
bool rootInside(int root, std::uint32_t p, std::string& why) {
  if (root >= 0 && static_cast<std::uint32_t>(root) < p) return true;
  why = fmt::format("root {} outside the communicator's {} ranks", root, p);
  return false;
}

}  // namespace

std::unique_ptr<Communicator> Communicator::overTransport(EngineState& engine,
                                                          std::shared_ptr<tl::Transport> transport,
                                                          int rank, int size) {
  std::unique_ptr<Communicator> c(new Communicator);
  c->engine_ = &engine;
  c->rank_ = rank;
  c->size_ = size;
  c->label_ = "'over a transport'";
  c->commTag_ = 1;
  c->members_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) c->members_[static_cast<std::size_t>(r)] = r;
  c->linkLayer_ = transport;
  c->transport_ = std::move(transport);
  return c;
}

hccl_status_t Communicator::create(EngineState& engine, const hccl_comm_params_t& params,
                                   std::unique_ptr<Communicator>& out, std::string& err) {
  std::unique_ptr<Communicator> c(new Communicator);
  c->engine_ = &engine;
  c->rank_ = params.rank;
  c->size_ = params.size;
  c->label_ = fmt::format("'{}' (cid {})", params.name ? params.name : "", params.comm_id);
  c->commTag_ = static_cast<std::uint32_t>(params.comm_id % kCommTags);

  setup::Configuration cfg;
  const auto loadModel = [&engine](const std::string& path, std::string& e) {
    return &engine.costModel(path, e);
  };
  setup::Failure failure;
  try {
    failure = setup::configure(params.settings, loadModel, cfg);
  } catch (const std::exception& e) {
    failure = {HCCL_ERR_INTERNAL, fmt::format("local set-up failed: {}", e.what())};
  }
  // The highest tag value is the transport's side channel's (ucx_tag.hpp).
  if (!failure.failed() && params.comm_id >= tl::ucx::kSideComm)
    failure = {HCCL_ERR_UNSUPPORTED,
               fmt::format("communicator id {} is beyond the {} that coll_hccl tells apart",
                           params.comm_id, tl::ucx::kSideComm)};
  failure = params.allgather ? c->joinWorld(params, failure, cfg) : c->joinMembers(params, failure);
  if (failure.failed()) {
    err = std::move(failure.message);
    return failure.status;
  }
  c->options_ = std::move(cfg.options);
  if (!c->options_.trace.empty()) {
    if (!engine.trace)
      engine.trace = std::make_unique<TraceLog>(
          TraceLog::pathFor(c->options_.trace, params.world_rank), c->options_.traceEvents);
    c->trace_ = engine.trace.get();
    c->traceServer_ = c->hierarchy_->serverOf(static_cast<std::uint32_t>(c->rank_));
  }
  c->layout_ = std::make_unique<algo::Layout>(layoutOf(*c->hierarchy_));
  // Level0 on the shared-memory link is priced as that link class. Whether the link came up is
  // decided alike on every rank (ShmLink's second round), so the ranks still decide alike.
  auto* shmLayer = dynamic_cast<tl::ShmTransport*>(c->linkLayer_.get());
  const bool level0OnLink = shmLayer != nullptr;
  // The slots serve a group that is its server's whole set of ranks on the link: every reader of
  // a broadcast channel then takes part in every call on it. Equal on every rank of the group.
  if (shmLayer && !engine.threadMultiple && c->size_ >= 2 && c->size_ <= kMaxSlotRanks &&
      shmLayer->link().localRanks().size() == static_cast<std::size_t>(c->size_) &&
      std::all_of(c->members_.begin(), c->members_.end(),
                  [&](int w) { return shmLayer->link().local(w); }))
    c->fastLink_ = &shmLayer->link();
  c->selector_ = std::make_unique<algo::Selector>(
      c->layout_->shape(), c->options_.settings,
      level0OnLink ? cfg.model->withLevel0OnSharedMemory() : *cfg.model);

  if (engine.logs(2)) {
    engine.log(2, fmt::format("{} rank {}: {} -> {}; links:{}", c->label_, c->rank_,
                              c->hierarchy_->describe(), c->layout_->shape().describe(),
                              c->options_.ucxSources));
    // The link layer is reported by the communicator that opened it (MPI_COMM_WORLD's), once.
    tl::Transport* t = c->transport_ == c->linkLayer_ ? c->linkLayer_.get() : nullptr;
    if (auto* shm = dynamic_cast<tl::ShmTransport*>(t)) {
      engine.log(2,
                 fmt::format("{} rank {} level0: {}", c->label_, c->rank_, shm->link().describe()));
      t = &shm->base();
    }
    if (c->fastLink_)
      engine.log(2,
                 fmt::format("{} rank {} level0 slots: {}", c->label_, c->rank_, c->slotPaths()));
    if (auto* ucx = dynamic_cast<tl::UcxTransport*>(t))
      engine.log(2, fmt::format("{} rank {} transport: {}", c->label_, c->rank_, ucx->describe()));
    if (c->rank_ == 0) engine.log(2, c->decisionTable());
  }
  out = std::move(c);
  return HCCL_SUCCESS;
}

setup::Failure Communicator::joinWorld(const hccl_comm_params_t& params, setup::Failure local,
                                       const setup::Configuration& cfg) {
  EngineState& engine = *engine_;
  const setup::Exchange exchange = [&params](std::span<const std::byte> mine,
                                             std::span<std::byte> all) {
    return params.allgather(mine.data(), all.data(), mine.size(), params.allgather_ctx) == 0;
  };
  // Local stages first; a failure travels in the exchange instead of returning early.
  topo::TopologySource source;
  std::optional<topo::Hierarchy> declared;
  std::vector<std::byte> record;
  try {
    source = topo::TopologySource::fromEnvironment();
    record = engine.localRecord();
    if (!local.failed())
      declared = setup::declaredWorldHierarchy(source, static_cast<std::uint32_t>(size_));
  } catch (const topo::TopologyError& e) {
    if (!local.failed()) local = {HCCL_ERR_CONFIG, e.what()};
  } catch (const std::exception& e) {
    if (!local.failed())
      local = {HCCL_ERR_INTERNAL, fmt::format("local set-up failed: {}", e.what())};
  }
  record.resize(topo::RankRecord::kSize);

  setup::WorldView view;
  setup::Failure agreed =
      setup::agreeOnWorld(exchange, params.world_rank, params.world_size, local, cfg.fingerprint,
                          declared ? &*declared : nullptr, record, view);
  if (agreed.failed()) return agreed;
  std::vector<PeerProcess> processes;
  std::unique_ptr<ProgressBoard> board;
  try {
    processes = setup::peerProcesses(view, params.world_rank);
    std::string why;
    board = setup::openProgressBoard(processes, params.world_rank, why);
    if (!board)
      engine.log(1, fmt::format("no progress board, so faults name fewer culprits: {}", why));
  } catch (const std::exception& e) {
    return {HCCL_ERR_INTERNAL, fmt::format("local set-up failed: {}", e.what())};
  }
  // Every rank of the host has opened the board once the transport's exchange is over.
  struct Unlink {
    ProgressBoard* b;
    ~Unlink() {
      if (b) b->unlink();
    }
  } unlink{board.get()};
  try {
    // Equal inputs on every rank from here: the outcome is the same everywhere.
    topo::Hierarchy world =
        declared ? std::move(*declared) : setup::discoveredWorldHierarchy(source, view);
    setup::WorldTransport wt = setup::openWorldTransport(exchange, params.world_rank, world,
                                                         cfg.options, engine.yieldWhenIdle);
    transport_ = std::move(wt.transport);
    if (!wt.note.empty() && engine.logs(1) && params.world_rank == 0) engine.log(1, wt.note);
    hierarchy_ = std::make_unique<topo::Hierarchy>(world);
    engine.world.emplace(EngineState::World{std::move(world), transport_, std::move(processes),
                                            std::move(board), nullptr});
    EngineState::World& w = *engine.world;
    w.channel = std::make_unique<DiagnosisChannel>(*w.transport, w.board.get(), w.processes,
                                                   params.world_rank, engine.yieldWhenIdle);
  } catch (const topo::TopologyError& e) {
    return {HCCL_ERR_CONFIG, e.what()};
  } catch (const tl::UcxError& e) {
    return {HCCL_ERR_TRANSPORT, fmt::format("transport set-up failed: {}", e.what())};
  } catch (const std::exception& e) {
    return {HCCL_ERR_INTERNAL, fmt::format("transport set-up failed: {}", e.what())};
  }
  linkLayer_ = transport_;
  members_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) members_[static_cast<std::size_t>(r)] = r;
  return {};
}

setup::Failure Communicator::joinMembers(const hccl_comm_params_t& params,
                                         const setup::Failure& local) {
  if (local.failed()) return local;
  const EngineState& engine = *engine_;
  if (!engine.world)
    return {HCCL_ERR_UNSUPPORTED,
            "coll_hccl is not set up on MPI_COMM_WORLD (its set-up failed or it was excluded), so "
            "no communicator inside it uses coll_hccl"};
  if (!params.world_ranks)
    return {HCCL_ERR_UNSUPPORTED,
            "the communicator includes processes outside this MPI_COMM_WORLD (spawned or "
            "connected jobs)"};
  std::vector<int> members(params.world_ranks, params.world_ranks + size_);
  members_ = members;
  try {
    hierarchy_ =
        std::make_unique<topo::Hierarchy>(setup::memberHierarchy(engine.world->hierarchy, members));
  } catch (const topo::TopologyError& e) {
    return {HCCL_ERR_CONFIG, e.what()};
  }
  linkLayer_ = engine.world->transport;
  if (engine.world->channel) engine.world->channel->forget(commTag_);
  transport_ = std::make_shared<SubTransport>(linkLayer_, std::move(members), rank_);
  return {};
}

Communicator::~Communicator() {
  // A failed call's receive that UCX could not withdraw still points into this scratch: freeing
  // it would let a resumed peer's message land in freed (or unmapped) memory.
  const auto holds = [](const std::shared_ptr<tl::Transport>& t) { return t && t->heldOrphans(); };
  if (engine_ == nullptr || !(holds(transport_) || holds(linkLayer_))) return;
  for (Scratch& s : scratch_)
    if (s.data) engine_->orphanedScratch.push_back(std::move(s.data));
}

std::span<const PeerProcess> Communicator::worldProcesses() const {
  if (!engine_->world) return {};
  return engine_->world->processes;
}

ProgressBoard* Communicator::board() const {
  return engine_->world ? engine_->world->board.get() : nullptr;
}

DiagnosisChannel* Communicator::diagnosisChannel() const {
  return engine_->world ? engine_->world->channel.get() : nullptr;
}

hccl_status_t Communicator::describe(const hccl_coll_desc_t& d, CallShape& s,
                                     std::string& why) const {
  if (d.dtype < 0 || d.dtype >= HCCL_DT_COUNT) {
    why = fmt::format("unknown element type {}", static_cast<int>(d.dtype));
    return HCCL_ERR_ARG;
  }
  if (d.elem_size == 0) {
    why = "element size 0";
    return HCCL_ERR_ARG;
  }
  const auto type = static_cast<DataType>(d.dtype);
  const auto p = static_cast<std::uint32_t>(size_);
  std::size_t elem = d.elem_size;
  std::uint64_t scale = 1;  // opaque bytes without a user op move (and bit-combine) as bytes
  s.userOp = d.op == HCCL_OP_USER;
  if (type == DataType::Byte && !s.userOp) {
    scale = d.elem_size;
    elem = 1;
  } else if (type != DataType::Byte && d.elem_size != sizeOf(type)) {
    why = fmt::format("element size {} for {} (expected {})", d.elem_size, hccl::name(type),
                      sizeOf(type));
    return HCCL_ERR_ARG;
  }
  // ci.count is MPI's count as algo::CallInfo defines it (per rank for Scatter and Gather, per
  // pair for AllToAll), the same as hccl_info's for the same call, so the prediction matches.
  algo::CallInfo& ci = s.info;
  ci.elemSize = elem;
  ci.type = type;
  ci.inPlace = d.in_place != 0;
  ci.commutative = !s.userOp || d.user_commutative != 0;
  switch (d.coll) {
    case HCCL_COLL_ALLREDUCE:
      ci.coll = Collective::AllReduce;
      ci.count = d.count * scale;
      s.problem = algo::Problem::allReduce(p, ci.count, ci.inPlace);
      break;
    case HCCL_COLL_ALLGATHER:
      ci.coll = Collective::AllGather;
      ci.count = d.count * scale;
      s.problem = algo::Problem::allGather(p, ci.count, ci.inPlace);
      break;
    case HCCL_COLL_REDUCE_SCATTER_BLOCK:
      ci.coll = Collective::ReduceScatter;
      ci.count = d.count * scale;
      s.problem = algo::Problem::reduceScatter(p, ci.count, ci.inPlace);
      break;
    case HCCL_COLL_REDUCE_SCATTER: {
      if (!d.recvcounts) {
        why = "reduce_scatter without recvcounts";
        return HCCL_ERR_ARG;
      }
      ci.coll = Collective::ReduceScatter;
      setPerRankCounts(algo::Problem::reduceScatter(p, 0, ci.inPlace), d.recvcounts, p, scale, s);
      break;
    }
    case HCCL_COLL_BCAST:
    case HCCL_COLL_REDUCE:
    case HCCL_COLL_SCATTER: {
      if (!rootInside(d.root, p, why)) return HCCL_ERR_ARG;
      const auto root = static_cast<std::uint32_t>(d.root);
      ci.count = d.count * scale;
      // Only the root may be in place, so the choice (made alike on every rank) ignores it; the
      // rank's own schedule follows its own buffers.
      ci.inPlace = false;
      if (d.coll == HCCL_COLL_BCAST) {
        ci.coll = Collective::Broadcast;
        s.problem = algo::Problem::broadcast(p, ci.count, root);
      } else if (d.coll == HCCL_COLL_REDUCE) {
        ci.coll = Collective::Reduce;
        s.problem = algo::Problem::reduce(p, ci.count, root, d.in_place != 0);
      } else {
        ci.coll = Collective::Scatter;
        s.problem = algo::Problem::scatter(p, ci.count, root, d.in_place != 0);
      }
      break;
    }
    case HCCL_COLL_ALLTOALL:
      ci.coll = Collective::AllToAll;
      ci.count = d.count * scale;
      s.problem = algo::Problem::allToAll(p, ci.count, ci.inPlace);
      break;
    case HCCL_COLL_ALLGATHERV: {  // AllGather with the blocks MPI's recvcounts give ([same])
      if (!d.recvcounts) {
        why = "allgatherv without recvcounts";
        return HCCL_ERR_ARG;
      }
      if (d.rdispls) {
        why = "allgatherv with displacements (the adapter packs them)";
        return HCCL_ERR_ARG;
      }
      ci.coll = Collective::AllGather;
      setPerRankCounts(algo::Problem::allGather(p, 0, ci.inPlace), d.recvcounts, p, scale, s);
      break;
    }
    case HCCL_COLL_GATHER:
    case HCCL_COLL_GATHERV:
    case HCCL_COLL_SCATTERV: {
      if (!rootInside(d.root, p, why)) return HCCL_ERR_ARG;
      const auto root = static_cast<std::uint32_t>(d.root);
      const auto me = static_cast<std::uint32_t>(rank_);
      const bool gather = d.coll != HCCL_COLL_SCATTERV;
      ci.coll = gather ? Collective::Gather : Collective::Scatter;
      ci.inPlace = false;  // only the root can be in place (see Reduce)
      if (d.coll == HCCL_COLL_GATHER) {
        ci.count = d.count * scale;
        s.problem = algo::Problem::gather(p, ci.count, root, d.in_place != 0);
        break;
      }
      // The V forms: the root knows every count, a non-root its own ([local]); the choice rests
      // on what every rank knows alike, none of the counts.
      ci.count = 0;
      ci.uneven = true;
      // Only generators that build a rank's schedule from its own count may serve: the root
      // could build any, a non-root not, and every rank must choose alike.
      ci.rankLocal = true;
      const size_t* counts = gather ? d.recvcounts : d.sendcounts;
      if (me == root) {
        if (!counts) {
          why = fmt::format("{} root without counts", collName(d.coll));
          return HCCL_ERR_ARG;
        }
        if ((gather && d.rdispls) || (!gather && d.sdispls)) {
          why = fmt::format("{} with displacements (the adapter packs them)", collName(d.coll));
          return HCCL_ERR_ARG;
        }
        std::vector<std::uint64_t> c(p);
        for (std::uint32_t r = 0; r < p; ++r) c[r] = counts[r] * scale;
        s.problem = gather ? algo::Problem::gatherV(c, root, d.in_place != 0)
                           : algo::Problem::scatterV(c, root, d.in_place != 0);
      } else {
        s.problem = gather ? algo::Problem::gatherVNonRoot(p, root, me, d.count * scale)
                           : algo::Problem::scatterVNonRoot(p, root, me, d.count * scale);
      }
      break;
    }
    case HCCL_COLL_ALLTOALLV: {
      if (!d.recvcounts || (!d.in_place && !d.sendcounts)) {
        why = "alltoallv without counts";
        return HCCL_ERR_ARG;
      }
      if (d.sdispls || d.rdispls) {
        why = "alltoallv with displacements (the adapter packs them)";
        return HCCL_ERR_ARG;
      }
      std::vector<std::uint64_t> send(p), recv(p);
      for (std::uint32_t r = 0; r < p; ++r) {
        recv[r] = d.recvcounts[r] * scale;
        send[r] = d.in_place ? recv[r] : d.sendcounts[r] * scale;
      }
      ci.coll = Collective::AllToAllV;
      ci.count = 0;  // every rank knows its row and column only
      ci.uneven = true;
      ci.rankLocal = true;
      s.problem =
          algo::Problem::allToAllVAt(p, static_cast<std::uint32_t>(rank_), send, recv, ci.inPlace);
      break;
    }
    case HCCL_COLL_BARRIER:
      ci.coll = Collective::Barrier;
      ci.count = 0;
      s.problem = algo::Problem::barrier(p);
      // keyed(): the root of the Bcast that came just before, a selection input (the gathered
      // Barrier's sequence rule) and where a gathered Barrier gathers.
      if (d.root >= 0) {
        if (!rootInside(d.root, p, why)) return HCCL_ERR_ARG;
        ci.afterBroadcastFrom = static_cast<std::uint32_t>(d.root);
        ci.afterBroadcastBytes = d.count;
        s.problem.root = static_cast<std::uint32_t>(d.root);
      }
      break;
    case HCCL_COLL_SCAN:
    case HCCL_COLL_EXSCAN:
      ci.coll = d.coll == HCCL_COLL_SCAN ? Collective::Scan : Collective::Exscan;
      ci.count = d.count * scale;
      // Any rank may be in place on its own (MPI does not ask it of all), so the choice ignores
      // it as a rooted call's does; the rank's own schedule follows its own buffers.
      ci.inPlace = false;
      s.problem = d.coll == HCCL_COLL_SCAN ? algo::Problem::scan(p, ci.count, d.in_place != 0)
                                           : algo::Problem::exscan(p, ci.count, d.in_place != 0);
      break;
    default:
      why = fmt::format("unknown collective {}", static_cast<int>(d.coll));
      return HCCL_ERR_ARG;
  }
  if (reduces(ci.coll)) {
    if (s.userOp) {
      ci.op.reset();
    } else if (d.op < HCCL_OP_SUM || d.op > HCCL_OP_BXOR) {
      why = fmt::format("unknown op {}", static_cast<int>(d.op));
      return HCCL_ERR_ARG;
    } else {
      ci.op = static_cast<ReduceOp>(d.op);
      if (!kernel(type, *ci.op)) {
        why = fmt::format("no {} kernel for {}", hccl::name(*ci.op), hccl::name(type));
        return HCCL_ERR_UNSUPPORTED;
      }
    }
  }
  return HCCL_SUCCESS;
}

bool Communicator::sameAsLast(const hccl_coll_desc_t& d) const {
  const hccl_coll_desc_t& l = last_.desc;
  if (last_.supported < 0 || d.coll != l.coll || d.in_place != l.in_place || d.count != l.count ||
      d.dtype != l.dtype || d.elem_size != l.elem_size || d.op != l.op ||
      d.user_commutative != l.user_commutative || d.root != l.root)
    return false;
  // Per-rank count arrays beyond recvcounts: described afresh every time (plans stay cached).
  if (d.coll == HCCL_COLL_GATHERV || d.coll == HCCL_COLL_SCATTERV || d.coll == HCCL_COLL_ALLTOALLV)
    return false;
  if (d.coll != HCCL_COLL_REDUCE_SCATTER && d.coll != HCCL_COLL_ALLGATHERV) return true;
  return d.recvcounts && std::equal(last_.recvcounts.begin(), last_.recvcounts.end(), d.recvcounts);
}

void Communicator::remember(const hccl_coll_desc_t& d, const CallShape& s) {
  last_.desc = d;
  last_.desc.recvcounts = nullptr;
  last_.desc.sendbuf = nullptr;
  last_.desc.recvbuf = nullptr;
  last_.desc.sendcounts = last_.desc.sdispls = last_.desc.rdispls = nullptr;
  if ((d.coll == HCCL_COLL_REDUCE_SCATTER || d.coll == HCCL_COLL_ALLGATHERV) && d.recvcounts)
    last_.recvcounts.assign(d.recvcounts, d.recvcounts + size_);
  else
    last_.recvcounts.clear();
  last_.shape = s;
  last_.plan.reset();
}

int Communicator::supported(const hccl_coll_desc_t& in, std::string& explain) {
  // A call that ran on the slots is asked about after it ran (its verbose line): keyed as it was
  // started, before it took its number. Any other call is asked before it starts.
  const bool ranOnSlots = fastRan_ && fastSeq_ + 1 == seq_ && !in.nonblocking;
  hccl_coll_desc_t barrier;
  const hccl_coll_desc_t& desc = keyed(in, ranOnSlots ? fastAfter_ : prevBcastRoot_,
                                       ranOnSlots ? fastAfterBytes_ : prevBcastBytes_, barrier);
  if (!sameAsLast(desc)) {
    CallShape s;
    std::string why;
    const hccl_status_t st = describe(desc, s, why);
    if (st != HCCL_SUCCESS && st != HCCL_ERR_UNSUPPORTED) {
      explain = why;
      return st;
    }
    remember(desc, s);
    if (st == HCCL_ERR_UNSUPPORTED) {
      last_.supported = 0;
      last_.explain = why;
    } else {
      const algo::Decision& d = selector_->decide(s.info);
      last_.supported = d.ok() ? 1 : 0;
      last_.explain = d.ok() ? d.summary() : d.error;
      // A decision whose schedule cannot be built (a composition the generators do not have yet)
      // is declined here, where the previous component can still take the call, not failed at
      // start. The plan depends on the shared arguments only, so every rank declines alike.
      if (d.ok()) {
        std::string err;
        try {
          last_.plan = planFor(last_.shape, err);
        } catch (const std::exception& e) {
          err = e.what();
        }
        if (!last_.plan) {
          last_.supported = 0;
          last_.explain = fmt::format("{}: no schedule: {}", d.summary(), err);
        }
      }
    }
  }
  explain = last_.explain;
  return last_.supported;
}

std::shared_ptr<const Plan> Communicator::planFor(const CallShape& s, std::string& err) {
  const algo::Decision& d = selector_->decide(s.info);
  if (!d.ok()) {
    err = d.error;
    return nullptr;
  }
  const algo::PlanKey& composed = d.plan;
  const algo::Problem& pb = s.problem;
  const PlanCacheKey key{pb, s.info.elemSize, composed};
  if (auto hit = plans_.find(key)) return hit;

  const algo::Layout& lay = *layout_;
  auto plan = std::make_shared<Plan>();
  plan->decision = d;
  plan->algorithms = composed.algorithms;
  plan->key = key;
  plan->gen = algo::composedGenerator(lay, composed);
  const std::uint64_t budget =
      std::max<std::uint64_t>(1, options_.settings.buffSizeBytes() / s.info.elemSize);
  // Every rank must cut the same chunks (engineChunkSize says why in-place is left out).
  const std::uint64_t chunk = algo::engineChunkSize(lay, composed, pb, s.info.inPlace, budget);
  plan->chunks = algo::ChunkPlan(pb, static_cast<std::uint32_t>(rank_), chunk);
  const std::size_t planned = std::min(plan->chunks.runs(), algo::kRunsPlanned);
  for (std::size_t run = 0; run < planned; ++run) {
    std::shared_ptr<const algo::RankSchedule> schedule = runSchedule(*plan, run);
    plan->scratchElems = std::max(plan->scratchElems, algo::scratchCount(*schedule));
    plan->schedules.push_back(std::move(schedule));
  }
  return plans_.insert(key, std::move(plan));
}

// A run's schedule goes into the communicator's cache when its plan has few runs, the cache
// shared with the planned runs (and with other plans whose chunks have the same Problem). A plan
// with many (a V form with many distinct counts: up to 2p + 1 runs of an O(p) schedule each)
// keeps none: its request holds the run's schedule while the run's chunks run, and the next call
// makes it again, at the cost of one rank's schedule per run, the order of the run's own work.
std::shared_ptr<const algo::RankSchedule> Communicator::runSchedule(const Plan& plan,
                                                                    std::size_t run) {
  constexpr std::size_t kCachedRuns = 8;
  if (run < plan.schedules.size()) return plan.schedules[run];
  ScheduleCacheKey skey{plan.key, plan.chunks.runProblem(run)};
  const bool cached = plan.chunks.runs() <= kCachedRuns;
  if (cached)
    if (auto hit = schedules_.find(skey)) return hit;
  auto schedule = std::make_shared<const algo::RankSchedule>(
      plan.gen(skey.chunk, static_cast<std::uint32_t>(rank_)));
  return cached ? schedules_.insert(skey, std::move(schedule)) : schedule;
}

hccl_status_t Communicator::start(const hccl_coll_desc_t& in, std::unique_ptr<Request>& req,
                                  std::string& err) {
  if (broken_) return brokenError(err);
  hccl_coll_desc_t barrier;
  const hccl_coll_desc_t& desc = keyed(in, prevBcastRoot_, prevBcastBytes_, barrier);
  if (!sameAsLast(desc)) {
    CallShape fresh;
    if (const hccl_status_t st = describe(desc, fresh, err); st != HCCL_SUCCESS) return st;
    remember(desc, fresh);
    last_.supported = 1;  // starting implies the caller was told yes
  }
  const CallShape& s = last_.shape;
  if (!last_.plan) last_.plan = planFor(s, err);
  if (!last_.plan) return HCCL_ERR_UNSUPPORTED;
  const Prepared call{s,
                      last_.plan,
                      desc.in_place ? nullptr : desc.sendbuf,
                      desc.recvbuf,
                      desc.user_fn,
                      desc.user_ctx,
                      std::nullopt};
  if (idle_.empty()) {
    req = std::make_unique<Request>(*this);
  } else {
    req = std::move(idle_.back());
    idle_.pop_back();
  }
  return launch(call, req, err);
}

hccl_status_t Communicator::prepare(const hccl_coll_desc_t& in, Prepared& out, std::string& err) {
  hccl_coll_desc_t barrier;
  const hccl_coll_desc_t& desc =
      keyed(in, prevBcastRoot_, prevBcastBytes_, barrier);  // before it is numbered
  // Taken before anything can fail, so that every rank's init takes one number whatever happens.
  const std::uint32_t seq = seq_++;
  noteNumbered(desc.coll, desc.root, desc.count * desc.elem_size);
  CallShape shape;
  if (const hccl_status_t st = describe(desc, shape, err); st != HCCL_SUCCESS) return st;
  std::shared_ptr<const Plan> plan = planFor(shape, err);
  if (!plan) return HCCL_ERR_UNSUPPORTED;
  if (shape.userOp && !desc.user_fn) {
    err = "user op without a function";
    return HCCL_ERR_ARG;
  }
  out = Prepared{std::move(shape),
                 std::move(plan),
                 desc.in_place ? nullptr : desc.sendbuf,
                 desc.recvbuf,
                 desc.user_fn,
                 desc.user_ctx,
                 seq};
  return HCCL_SUCCESS;
}

hccl_status_t Communicator::brokenError(std::string& err) const {
  err = fmt::format("communicator {} broken since call {}: {}", label_, broken_->seq + 1,
                    broken_->message);
  return broken_->status;
}

hccl_status_t Communicator::launch(const Prepared& call, std::unique_ptr<Request>& req,
                                   std::string& err) {
  if (broken_) {  // a persistent start arrives here directly
    release(std::move(req));
    return brokenError(err);
  }
  const CallShape& s = call.shape;
  std::optional<Reduction> reduction;
  if (reduces(s.info.coll)) {
    if (s.userOp) {
      if (!call.userFn) {
        err = "user op without a function";
        release(std::move(req));
        return HCCL_ERR_ARG;
      }
      reduction.emplace(
          Reduction::user(call.userFn, call.userCtx, s.info.elemSize, s.info.commutative));
    } else {
      reduction.emplace(Reduction::predefined(*s.info.type, *s.info.op));
    }
  }
  // A nonblocking or blocking call takes the next number at its start; a persistent one has
  // its init's number (Prepared::seq).
  const std::uint32_t seq = call.seq ? *call.seq : seq_++;
  if (!call.seq)
    noteNumbered(s.info.coll == Collective::Broadcast ? HCCL_COLL_BCAST : HCCL_COLL_COUNT,
                 static_cast<int>(s.problem.root), s.info.bytes());
  if (!req->start(call.plan, call.send, call.recv, s.info.elemSize, std::move(reduction), seq,
                  s.info.coll, s.info.bytes())) {
    err = req->error();
    const hccl_status_t st = req->status();
    release(std::move(req));
    return st;
  }
  return HCCL_SUCCESS;
}

void Communicator::markBroken(std::uint32_t seq, hccl_status_t status, const std::string& message) {
  if (!broken_ || broken_->seq == seq) broken_ = Broken{seq, status, message};
}

void Communicator::release(std::unique_ptr<Request> r) {
  if (r && r->finished() && idle_.size() < 16) idle_.push_back(std::move(r));
}

std::byte* Communicator::borrowScratch(std::size_t bytes) {
  for (Scratch& s : scratch_)
    if (!s.busy && s.bytes >= bytes) {
      s.busy = true;
      return s.data.get();
    }
  for (Scratch& s : scratch_)
    if (!s.busy) {  // grow a free one rather than adding another
      s.data = std::make_unique<std::byte[]>(bytes);
      s.bytes = bytes;
      s.busy = true;
      return s.data.get();
    }
  scratch_.push_back({std::make_unique<std::byte[]>(bytes), bytes, true});
  return scratch_.back().data.get();
}

void Communicator::returnScratch(std::byte* p) {
  for (Scratch& s : scratch_)
    if (s.data.get() == p) s.busy = false;
}

std::string Communicator::decisionTable() {
  std::string out = fmt::format("{} decision table ({}, cost model: {}):", label_,
                                selector_->shape().describe(), selector_->model().source);
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
    for (std::uint64_t bytes = 4; bytes <= (std::uint64_t{64} << 20); bytes *= 16) {
      algo::CallInfo ci;
      ci.coll = c;
      ci.elemSize = 4;
      ci.count = std::max<std::uint64_t>(1, bytes / 4);
      ci.type = DataType::Float32;
      if (reduces(c)) ci.op = ReduceOp::Sum;
      out += fmt::format("\n  {:<14} {:>10} B: {}", name(c), ci.bytes(),
                         selector_->decide(ci).summary());
    }
  }
  // A Barrier's choice depends on the call before it (CallInfo::afterBroadcastFrom).
  for (const std::optional<std::uint32_t> after : {std::optional<std::uint32_t>{}, {0u}}) {
    algo::CallInfo ci;
    ci.coll = Collective::Barrier;
    ci.afterBroadcastFrom = after;
    out += fmt::format("\n  {:<14} {:>12}: {}", name(ci.coll), after ? "after Bcast 0" : "",
                       selector_->decide(ci).summary());
  }
  return out;
}

}  // namespace hccl::engine
