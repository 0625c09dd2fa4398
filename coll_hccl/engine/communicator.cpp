#include "coll_hccl/engine/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

}  // namespace

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
  if (!failure.failed() && params.comm_id >= kCommTags)
    failure = {HCCL_ERR_UNSUPPORTED,
               fmt::format("communicator id {} is beyond the {} that coll_hccl tells apart",
                           params.comm_id, kCommTags)};
  failure = params.allgather ? c->joinWorld(params, failure, cfg) : c->joinMembers(params, failure);
  if (failure.failed()) {
    err = std::move(failure.message);
    return failure.status;
  }
  c->options_ = std::move(cfg.options);
  c->layout_ = std::make_unique<algo::Layout>(layoutOf(*c->hierarchy_));
  // Level0 on the shared-memory link is priced as that link class. Whether the link came up is
  // decided alike on every rank (ShmLink's second round), so the ranks still decide alike.
  const bool level0OnLink = dynamic_cast<tl::ShmTransport*>(c->linkLayer_.get()) != nullptr;
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
  try {
    // Equal inputs on every rank from here: the outcome is the same everywhere.
    topo::Hierarchy world =
        declared ? std::move(*declared) : setup::discoveredWorldHierarchy(source, view);
    setup::WorldTransport wt = setup::openWorldTransport(exchange, params.world_rank, world,
                                                         cfg.options, engine.yieldWhenIdle);
    transport_ = std::move(wt.transport);
    if (!wt.note.empty() && engine.logs(1) && params.world_rank == 0) engine.log(1, wt.note);
    hierarchy_ = std::make_unique<topo::Hierarchy>(world);
    engine.world.emplace(EngineState::World{std::move(world), transport_});
  } catch (const topo::TopologyError& e) {
    return {HCCL_ERR_CONFIG, e.what()};
  } catch (const tl::UcxError& e) {
    return {HCCL_ERR_TRANSPORT, fmt::format("transport set-up failed: {}", e.what())};
  } catch (const std::exception& e) {
    return {HCCL_ERR_INTERNAL, fmt::format("transport set-up failed: {}", e.what())};
  }
  linkLayer_ = transport_;
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
  try {
    hierarchy_ =
        std::make_unique<topo::Hierarchy>(setup::memberHierarchy(engine.world->hierarchy, members));
  } catch (const topo::TopologyError& e) {
    return {HCCL_ERR_CONFIG, e.what()};
  }
  linkLayer_ = engine.world->transport;
  transport_ = std::make_shared<SubTransport>(linkLayer_, std::move(members), rank_);
  return {};
}

Communicator::~Communicator() = default;

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
      std::vector<std::uint64_t> counts(p);
      for (std::uint32_t r = 0; r < p; ++r) counts[r] = d.recvcounts[r] * scale;
      ci.coll = Collective::ReduceScatter;
      s.problem = algo::Problem::reduceScatter(p, 0, ci.inPlace);
      s.problem.blocks = algo::Blocks::of(counts);
      ci.count = s.problem.total() / p;
      ci.uneven = !s.problem.blocks.isUniform();
      break;
    }
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
      d.user_commutative != l.user_commutative)
    return false;
  if (d.coll != HCCL_COLL_REDUCE_SCATTER) return true;
  return d.recvcounts && std::equal(last_.recvcounts.begin(), last_.recvcounts.end(), d.recvcounts);
}

void Communicator::remember(const hccl_coll_desc_t& d, const CallShape& s) {
  last_.desc = d;
  last_.desc.recvcounts = nullptr;
  last_.desc.sendbuf = nullptr;
  last_.desc.recvbuf = nullptr;
  if (d.coll == HCCL_COLL_REDUCE_SCATTER && d.recvcounts)
    last_.recvcounts.assign(d.recvcounts, d.recvcounts + size_);
  else
    last_.recvcounts.clear();
  last_.shape = s;
  last_.plan.reset();
}

