// CUDA max_pool2d and avg_pool2d over contiguous (N, C, H, W), our own kernels rather than
// cuDNN's: max pooling returns the argmax indices backward needs (as PyTorch's CUDA kernels do).
// Backward gathers per input element where it can (avg), so it needs no atomics there.
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

struct Planes {
  int64_t P, H, W, Ho, Wo;
};

Planes planes(const Shape& in, const Shape& out) {
  return {in[0] * in[1], in[2], in[3], out[2], out[3]};
}

// The divisor of output (oh, ow): its window clipped to the image, or to the padded image.
__device__ int64_t window_size(const Planes& p, const Window2d& w, int64_t oh, int64_t ow,
                               bool count_include_pad) {
  const int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
  const int64_t h1 = min(h0 + w.kh, p.H + w.ph), w1 = min(w0 + w.kw, p.W + w.pw);
  if (count_include_pad) return (h1 - h0) * (w1 - w0);
  return (min(h1, p.H) - max(h0, int64_t(0))) * (min(w1, p.W) - max(w0, int64_t(0)));
}

template <class T>
__global__ void max_pool(const T* x, T* out, int64_t* indices, Planes p, Window2d w) {
  using M = device_math_t<T>;
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= p.P * p.Ho * p.Wo) return;
  const int64_t ow = e % p.Wo, oh = e / p.Wo % p.Ho, q = e / (p.Ho * p.Wo);
  const T* plane = x + q * p.H * p.W;
  const int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
  M best = -INFINITY;
  int64_t arg = -1;
  for (int64_t i = 0; i < w.kh; ++i) {
    const int64_t ih = h0 + i * w.dh;
    if (ih < 0 || ih >= p.H) continue;
    for (int64_t j = 0; j < w.kw; ++j) {
      const int64_t iw = w0 + j * w.dw;
      if (iw < 0 || iw >= p.W) continue;
      const M v = convert<M>(plane[ih * p.W + iw]);
      if (arg < 0 || v > best || v != v) {  // NaN propagates, as on the CPU
        best = v;
        arg = ih * p.W + iw;
      }
    }
  }
  out[e] = convert<T>(best);
  indices[e] = arg;
}

template <class T>
__global__ void max_pool_backward(const T* grad, const int64_t* indices, T* gx, int* out_of_plane,
                                  int64_t total, int64_t out_plane, int64_t in_plane) {
  const int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (o >= total) return;
  if (static_cast<uint64_t>(indices[o]) >= static_cast<uint64_t>(in_plane)) {
    *out_of_plane = 1;  // indices are an op input: never write past a plane
    return;
  }
  add_to(gx + o / out_plane * in_plane + indices[o], grad[o]);
}

template <class T>
__global__ void avg_pool(const T* x, T* out, Planes p, Window2d w, bool count_include_pad) {
  using M = device_math_t<T>;
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= p.P * p.Ho * p.Wo) return;
  const int64_t ow = e % p.Wo, oh = e / p.Wo % p.Ho, q = e / (p.Ho * p.Wo);
  const T* plane = x + q * p.H * p.W;
  const int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
  M acc = 0;
  for (int64_t ih = max(h0, int64_t(0)); ih < min(h0 + w.kh, p.H); ++ih)
    for (int64_t iw = max(w0, int64_t(0)); iw < min(w0 + w.kw, p.W); ++iw)
      acc += convert<M>(plane[ih * p.W + iw]);
  out[e] = convert<T>(acc / M(window_size(p, w, oh, ow, count_include_pad)));
}

