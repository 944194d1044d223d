// CUDA kernels of the negative log-likelihood and its backward, with the targets' bounds check,
// as ops/cpu/loss.cpp.
#include "ops/cuda/rows.cuh"  // stat_t
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void check_targets(const Tensor& target, int64_t total, int64_t ignore_index) {
  const Tensor host = on_host(target);
  const int64_t* t = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= total))
      fail<IndexError>("nll_loss", "target ", t[i], " is out of bounds for ", total,
                       " classes (ignore_index is ", ignore_index, ")");
}

// Where target t lies in the view's classes, or -1 (ignored, or another shard's class).
__device__ int64_t local_class(int64_t t, ClassView v, int64_t ignore) {
  const int64_t c = t - v.first;
  return t == ignore || c < 0 || c >= v.classes ? -1 : c;
}

template <class T>
__global__ void nll_forward(const T* x, const int64_t* t, T* out, ClassView v, int64_t ignore) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= v.outer * v.inner) return;
  const int64_t n = e / v.inner, i = e % v.inner, c = local_class(t[e], v, ignore);
  out[e] = c < 0 ? convert<T>(0.0f)
                 : convert<T>(-convert<stat_t<T>>(x[(n * v.classes + c) * v.inner + i]));
}

template <class T>
__global__ void nll_backward(const T* g, const int64_t* t, T* gx, ClassView v, int64_t ignore) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= v.outer * v.inner) return;
  const int64_t n = e / v.inner, i = e % v.inner, c = local_class(t[e], v, ignore);
  if (c >= 0) gx[(n * v.classes + c) * v.inner + i] = convert<T>(-convert<stat_t<T>>(g[e]));
}

void nll_loss(const Tensor& x, const Tensor& target_in, const ClassView& v, int64_t ignore_index,
              const Tensor& out) {
  // A 0-d host target (x of shape (C,)) follows x to the GPU unmoved (common_device).
  const Tensor target = on_device(target_in, out.device());
  check_targets(target, v.total, ignore_index);
  const int64_t outer = v.outer, inner = v.inner;
  if (outer * inner == 0) return;
  const Launch launch(out.device(), "nll_loss");
  dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    nll_forward<T><<<blocks_for(outer * inner, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const int64_t*>(target.raw_data()),
        static_cast<T*>(out.raw_data()), v, ignore_index);
  });
  launch.done();
}

void nll_loss_backward(const Tensor& grad_in, const Tensor& target_in, const ClassView& v,
                       int64_t ignore_index, const Tensor& gx) {
  const Tensor grad = on_device(grad_in, gx.device()), target = on_device(target_in, gx.device());
  check_targets(target, v.total, ignore_index);
  const int64_t outer = v.outer, inner = v.inner;
  fill_kernel().get(DeviceType::kCUDA)(gx, 0);
  if (outer * inner == 0) return;
  const Launch launch(gx.device(), "nll_loss_backward");  // fill skips it when gx is empty
  dispatch_floating(gx.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    nll_backward<T><<<blocks_for(outer * inner, kThreads), kThreads, 0, stream_of(gx.device())>>>(
        static_cast<const T*>(grad.raw_data()), static_cast<const int64_t*>(target.raw_data()),
        static_cast<T*>(gx.raw_data()), v, ignore_index);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(nll_loss_kernel, DeviceType::kCUDA, nll_loss);
OFL_REGISTER_KERNEL(nll_loss_backward_kernel, DeviceType::kCUDA, nll_loss_backward);

}  // namespace
}  // namespace ofl::internal::cuda
