#include "algorithms/selector.hpp"

namespace hccl::algo {

Selector::Selector(CommShape shape, Settings settings, CostModel model)
    : selection_(std::move(shape), std::move(settings), std::move(model)) {}

const Decision& Selector::decide(const CallInfo& call) {
  if (auto hit = cache_.find(call)) return *hit;
  return *cache_.insert(call, std::make_shared<const Decision>(select(selection_, call)));
}

std::vector<Candidate> Selector::candidates(const CallInfo& call, std::size_t levelIndex) const {
  return selection_.candidates(
      call, levelIndex, phasesPerLevel(call.coll, selection_.shape(), call.count)[levelIndex]);
}

}  // namespace hccl::algo
