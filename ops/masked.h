// Boolean-mask ops (masked_select, masked_scatter) and the in-place writes models use on
// tensors they own: masked_fill_, masked_scatter_ and scatter_.
#pragma once
#include "core/tensor.h"

namespace ofl::internal {

// The elements of x where mask (broadcast together) is true, as a 1-d tensor. The length
// depends on the data: meta and global tensors raise.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// x with source's leading elements written, in row-major order, where mask (broadcast to x) is
// true; source must have at least as many elements as mask has trues.
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);

// In place (PyTorch's rules: no leaf or view that requires grad, no expanded self).
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Tensor& value);
Tensor& masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source);
Tensor& scatter_(Tensor& self, int64_t axis, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& self, int64_t axis, const Tensor& index, double value);

}  // namespace ofl::internal
