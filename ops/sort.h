// Ordering along one axis: sort, argsort and topk (values with their int64 indices).
#pragma once
#include <utility>

#include "core/tensor.h"

namespace ofl::internal {

// Ties keep index order whatever `stable` says (a stable order is a valid unstable one).
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                               bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (or smallest) along dim; always in sorted order (a valid order for sorted=false).
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);

}  // namespace ofl::internal
