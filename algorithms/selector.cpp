#include "algorithms/selector.hpp"

namespace hccl::algo {

Selector::Selector(CommShape shape, Settings settings, CostModel model)
    : selection_(std::move(shape), std::move(settings), std::move(model)) {}

const Decision& Selector::decide(const CallInfo& call) {
  auto it = cache_.find(call);
  if (it != cache_.end()) return it->second;
  if (cache_.size() > 4096) cache_.clear();  // many distinct sizes: keep memory bounded
  return cache_.emplace(call, select(selection_, call)).first->second;
}

std::vector<Candidate> Selector::candidates(const CallInfo& call, std::size_t levelIndex) const {
  return selection_.candidates(
      call, levelIndex, phasesPerLevel(call.coll, selection_.shape(), call.count)[levelIndex]);
}

}  // namespace hccl::algo