int Communicator::supported(const hccl_coll_desc_t& desc, std::string& explain) {
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
  std::string key = fmt::format("{}|{}|{}|{}", toString(pb), s.info.elemSize,
                                algo::toString(composed), pb.blocks.isUniform());
  if (!pb.blocks.isUniform())
    for (std::uint32_t r = 0; r < pb.ranks; ++r) key += fmt::format(",{}", pb.blocks.count(r));
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;

  const algo::Layout& lay = *layout_;
  const algo::RankGenerator compose = [&lay, composed](const algo::Problem& q, std::uint32_t r) {
    return algo::compose(lay, composed, q, r);
  };
  const auto gen = [&compose](const algo::Problem& q, std::uint32_t r) {
    return algo::withPrivateInput(q, r, compose);
  };
  auto plan = std::make_shared<Plan>();
  plan->decision = d;
  plan->algorithms = composed.algorithms;
  const std::uint64_t budget =
      std::max<std::uint64_t>(1, options_.settings.buffSizeBytes() / s.info.elemSize);
  const std::uint64_t chunk = algo::chunkSizeFor(pb, budget, gen);
  plan->chunks = algo::planChunks(pb, static_cast<std::uint32_t>(rank_), chunk);
  for (const algo::Chunk& c : plan->chunks) {
    std::string skey = fmt::format("{}|{}", key, toString(c.problem));
    if (!c.problem.blocks.isUniform())
      for (std::uint32_t r = 0; r < c.problem.ranks; ++r)
        skey += fmt::format(",{}", c.problem.blocks.count(r));
    auto it = schedules_.find(skey);
    if (it == schedules_.end())
      it = schedules_
               .emplace(skey, std::make_shared<const algo::RankSchedule>(
                                  gen(c.problem, static_cast<std::uint32_t>(rank_))))
               .first;
    plan->schedules.push_back(it->second);
    plan->scratchElems = std::max(plan->scratchElems, algo::scratchCount(*it->second));
  }
  if (plans_.size() > 1024) {  // many distinct shapes: keep memory bounded
    plans_.clear();
    schedules_.clear();
  }
  plans_.emplace(key, plan);
  return plan;
}

hccl_status_t Communicator::start(const hccl_coll_desc_t& desc, std::unique_ptr<Request>& req,
                                  std::string& err) {
  if (!sameAsLast(desc)) {
    CallShape fresh;
    if (const hccl_status_t st = describe(desc, fresh, err); st != HCCL_SUCCESS) return st;
    remember(desc, fresh);
    last_.supported = 1;  // starting implies the caller was told yes
  }
  const CallShape& s = last_.shape;
  if (!last_.plan) last_.plan = planFor(s, err);
  std::shared_ptr<const Plan> plan = last_.plan;
  if (!plan) return HCCL_ERR_UNSUPPORTED;
  std::optional<Reduction> reduction;
  if (reduces(s.info.coll)) {
    if (s.userOp) {
      if (!desc.user_fn) {
        err = "user op without a function";
        return HCCL_ERR_ARG;
      }
      reduction.emplace(
          Reduction::user(desc.user_fn, desc.user_ctx, s.info.elemSize, s.info.commutative));
    } else {
      reduction.emplace(Reduction::predefined(*s.info.type, *s.info.op));
    }
  }
  const std::uint32_t seq = seq_++;
  if (idle_.empty()) {
    req = std::make_unique<Request>(*this);
  } else {
    req = std::move(idle_.back());
    idle_.pop_back();
  }
  if (!req->start(std::move(plan), desc.in_place ? nullptr : desc.sendbuf, desc.recvbuf,
                  s.info.elemSize, std::move(reduction), seq)) {
    err = req->error();
    const hccl_status_t st = req->status();
    release(std::move(req));
    return st;
  }
  return HCCL_SUCCESS;
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
  return out;
}

}  // namespace hccl::engine
