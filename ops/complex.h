// complex64 and complex128: the views between them and float32 / float64 pairs, and the few
// complex ops, written as float ops on those pairs (so autograd, meta, global and CUDA come from
// the float ops).
#pragma once
#include "ops/elementwise.h"

namespace ofl::internal {

// A float32 (float64) tensor whose last dimension is 2 (stride 1, other strides even) as
// complex64 (complex128), and back.
Tensor view_as_complex(const Tensor& x);
Tensor view_as_real(const Tensor& z);
Tensor polar(const Tensor& abs, const Tensor& angle);  // abs * (cos(angle) + i sin(angle))
Tensor complex(const Tensor& real, const Tensor& imag);
Tensor real(const Tensor& z);  // a view; a real z itself
Tensor imag(const Tensor& z);  // a view
Tensor conj(const Tensor& z);  // a new tensor; a real z itself
Tensor complex_abs(const Tensor& z);
// add, sub, mul and div where a or b is complex64 (binary_op sends them here).
Tensor complex_binary(BinaryOp op, const Tensor& a, const Tensor& b);

}  // namespace ofl::internal
