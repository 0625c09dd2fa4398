#include "coll_hccl/engine/request.hpp"

#include <fmt/format.h>

namespace hccl::engine {

Request::Request(Communicator& comm, std::shared_ptr<const Plan> plan, const void* send,
                 void* recv, std::size_t elemSize, std::optional<Reduction> reduction,
                 std::uint32_t seq)
    : comm_(comm), plan_(std::move(plan)), send_(static_cast<const std::byte*>(send)),
      recv_(static_cast<std::byte*>(recv)), elemSize_(elemSize), reduction_(std::move(reduction)),
      seq_(seq), counters_(comm.size()),
      executor_(std::make_unique<Executor>(comm.transport(), elemSize,
                                           reduction_ ? &*reduction_ : nullptr)) {}

Request::~Request() {
  executor_.reset();  // cancels a run still in flight, which may be writing into the scratch
  if (scratch_) comm_.returnScratch(scratch_);
}

void Request::bind(const algo::BufferMap& map, const std::byte* base, Binding& into) const {
  into.clear();
  for (const algo::Segment& s : map)
    into.add({s.logical, const_cast<std::byte*>(base) + s.physical * elemSize_, s.count});
}

bool Request::start() {
  const std::size_t bytes = plan_->scratchElems * elemSize_;
  if (bytes > 0) {
    scratch_ = comm_.borrowScratch(bytes);
    bindings_.scratch = Binding::contiguous(scratch_, plan_->scratchElems);
  }
  if (plan_->chunks.empty()) {
    finished_ = true;
    return true;
  }
  return startChunk();
}

bool Request::startChunk() {
  const algo::Chunk& c = plan_->chunks[chunk_];
  bind(c.input, send_, bindings_.input);
  bind(c.output, recv_, bindings_.output);
  if (!executor_->start(*plan_->schedules[chunk_], bindings_, counters_, comm_.commTag(), seq_)) {
    error_ = executor_->error();
    finished_ = true;
    return false;
  }
  return true;
}

bool Request::progress(bool drive) {
  while (!finished_) {
    if (!(drive ? executor_->progress() : executor_->poll())) return false;
    if (executor_->failed()) {
      error_ = executor_->error();
      finished_ = true;
      break;
    }
    if (++chunk_ == plan_->chunks.size()) {
      finished_ = true;
      break;
    }
    if (!startChunk()) break;
  }
  return true;
}

}  // namespace hccl::engine
