// The data primitives below every op: copy (with broadcast and dtype conversion) and fill. Core
// (autograd's zero gradients, contiguous copies) and boxing run on these, not on op front ends.
// Backends register a kernel per device type; on meta tensors both do nothing.
#pragma once
#include "core/dispatch.h"
#include "core/tensor.h"

namespace ofl {

// Copies src into dst, broadcasting src to dst's shape and converting dtype.
using CopyKernel = void(const Tensor& src, const Tensor& dst);
using FillKernel = void(const Tensor& dst, double value);

OFL_DECLARE_KERNEL(copy_kernel, CopyKernel)
OFL_DECLARE_KERNEL(fill_kernel, FillKernel)

// A contiguous copy of x's local data with the same dtype (always a new buffer, not global).
Tensor contiguous_copy(const Tensor& x);

}  // namespace ofl
