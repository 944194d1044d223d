// CUDA kernels of softmax and log-softmax over the last axis and their backward: a block per row
// (rows.cuh), statistics in float (double for float64), as ops/cpu/softmax.cpp; the forward reads
// a row twice (its maximum and sum in one online pass, then the output).
#include "ops/cuda/rows.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

template <class T>
__global__ void softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using M = stat_t<T>;
  __shared__ M shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    // One pass for the maximum and the sum (online softmax): a thread's running sum is of
    // exp(x - its running maximum), rescaled when the maximum grows; then each thread's sum is
    // brought to the row's maximum. The row is read twice, not three times.
    M mine = -INFINITY, sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const M v = convert<M>(xr[c]);
      if (v > mine) {
        sum = (dm::isinf(mine) ? M(0) : sum * M(dm::exp(mine - v))) + M(1);
        mine = v;
      } else if (!(dm::isinf(mine) && mine < 0)) {  // (below an all -inf start: nothing)
        sum += dm::exp(v - mine);
      }
    }
    M mx = block_max(mine, shared);
    if (dm::isinf(mx) && mx < 0) mx = 0;  // an all -inf row
    const M total =
        block_sum(dm::isinf(mine) && mine < 0 ? M(0) : sum * M(dm::exp(mine - mx)), shared);
    const M lse = M(dm::log(total)) + mx, inv = M(1) / total;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const M v = convert<M>(xr[c]);
      yr[c] = convert<T>(log ? v - lse : M(dm::exp(v - mx)) * inv);
    }
  }
}

template <class T>
__global__ void softmax_backward_rows(const T* g, const T* y, T* gx, int64_t rows, int64_t cols,
                                      bool log) {
  using M = stat_t<T>;
  __shared__ M shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * cols;
    const T* yr = y + r * cols;
    M dot = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dot += log ? convert<M>(gr[c]) : convert<M>(gr[c]) * convert<M>(yr[c]);
    dot = block_sum(dot, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const M gv = convert<M>(gr[c]), yv = convert<M>(yr[c]);
      gx[r * cols + c] = convert<T>(log ? gv - M(dm::exp(yv)) * dot : yv * (gv - dot));
    }
  }
}

void softmax(const Tensor& x, const Tensor& out, bool log) {
  const int64_t cols = x.dim() ? x.shape().back() : 1;
  const int64_t rows = cols ? x.numel() / cols : 0;
  if (rows == 0) return;
  const Launch launch(out.device(), "softmax");
  dispatch_floating(x.dtype(), "softmax", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    softmax_rows<T><<<row_blocks(rows), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), rows, cols, log);
  });
  launch.done();
}

void softmax_backward(const Tensor& g, const Tensor& y, const Tensor& gx, bool log) {
  const int64_t cols = y.dim() ? y.shape().back() : 1;
  const int64_t rows = cols ? y.numel() / cols : 0;
  if (rows == 0) return;
  const Launch launch(gx.device(), "softmax_backward");
  dispatch_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    softmax_backward_rows<T><<<row_blocks(rows), kThreads, 0, stream_of(gx.device())>>>(
        static_cast<const T*>(g.raw_data()), static_cast<const T*>(y.raw_data()),
        static_cast<T*>(gx.raw_data()), rows, cols, log);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(softmax_kernel, DeviceType::kCUDA, softmax);
OFL_REGISTER_KERNEL(softmax_backward_kernel, DeviceType::kCUDA, softmax_backward);

}  // namespace
}  // namespace ofl::internal::cuda
