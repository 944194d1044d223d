// CUDA kernels of cumsum and tril / triu (contiguous operands), as ops/cpu/scan.cpp.
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

// A thread per lane, accumulating as the CPU does (16-bit floats in float, bool in int64), so
// sums equal the CPU's; consecutive threads walk neighbouring lanes (coalesced when inner > 1).
template <class T, class M>
__global__ void scan_lanes(const T* x, T* out, int64_t n, int64_t inner, int64_t lanes,
                           bool reverse) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= lanes) return;
  const int64_t base = (t / inner) * n * inner + t % inner;
  M acc = M(0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = base + (reverse ? n - 1 - j : j) * inner;
    acc = acc + convert<M>(x[at]);
    out[at] = convert<T>(acc);
  }
}

void cumsum(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool reverse,
            const Tensor& out) {
  const int64_t lanes = outer * inner;
  if (lanes * n == 0) return;
  const Launch launch(out.device(), "cumsum");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using M = std::conditional_t<std::is_same_v<T, bool>, int64_t, device_math_t<T>>;
    scan_lanes<T, M><<<blocks_for(lanes, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, inner, lanes,
        reverse);
  });
  launch.done();
}

// tril / triu of the last two dims of a contiguous x: x where kept, 0 elsewhere.
template <class T>
__global__ void keep_triangle(const T* x, T* out, int64_t n, int64_t rows, int64_t cols, bool upper,
                              int64_t diagonal) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const int64_t j = e % cols, i = (e / cols) % rows;
  const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
  out[e] = keep ? x[e] : convert<T>(0);
}

void triangular(const Tensor& x, bool upper, int64_t diagonal, const Tensor& out) {
  const int64_t rows = x.shape()[x.dim() - 2], cols = x.shape()[x.dim() - 1], n = x.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "triu");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    keep_triangle<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, rows, cols, upper,
        diagonal);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(cumsum_kernel, DeviceType::kCUDA, cumsum);
OFL_REGISTER_KERNEL(triangular_kernel, DeviceType::kCUDA, triangular);

}  // namespace
}  // namespace ofl::internal::cuda