// Each input element sums the shares of the outputs whose windows cover it.
template <class T>
__global__ void avg_pool_backward(const T* grad, T* gx, Planes p, Window2d w,
                                  bool count_include_pad) {
  using M = device_math_t<T>;
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= p.P * p.H * p.W) return;
  const int64_t iw = e % p.W, ih = e / p.W % p.H, q = e / (p.H * p.W);
  auto first = [](int64_t i, int64_t pad, int64_t k, int64_t s) {  // ceil((i + pad - k + 1) / s)
    const int64_t a = i + pad - k + 1;
    return a <= 0 ? int64_t(0) : (a + s - 1) / s;
  };
  const int64_t oh1 = min((ih + w.ph) / w.sh + 1, p.Ho), ow1 = min((iw + w.pw) / w.sw + 1, p.Wo);
  M acc = 0;
  for (int64_t oh = first(ih, w.ph, w.kh, w.sh); oh < oh1; ++oh)
    for (int64_t ow = first(iw, w.pw, w.kw, w.sw); ow < ow1; ++ow)
      acc += convert<M>(grad[(q * p.Ho + oh) * p.Wo + ow]) /
             M(window_size(p, w, oh, ow, count_include_pad));
  gx[e] = convert<T>(acc);
}

void max_pool2d(const Tensor& x, const Window2d& win, const Tensor& out, const Tensor& indices) {
  const Planes p = planes(x.shape(), out.shape());
  const int64_t total = out.numel();
  if (total == 0) return;
  const Launch launch(x.device(), "max_pool2d");
  with_device_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    max_pool<T><<<blocks_for(total, kThreads), kThreads, 0, stream_of(x.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()),
        static_cast<int64_t*>(indices.raw_data()), p, win);
  });
  launch.done();
}

void max_pool2d_bw(const Tensor& grad, const Tensor& indices, const Tensor& gx) {
  const Planes p = planes(gx.shape(), grad.shape());
  fill_kernel().get(DeviceType::kCUDA)(gx, 0);
  const int64_t total = grad.numel();
  if (total == 0) return;
  const Device device = gx.device();
  const Launch launch(device, "max_pool2d_backward");
  const cudaStream_t stream = stream_of(device);
  const Tensor flag = scratch(1, DType::kInt32, device);
  auto* out_of_plane = static_cast<int*>(flag.raw_data());
  check(cudaMemsetAsync(out_of_plane, 0, sizeof(int), stream), "max_pool2d_backward");
  with_atomic_add(grad.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    max_pool_backward<T><<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(grad.raw_data()), static_cast<const int64_t*>(indices.raw_data()),
        static_cast<T*>(gx.raw_data()), out_of_plane, total, p.Ho * p.Wo, p.H * p.W);
  });
  launch.done();
  if (on_host(flag).data<int32_t>()[0])
    fail("max_pool2d_backward", "indices must lie in [0, ", p.H * p.W, ") for an input of ",
         shape_str(gx.shape()));
}

void avg_pool2d(const Tensor& x, const Window2d& win, bool count_include_pad, const Tensor& out) {
  const Planes p = planes(x.shape(), out.shape());
  const int64_t total = out.numel();
  if (total == 0) return;
  const Launch launch(x.device(), "avg_pool2d");
  with_device_floating(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    avg_pool<T><<<blocks_for(total, kThreads), kThreads, 0, stream_of(x.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), p, win,
        count_include_pad);
  });
  launch.done();
}

void avg_pool2d_bw(const Tensor& grad, const Window2d& win, bool count_include_pad,
                   const Tensor& gx) {
  const Planes p = planes(gx.shape(), grad.shape());
  const int64_t total = gx.numel();
  if (total == 0) return;
  const Launch launch(gx.device(), "avg_pool2d_backward");
  with_device_floating(grad.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_backward<T><<<blocks_for(total, kThreads), kThreads, 0, stream_of(gx.device())>>>(
        static_cast<const T*>(grad.raw_data()), static_cast<T*>(gx.raw_data()), p, win,
        count_include_pad);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(max_pool2d_kernel, DeviceType::kCUDA, max_pool2d);
OFL_REGISTER_KERNEL(max_pool2d_backward_kernel, DeviceType::kCUDA, max_pool2d_bw);
OFL_REGISTER_KERNEL(avg_pool2d_kernel, DeviceType::kCUDA, avg_pool2d);
OFL_REGISTER_KERNEL(avg_pool2d_backward_kernel, DeviceType::kCUDA, avg_pool2d_bw);

}  // namespace
}  // namespace ofl::internal::cuda
