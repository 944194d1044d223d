// Matrix products on the BLAS.
#pragma once
#include "core/tensor.h"

namespace ofl {

// numpy/PyTorch matmul: 1-d operands are promoted and the batch dimensions broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x @ w^T + bias (bias may be undefined).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);

}  // namespace ofl
