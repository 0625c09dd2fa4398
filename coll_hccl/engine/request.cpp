#include "coll_hccl/engine/request.hpp"

#include <fmt/format.h>

namespace hccl::engine {

Request::~Request() {
  executor_.reset();  // cancels a run still in flight, which may be writing into the scratch
  if (scratch_) comm_.returnScratch(scratch_);
}

void Request::bind(const algo::BufferMap& map, const std::byte* base, Binding& into) const {
  into.clear();
  for (const algo::Segment& s : map)
    into.add({s.logical, const_cast<std::byte*>(base) + s.physical * elemSize_, s.count});
}

bool Request::start(std::shared_ptr<const Plan> plan, const void* send, void* recv,
                    std::size_t elemSize, std::optional<Reduction> reduction, std::uint32_t seq) {
  plan_ = std::move(plan);
  send_ = static_cast<const std::byte*>(send);
  recv_ = static_cast<std::byte*>(recv);
  reduction_ = std::move(reduction);
  seq_ = seq;
  chunk_ = 0;
  finished_ = false;
  failKind_ = FailKind::None;
  error_.clear();
  counters_.reset(comm_.size());
  if (!executor_ || elemSize_ != elemSize)
    executor_ = std::make_unique<Executor>(comm_.transport(), elemSize);
  elemSize_ = elemSize;
  executor_->setReduction(reduction_ ? &*reduction_ : nullptr);
  const std::size_t bytes = plan_->scratchElems * elemSize_;
  if (bytes > 0) {
    scratch_ = comm_.borrowScratch(bytes);
    bindings_.scratch = Binding::contiguous(scratch_, plan_->scratchElems);
  } else {
    bindings_.scratch.clear();
  }
  if (plan_->chunks.empty()) {
    finish();
    return true;
  }
  return startChunk();
}

hccl_status_t Request::status() const {
  switch (failKind_) {
    case FailKind::None:
      return HCCL_SUCCESS;
    case FailKind::Timeout:
      return HCCL_ERR_TIMEOUT;
    case FailKind::PeerLost:
      return HCCL_ERR_PEER_LOST;
    case FailKind::Mismatch:
      return HCCL_ERR_MISMATCH;
    case FailKind::Transport:
      return HCCL_ERR_TRANSPORT;
    case FailKind::Invalid:
      return HCCL_ERR_INTERNAL;
  }
  return HCCL_ERR_INTERNAL;
}

void Request::finish(FailKind kind, std::string error) {
  finished_ = true;
  failKind_ = kind;
  error_ = std::move(error);
  if (kind != FailKind::None) comm_.markBroken(seq_, status(), error_);
  if (scratch_) {  // the executor is not running any more: the scratch can serve another call
    comm_.returnScratch(scratch_);
    scratch_ = nullptr;
  }
}

bool Request::startChunk() {
  const algo::Chunk& c = plan_->chunks[chunk_];
  bind(c.input, send_, bindings_.input);
  bind(c.output, recv_, bindings_.output);
  if (!executor_->start(*plan_->schedules[chunk_], bindings_, counters_, comm_.commTag(), seq_)) {
    finish(executor_->failKind(), executor_->error());
    return false;
  }
  return true;
}

bool Request::progress(bool drive) {
  while (!finished_) {
    if (!(drive ? executor_->progress() : executor_->poll())) return false;
    if (executor_->failed()) {
      finish(executor_->failKind(), executor_->error());
      break;
    }
    if (++chunk_ == plan_->chunks.size()) {
      finish();
      break;
    }
    if (!startChunk()) break;
  }
  return true;
}

}  // namespace hccl::engine
