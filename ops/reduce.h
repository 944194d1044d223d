// Reductions over any set of axes (empty = all) with keepdim.
#pragma once
#include <optional>
#include <utility>

#include "core/tensor.h"

namespace ofl::internal {

using Axes = std::vector<int64_t>;

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
// Along one axis: (values, int64 indices); first occurrence wins ties.
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t axis, bool keepdim = false);
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& x, const Axes& axes = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Axes& axes = {}, double correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim = false);
Tensor all(const Tensor& x, const Axes& axes = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Axes& axes = {}, bool keepdim = false);

// Normalises and de-duplicates axes; empty means every axis.
Axes reduction_axes(const Axes& axes, int64_t ndim, const char* op);
Shape reduced_shape(const Shape& shape, const Axes& axes, bool keepdim);

}  // namespace ofl::internal
