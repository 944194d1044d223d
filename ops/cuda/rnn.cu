// The fused LSTM and GRU cells' kernels (ops/rnn.h): a thread per hidden unit of a time step's
// rows.
#include "ops/cuda/common.cuh"
#include "ops/rnn.h"

namespace ofl::internal::cuda {
namespace {

template <class T>
__global__ void cell_kernel(const T* xw, const T* hh, const T* c, T* h, T* c_out, T* act, int64_t n,
                            int64_t hidden) {
  using M = device_math_t<T>;
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const int64_t r = k / hidden, j = k % hidden, gate = 4 * hidden * r + j;
  M i = convert<M>(xw[gate]) + convert<M>(hh[gate]);
  M f = convert<M>(xw[gate + hidden]) + convert<M>(hh[gate + hidden]);
  M g = convert<M>(xw[gate + 2 * hidden]) + convert<M>(hh[gate + 2 * hidden]);
  M o = convert<M>(xw[gate + 3 * hidden]) + convert<M>(hh[gate + 3 * hidden]);
  M cn;
  const M y = lstm::cell(i, f, g, o, convert<M>(c[k]), cn);
  act[gate] = convert<T>(i);
  act[gate + hidden] = convert<T>(f);
  act[gate + 2 * hidden] = convert<T>(g);
  act[gate + 3 * hidden] = convert<T>(o);
  c_out[k] = convert<T>(cn);
  h[k] = convert<T>(y);
}

template <class T>
__global__ void cell_backward_kernel(const T* dh, const T* dh_next, const T* dc, const T* act,
                                     const T* c, const T* c_out, T* dgates, T* dc_prev, int64_t n,
                                     int64_t hidden) {
  using M = device_math_t<T>;
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const int64_t r = k / hidden, j = k % hidden, gate = 4 * hidden * r + j;
  M i = convert<M>(act[gate]), f = convert<M>(act[gate + hidden]);
  M g = convert<M>(act[gate + 2 * hidden]), o = convert<M>(act[gate + 3 * hidden]);
  const M d = convert<M>(dh[k]) + convert<M>(dh_next[k]);
  const M dprev =
      lstm::cell_grad(i, f, g, o, d, convert<M>(dc[k]), convert<M>(c[k]), convert<M>(c_out[k]));
  dgates[gate] = convert<T>(i);
  dgates[gate + hidden] = convert<T>(f);
  dgates[gate + 2 * hidden] = convert<T>(g);
  dgates[gate + 3 * hidden] = convert<T>(o);
  dc_prev[k] = convert<T>(dprev);
}

template <class T>
__global__ void gru_kernel(const T* xw, const T* hh, const T* b_hn, const T* h, T* h_out, T* ws,
                           int64_t n, int64_t hidden) {
  using M = device_math_t<T>;
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const int64_t r = k / hidden, j = k % hidden, gate = 3 * hidden * r + j, w = 4 * hidden * r + j;
  M rg = convert<M>(xw[gate]) + convert<M>(hh[gate]);
  M zg = convert<M>(xw[gate + hidden]) + convert<M>(hh[gate + hidden]);
  const M hn = convert<M>(hh[gate + 2 * hidden]) + convert<M>(b_hn[j]);
  M ng;
  const M y = gru::cell(rg, zg, convert<M>(xw[gate + 2 * hidden]), hn, ng, convert<M>(h[k]));
  ws[w] = convert<T>(rg);
  ws[w + hidden] = convert<T>(zg);
  ws[w + 2 * hidden] = convert<T>(ng);
  ws[w + 3 * hidden] = convert<T>(hn);
  h_out[k] = convert<T>(y);
}

template <class T>
__global__ void gru_backward_kernel(const T* dh, const T* dh_a, const T* dh_b, const T* ws,
                                    const T* h, T* dxw, T* dhh, T* dh_direct, int64_t n,
                                    int64_t hidden) {
  using M = device_math_t<T>;
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const int64_t r = k / hidden, j = k % hidden, gate = 3 * hidden * r + j, w = 4 * hidden * r + j;
  const M d = convert<M>(dh[k]) + convert<M>(dh_a[k]) + convert<M>(dh_b[k]);
  M dr, dz, dn, dhn;
  const M direct =
      gru::cell_grad(convert<M>(ws[w]), convert<M>(ws[w + hidden]), convert<M>(ws[w + 2 * hidden]),
                     convert<M>(ws[w + 3 * hidden]), convert<M>(h[k]), d, dr, dz, dn, dhn);
  dxw[gate] = convert<T>(dr);
  dxw[gate + hidden] = convert<T>(dz);
  dxw[gate + 2 * hidden] = convert<T>(dn);
  dhh[gate] = convert<T>(dr);
  dhh[gate + hidden] = convert<T>(dz);
  dhh[gate + 2 * hidden] = convert<T>(dhn);
  dh_direct[k] = convert<T>(direct);
}

void gru_cell(const Tensor& xw, const Tensor& hh, const Tensor& b_hn, const Tensor& h,
              const Tensor& h_out, const Tensor& ws) {
  const int64_t n = h.numel();
  if (n == 0) return;
  const Launch launch(h.device(), "_gru_layer");
  with_device_floating(h.dtype(), "_gru_layer", [&](auto zero) {
    using T = decltype(zero);
    gru_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(h.device())>>>(
        static_cast<const T*>(xw.raw_data()), static_cast<const T*>(hh.raw_data()),
        static_cast<const T*>(b_hn.raw_data()), static_cast<const T*>(h.raw_data()),
        static_cast<T*>(h_out.raw_data()), static_cast<T*>(ws.raw_data()), n, h.size(1));
  });
  launch.done();
}

void gru_cell_backward(const Tensor& dh, const Tensor& dh_a, const Tensor& dh_b, const Tensor& ws,
                       const Tensor& h, const Tensor& dxw, const Tensor& dhh,
                       const Tensor& dh_direct) {
  const int64_t n = h.numel();
  if (n == 0) return;
  const Launch launch(h.device(), "_gru_layer_backward");
  with_device_floating(h.dtype(), "_gru_layer_backward", [&](auto zero) {
    using T = decltype(zero);
    gru_backward_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(h.device())>>>(
        static_cast<const T*>(dh.raw_data()), static_cast<const T*>(dh_a.raw_data()),
        static_cast<const T*>(dh_b.raw_data()), static_cast<const T*>(ws.raw_data()),
        static_cast<const T*>(h.raw_data()), static_cast<T*>(dxw.raw_data()),
        static_cast<T*>(dhh.raw_data()), static_cast<T*>(dh_direct.raw_data()), n, h.size(1));
  });
  launch.done();
}

void lstm_cell(const Tensor& xw, const Tensor& hh, const Tensor& c, const Tensor& h,
               const Tensor& c_out, const Tensor& act) {
  const int64_t n = h.numel();
  if (n == 0) return;
  const Launch launch(h.device(), "_lstm_layer");
  with_device_floating(h.dtype(), "_lstm_layer", [&](auto zero) {
    using T = decltype(zero);
    cell_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(h.device())>>>(
        static_cast<const T*>(xw.raw_data()), static_cast<const T*>(hh.raw_data()),
        static_cast<const T*>(c.raw_data()), static_cast<T*>(h.raw_data()),
        static_cast<T*>(c_out.raw_data()), static_cast<T*>(act.raw_data()), n, h.size(1));
  });
  launch.done();
}

void lstm_cell_backward(const Tensor& dh, const Tensor& dh_next, const Tensor& dc,
                        const Tensor& act, const Tensor& c, const Tensor& c_out,
                        const Tensor& dgates, const Tensor& dc_prev) {
  const int64_t n = c.numel();
  if (n == 0) return;
  const Launch launch(c.device(), "_lstm_layer_backward");
  with_device_floating(c.dtype(), "_lstm_layer_backward", [&](auto zero) {
    using T = decltype(zero);
    cell_backward_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(c.device())>>>(
        static_cast<const T*>(dh.raw_data()), static_cast<const T*>(dh_next.raw_data()),
        static_cast<const T*>(dc.raw_data()), static_cast<const T*>(act.raw_data()),
        static_cast<const T*>(c.raw_data()), static_cast<const T*>(c_out.raw_data()),
        static_cast<T*>(dgates.raw_data()), static_cast<T*>(dc_prev.raw_data()), n, c.size(1));
  });
  launch.done();
}

}  // namespace

OFL_REGISTER_KERNEL(gru_cell_kernel, DeviceType::kCUDA, gru_cell);
OFL_REGISTER_KERNEL(gru_cell_backward_kernel, DeviceType::kCUDA, gru_cell_backward);
OFL_REGISTER_KERNEL(lstm_cell_kernel, DeviceType::kCUDA, lstm_cell);
OFL_REGISTER_KERNEL(lstm_cell_backward_kernel, DeviceType::kCUDA, lstm_cell_backward);

}  // namespace ofl::internal::cuda
