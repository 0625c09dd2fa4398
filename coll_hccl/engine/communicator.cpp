#include "coll_hccl/engine/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>

#include "coll_hccl/engine/engine_state.hpp"
#include "coll_hccl/engine/hierarchy_layout.hpp"
#include "coll_hccl/engine/reduce_kernels.hpp"
#include "coll_hccl/engine/request.hpp"
#include "coll_hccl/engine/sub_transport.hpp"
#include "topology/error.hpp"
#include "topology/records.hpp"
#include "topology/resolve.hpp"
#include "ucx_tl/ucx_transport.hpp"

namespace hccl::engine {
namespace {

static_assert(HCCL_DT_COUNT == kNumDataTypes);
static_assert(static_cast<int>(HCCL_DT_BFLOAT16) == static_cast<int>(DataType::BFloat16));
static_assert(static_cast<int>(HCCL_DT_BYTE) == static_cast<int>(DataType::Byte));
static_assert(static_cast<int>(HCCL_OP_BXOR) == static_cast<int>(ReduceOp::BXor));

// Tag::comm carries this many bits in the UCX tag; more live communicators than that refuse.
constexpr std::uint32_t kCommTags = 4096;

std::uint64_t fnv(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// What every rank tells the others when a communicator is created.
struct Hello {
  char magic[4];
  std::int32_t status;  // this rank's set-up so far (hccl_status_t)
  std::int32_t worldRank;
  std::int32_t worldSize;
  std::uint64_t config;   // hash of everything the ranks must agree on to decide alike
  std::uint32_t tagBusy;  // this rank already has a live communicator with the same tag
  std::uint32_t pad;
  std::byte record[topo::RankRecord::kSize];
  char error[256];  // why this rank's set-up failed, so every rank can say it
};

std::string rankList(const std::vector<int>& ranks) {
  std::vector<std::uint32_t> u(ranks.begin(), ranks.end());
  return topo::formatRankList(u);
}

// The environment the hierarchy is built from (the rank table's contents are compared later).
std::string topologyInputs() {
  std::string out;
  for (const char* var : {topo::kEnvRankTable, topo::kEnvEmulate, topo::kEnvSupernodes}) {
    const char* v = std::getenv(var);
    out += fmt::format("{}={}|", var, v ? v : "");
  }
  return out;
}

}  // namespace

hccl_status_t Communicator::create(EngineState& engine, const hccl_comm_params_t& params,
                                   std::unique_ptr<Communicator>& out, std::string& err) {
  std::unique_ptr<Communicator> c(new Communicator);
  c->engine_ = &engine;
  c->rank_ = params.rank;
  c->size_ = params.size;
  c->commTag_ = static_cast<std::uint32_t>(params.comm_id % kCommTags);
  c->label_ = fmt::format("'{}' (cid {})", params.name ? params.name : "", params.comm_id);
  const auto gather = [&](const void* mine, void* all, std::size_t bytes) {
    return params.allgather(mine, all, bytes, params.allgather_ctx) == 0;
  };

  // 1. Local set-up; a failure is shared through the exchange below, never returned early.
  hccl_status_t local = HCCL_SUCCESS;
  std::string localErr;
  Hello mine{};
  std::memcpy(mine.magic, "HCE2", 4);
  mine.worldRank = params.world_rank;
  mine.worldSize = params.world_size;
  const algo::CostModel* model = nullptr;
  try {
    auto opts = optionsFromLayers(params.settings);
    if (!opts.ok()) {
      local = HCCL_ERR_CONFIG;
      localErr = opts.error().message;
    } else {
      c->options_ = std::move(opts).value();
      std::string modelErr;
      model = &engine.costModel(c->options_.settings.tuningFile.value, modelErr);
      if (!modelErr.empty()) {
        local = HCCL_ERR_CONFIG;
        localErr = modelErr;
      }
    }
    const std::vector<std::byte>& rec = engine.localRecord();
    std::memcpy(mine.record, rec.data(), std::min(rec.size(), sizeof mine.record));
    if (local == HCCL_SUCCESS)
      mine.config = fnv(fingerprint(c->options_) + "|" + std::to_string(model->fingerprint()) +
                        "|" + topologyInputs());
  } catch (const std::exception& e) {
    local = HCCL_ERR_INTERNAL;
    localErr = fmt::format("local set-up failed: {}", e.what());
  }
  mine.status = local;
  std::snprintf(mine.error, sizeof mine.error, "%s", localErr.c_str());
  mine.tagBusy = engine.liveTags.count(c->commTag_) > 0 ? 1 : 0;

  // 2. Everyone learns everyone's outcome, placement and configuration.
  std::vector<Hello> all(static_cast<std::size_t>(c->size_));
  if (!gather(&mine, all.data(), sizeof(Hello))) {
    err = "the bootstrap all-gather failed";
    return HCCL_ERR_BOOTSTRAP;
  }
  std::vector<int> differ, busy;
  for (int r = 0; r < c->size_; ++r) {
    const Hello& h = all[static_cast<std::size_t>(r)];
    if (std::memcmp(h.magic, "HCE2", 4) != 0) {
      err = fmt::format("rank {} runs a different coll_hccl engine version", r);
      return HCCL_ERR_BOOTSTRAP;
    }
    if (h.status != HCCL_SUCCESS) {  // the first failing rank's reason, on every rank
      err = fmt::format("rank {}: {}", r, std::string(h.error, strnlen(h.error, sizeof h.error)));
      return static_cast<hccl_status_t>(h.status);
    }
    if (h.config != all[0].config) differ.push_back(r);
    if (h.tagBusy) busy.push_back(r);
  }
  if (!differ.empty()) {
    err = fmt::format(
        "ranks {} resolved a different configuration than rank 0 (this rank: {}); every rank "
        "must see the same HCCL_ALGO, HCCL_BUFFSIZE, HCCL_DETERMINISTIC, selection mode, tuning "
        "file and topology inputs",
        rankList(differ), fingerprint(c->options_));
    return HCCL_ERR_CONFIG;
  }
  if (!busy.empty()) {
    err = fmt::format("ranks {} have another live communicator whose id equals {} mod {}",
                      rankList(busy), params.comm_id, kCommTags);
    return HCCL_ERR_UNSUPPORTED;
  }

  // 3. The hierarchy. Inputs are equal everywhere (checked above) except the rank table's file
  // contents, so the outcome is agreed once more before anything else is collective.
  std::vector<std::uint32_t> worldRanks(all.size());
  for (std::size_t r = 0; r < all.size(); ++r)
    worldRanks[r] = static_cast<std::uint32_t>(all[r].worldRank);
  const bool isWorld = c->size_ == params.world_size &&
                       std::all_of(worldRanks.begin(), worldRanks.end(),
                                   [&, i = 0u](std::uint32_t w) mutable { return w == i++; });
  std::set<std::uint32_t> distinct(worldRanks.begin(), worldRanks.end());
  const bool oneWorld = distinct.size() == worldRanks.size() &&
                        *distinct.rbegin() < static_cast<std::uint32_t>(params.world_size);
  std::int32_t topoStatus = HCCL_SUCCESS;
  std::string topoErr;
  std::uint64_t topoHash = 0;
  try {
    std::vector<std::byte> gathered(all.size() * topo::RankRecord::kSize);
    for (std::size_t r = 0; r < all.size(); ++r)
      std::memcpy(gathered.data() + r * topo::RankRecord::kSize, all[r].record,
                  topo::RankRecord::kSize);
    const auto records = topo::deserializeRecords(gathered);
    const topo::TopologySource src = topo::TopologySource::fromEnvironment();
    if (!oneWorld && (!src.rankTableFile.empty() || !src.emulationSpec.empty()))
      throw topo::TopologyError(
          "this communicator joins processes of different MPI worlds, which a rank table or an "
          "emulation spec (both describe one MPI_COMM_WORLD) cannot place");
    const std::vector<std::uint32_t> none;
    auto resolved = topo::resolveHierarchy(
        src, static_cast<std::uint32_t>(oneWorld ? params.world_size : c->size_),
        isWorld || !oneWorld ? std::span<const std::uint32_t>(none) : worldRanks, records);
    c->hierarchy_ = std::make_unique<topo::Hierarchy>(std::move(resolved.hierarchy));
    c->layout_ = std::make_unique<algo::Layout>(layoutOf(*c->hierarchy_));
    c->selector_ =
        std::make_unique<algo::Selector>(c->layout_->shape(), c->options_.settings, *model);
    topoHash = fnv(c->hierarchy_->describe() + "|" + c->layout_->describe());
  } catch (const std::exception& e) {
    topoStatus = HCCL_ERR_CONFIG;
    topoErr = e.what();
  }
  struct Agreement {
    std::int32_t status;
    std::uint32_t pad;
    std::uint64_t hash;
  } me{topoStatus, 0, topoHash};
  std::vector<Agreement> agreed(all.size());
  if (!gather(&me, agreed.data(), sizeof me)) {
    err = "the bootstrap all-gather failed";
    return HCCL_ERR_BOOTSTRAP;
  }
  for (std::size_t r = 0; r < agreed.size(); ++r) {
    if (agreed[r].status != HCCL_SUCCESS) {
      err = topoStatus != HCCL_SUCCESS ? topoErr
                                       : fmt::format("rank {} could not build the hierarchy", r);
      return HCCL_ERR_CONFIG;
    }
    if (agreed[r].hash != topoHash) {
      err = fmt::format("rank {} sees a different hierarchy than this rank ({})", r,
                        c->hierarchy_->describe());
      return HCCL_ERR_CONFIG;
    }
  }

  // 4. The transport: inside MPI_COMM_WORLD, a view of the world's; otherwise its own.
  try {
    std::shared_ptr<tl::Transport> world = engine.world.lock();
    if (world && oneWorld && world->size() == params.world_size) {
      std::vector<int> members(worldRanks.begin(), worldRanks.end());
      c->transport_ = std::make_shared<SubTransport>(world, std::move(members), c->rank_);
    } else {
      std::vector<int> serverOf(static_cast<std::size_t>(c->size_));
      for (int r = 0; r < c->size_; ++r)
        serverOf[static_cast<std::size_t>(r)] =
            static_cast<int>(c->hierarchy_->serverOf(static_cast<std::uint32_t>(r)));
      const tl::AllGather exchange = [&](std::span<const std::byte> m, std::span<std::byte> a) {
        if (!gather(m.data(), a.data(), m.size()))
          throw tl::UcxError("the bootstrap all-gather failed");
      };
      tl::UcxOptions ucx = c->options_.ucx;
      if (engine.yieldWhenIdle && !std::getenv("UCX_RNDV_THRESH")) {
        // Ranks outnumber cores: a rendezvous waits for its peer to be scheduled and answer, so
        // same-server messages up to 1 MiB go eagerly (at np=4 on 2 cores, 64 KiB allreduce
        // ran 190 us with UCX's threshold and 90 us with this one).
        ucx.hccs.ucxConfig.emplace_back("RNDV_THRESH", "1m");
        engine.log(2, fmt::format("{} rank {}: HCCS class eager up to 1 MiB (the MPI library "
                                  "yields when idle: ranks outnumber cores)",
                                  c->label_, c->rank_));
      }
      c->transport_ =
          std::make_shared<tl::UcxTransport>(c->rank_, std::move(serverOf), exchange, ucx);
      if (isWorld) engine.world = c->transport_;
    }
  } catch (const tl::UcxError& e) {
    err = fmt::format("transport set-up failed: {}", e.what());
    return HCCL_ERR_TRANSPORT;
  } catch (const std::exception& e) {
    err = fmt::format("transport set-up failed: {}", e.what());
    return HCCL_ERR_INTERNAL;
  }

  engine.liveTags.insert(c->commTag_);
  if (engine.logs(2)) {
    engine.log(2, fmt::format("{} rank {}: {} -> {}; links:{}", c->label_, c->rank_,
                              c->hierarchy_->describe(), c->layout_->shape().describe(),
                              c->options_.ucxSources));
    if (auto* ucx = dynamic_cast<tl::UcxTransport*>(c->transport_.get()))
      engine.log(2, fmt::format("{} rank {} transport: {}", c->label_, c->rank_, ucx->describe()));
    if (c->rank_ == 0) engine.log(2, c->decisionTable());
  }
  out = std::move(c);
  return HCCL_SUCCESS;
}

Communicator::~Communicator() {
  if (engine_) {
    auto it = engine_->liveTags.find(commTag_);
    if (it != engine_->liveTags.end()) engine_->liveTags.erase(it);
  }
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
  const auto gen = [&lay, composed](const algo::Problem& q, std::uint32_t r) {
    return algo::compose(lay, composed, q, r);
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
    release(std::move(req));
    return HCCL_ERR_TRANSPORT;
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
