// Ops whose value at an element depends on its position: prefix sums along an axis (cumsum) and
// the triangles of the last two dimensions (tril, triu).
#pragma once
#include <optional>

#include "core/tensor.h"

namespace ofl::internal {

// Integers and bool sum in int64 unless dtype says otherwise (PyTorch's rule).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// Keeps the elements on and below (tril) or above (triu) the diagonal-th diagonal.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

}  // namespace ofl::internal
