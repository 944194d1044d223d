// The discrete Fourier transform along one axis of a complex tensor: the one op row
// (_fft_c2c) the torch.fft functions (python/oneflowlike/fft.py) are composites of.
#pragma once
#include "core/kernel_table.h"
#include "core/tensor.h"

namespace ofl::internal {

// out[..., k, ...] = scale * sum_j x[..., j, ...] exp(-+2 pi i j k / n) along `dim` (the minus
// sign when forward); x is complex64 or complex128 and keeps its dtype. Its gradient is the same
// transform the other way, with the same scale.
Tensor fft_c2c(const Tensor& x, int64_t dim, bool forward, double scale);

// The lanes of a contiguous complex x viewed as [outer, n, inner], each transformed into the
// same place of out (contiguous, x's shape and dtype).
using FftKernel = void(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool forward,
                       double scale, const Tensor& out);
OFL_DECLARE_KERNEL(fft_kernel, FftKernel)

}  // namespace ofl::internal
