// Views and layout ops: no data moves unless the layout forces a copy (reshape, contiguous).
#pragma once
#include <optional>

#include "core/tensor.h"

namespace ofl::internal {

Tensor view(const Tensor& x, Shape shape);     // must be expressible without a copy
Tensor reshape(const Tensor& x, Shape shape);  // copies when a view is impossible
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length);
// Basic slicing along one axis with Python semantics (start/stop clamp, positive step).
Tensor slice(const Tensor& x, int64_t axis, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1);
Tensor select(const Tensor& x, int64_t axis, int64_t index);
// Zeros of `sizes` with g written into slice(dim, start, stop, step): the backward of slice.
Tensor slice_backward(const Tensor& g, const Shape& sizes, int64_t dim, int64_t start, int64_t stop,
                      int64_t step);
Tensor expand(const Tensor& x, Shape shape);  // -1 keeps a dimension
Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> axes = std::nullopt);
Tensor unsqueeze(const Tensor& x, int64_t axis);
Tensor flatten(const Tensor& x, int64_t start = 0, int64_t end = -1);
Tensor contiguous(const Tensor& x);  // x itself when already contiguous
Tensor clone(const Tensor& x);
Tensor detach(const Tensor& x);
// Reinterprets the bytes as another dtype of the same size (used by serialization).
Tensor view_as_dtype(const Tensor& x, DType dtype);
// Sums a broadcast gradient back down to `shape`.
Tensor sum_to(const Tensor& g, const Shape& shape);
// Resolves one -1 in `shape` against numel; errors name op.
Shape infer_shape(Shape shape, int64_t numel, const char* op);

}  // namespace ofl::internal
