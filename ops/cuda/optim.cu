// Adam's fused updates on CUDA: a thread per element of contiguous tensors, in float (double for
// float64), in the order the CPU kernels round.
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

template <class T>
__global__ void moment_kernel(T* x, const T* g, int64_t n, double decay, bool square) {
  using M = device_math_t<T>;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const M gi = convert<M>(g[i]);
  x[i] = convert<T>(M(decay) * convert<M>(x[i]) + M(1 - decay) * (square ? gi * gi : gi));
}

template <class T>
__global__ void step_kernel(T* p, const T* m, const T* v, int64_t n, double decay, double step_size,
                            double bias2_sqrt, double eps) {
  using M = device_math_t<T>;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const M denom = dm::sqrt(convert<M>(v[i])) / M(bias2_sqrt) + M(eps);
  p[i] = convert<T>(convert<M>(p[i]) * M(decay) + convert<M>(m[i]) / denom * M(-step_size));
}

void adam_moment(const Tensor& x, const Tensor& g, double decay, bool square) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const Launch launch(x.device(), "adam_moment_");
  with_device_floating(x.dtype(), "adam_moment_", [&](auto zero) {
    using T = decltype(zero);
    moment_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(x.device())>>>(
        static_cast<T*>(x.raw_data()), static_cast<const T*>(g.raw_data()), n, decay, square);
  });
  launch.done();
}

void adam_step(const Tensor& param, const Tensor& m, const Tensor& v, double decay,
               double step_size, double bias2_sqrt, double eps) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const Launch launch(param.device(), "adam_step_");
  with_device_floating(param.dtype(), "adam_step_", [&](auto zero) {
    using T = decltype(zero);
    step_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(param.device())>>>(
        static_cast<T*>(param.raw_data()), static_cast<const T*>(m.raw_data()),
        static_cast<const T*>(v.raw_data()), n, decay, step_size, bias2_sqrt, eps);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(adam_moment_kernel, DeviceType::kCUDA, adam_moment);
OFL_REGISTER_KERNEL(adam_step_kernel, DeviceType::kCUDA, adam_step);

}  // namespace
}  // namespace ofl::internal::cuda
