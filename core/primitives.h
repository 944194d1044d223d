// The data primitives below every op: copy (with broadcast and dtype conversion) and fill. Core
// (autograd's zero gradients, contiguous copies) and boxing run on these, not on op front ends.
// Backends register a kernel per device type; on meta tensors both do nothing.
#pragma once
#include "core/kernel_table.h"
#include "core/tensor.h"

namespace ofl::internal {

// Copies src into dst, broadcasting src to dst's shape and converting dtype.
using CopyKernel = void(const Tensor& src, const Tensor& dst);
using FillKernel = void(const Tensor& dst, double value);

OFL_DECLARE_KERNEL(copy_kernel, CopyKernel)
OFL_DECLARE_KERNEL(fill_kernel, FillKernel)

// A contiguous copy of x's local data with the same dtype (always a new buffer, not global; for
// a traced tensor, a clone node of its trace).
Tensor contiguous_copy(const Tensor& x);
// x's local data in `dtype`: x itself when it has it, else a new contiguous copy. What computes
// convert their operands with (no dispatch: they run on local tensors already checked).
Tensor converted(const Tensor& x, DType dtype);
// x itself when its local data is contiguous, else contiguous_copy(x).
Tensor contiguous_local(const Tensor& x);
// Copies src into dst (broadcasting src to dst's shape, converting dtype) with dst's device kernel
// (between the host and a device, the device's: it also moves the data across); nothing when dst
// is src itself (the same memory, shape and strides).
void copy_into(const Tensor& dst, const Tensor& src);
// Sets every element of dst to value (converted to dst's dtype).
void fill_into(const Tensor& dst, double value);
// A new tensor of `value` everywhere.
Tensor filled(const Shape& shape, DType dtype, Device device, double value);

// complex64 as float32 pairs, for the backends' copy and fill kernels and the view ops
// (ops/complex.cpp). A complex64 x's memory as float32 with a trailing axis of 2 (real, imag),
Tensor complex_as_real(const Tensor& x);
// and back: a float32 x whose last axis is 2 with stride 1 and other strides and offset even
// (the caller checks; an internal check here).
Tensor real_as_complex(const Tensor& x);
// copy and fill where dst or src is complex64, run with a backend's float kernels (a real source
// fills the imaginary part with 0, a real destination takes the real part, as PyTorch's casts);
// false, doing nothing, where neither is complex.
bool copy_complex(const Tensor& src, const Tensor& dst, CopyKernel* copy, FillKernel* fill);
bool fill_complex(const Tensor& dst, double value, FillKernel* fill);
// a + b for two gradients of one tensor (complex ones summed as their float32 pairs, through
// the ops view_as_real and view_as_complex).
Tensor add_grads(const Tensor& a, const Tensor& b);

// Views of x's local data, with no autograd history (callers check their arguments):
// [start, start + length) of axis `axis`,
Tensor narrow_view(const Tensor& x, int64_t axis, int64_t start, int64_t length);
// and a contiguous x's elements in row-major order under another shape of the same size.
Tensor reshape_view(const Tensor& x, const Shape& shape);

}  // namespace ofl::internal
