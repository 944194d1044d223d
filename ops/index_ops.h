// Indexing: embedding, index_select, gather, scatter_add, scatter, index_add (joining: ops/join.h).
#pragma once
#include <optional>

#include "core/tensor.h"

namespace ofl::internal {

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);
// x with src's values written at the indices along axis (PyTorch's scatter), or value everywhere
// the index points.
Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, double value);
// out = zeros(shape); out.index_add_(axis, index, src): the backward of index_select.
Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);

}  // namespace ofl::internal
