// The built-in documents, embedded from algorithms/data/ when the library is built, so the
// component needs no file at run time: the cost model's constants (cost_model.json) and HCCL's
// default selection rules (hccl_rules.json). Both are tuning documents (cost_model.hpp).
#pragma once

#include <string_view>

namespace hccl::algo {

std::string_view builtinCostModelJson();
std::string_view builtinHcclRulesJson();

}  // namespace hccl::algo
