// CUDA kernels of LayerNorm / RMSNorm and their backward: a block per row (rows.cuh), the
// moments in double, as ops/cpu/norm.cpp; the weight's and bias's gradients summed over rows in
// pieces, then the pieces in a fixed order.
#include <vector>

#include "ops/cuda/rows.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

template <class T, class S>
__global__ void norm_rows(const T* x, const T* w, const T* b, double eps, bool rms, T* y, S* mean,
                          S* rstd, int64_t rows, int64_t cols) {
  using M = stat_t<T>;
  __shared__ double shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    double s = 0, ss = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double v = convert<M>(xr[c]);
      s += v;
      ss += v * v;
    }
    s = block_sum(s, shared);
    ss = block_sum(ss, shared);
    const double mu = rms ? 0.0 : s / cols;
    const double var = rms ? ss / cols : dm::fmax(0.0, ss / cols - mu * mu);
    const double inv = 1.0 / dm::sqrt(var + eps);
    if (threadIdx.x == 0) {
      if (mean) mean[r] = S(mu);
      rstd[r] = S(inv);
    }
    const M mu_m = M(mu), inv_m = M(inv);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      M v = (convert<M>(xr[c]) - mu_m) * inv_m;
      if (w) v *= convert<M>(w[c]);
      if (b) v += convert<M>(b[c]);
      y[r * cols + c] = convert<T>(v);
    }
  }
}

template <class T, class S>
__global__ void norm_backward_rows(const T* g, const T* x, const T* w, const S* mean, const S* rstd,
                                   bool rms, T* gx, int64_t rows, int64_t cols) {
  using M = stat_t<T>;
  __shared__ M shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const M mu = mean ? M(mean[r]) : M(0), inv = M(rstd[r]);
    M sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const M xhat = (convert<M>(x[r * cols + c]) - mu) * inv;
      const M gy = w ? convert<M>(g[r * cols + c]) * convert<M>(w[c]) : convert<M>(g[r * cols + c]);
      sum_gy += gy;
      sum_gy_xhat += gy * xhat;
    }
    sum_gy = block_sum(sum_gy, shared);
    sum_gy_xhat = block_sum(sum_gy_xhat, shared);
    const M mean_gy = rms ? M(0) : sum_gy / cols, mean_gyx = sum_gy_xhat / cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const M xhat = (convert<M>(x[r * cols + c]) - mu) * inv;
      const M gy = w ? convert<M>(g[r * cols + c]) * convert<M>(w[c]) : convert<M>(g[r * cols + c]);
      gx[r * cols + c] = convert<T>(inv * (gy - mean_gy - xhat * mean_gyx));
    }
  }
}

// The weight's and bias's gradients: thread (c, piece) sums its piece of `len` rows of column c
// in double into pw/pb[piece * cols + c]; a second pass sums the pieces in order (deterministic).
template <class T, class S>
__global__ void norm_backward_columns(const T* g, const T* x, const S* mean, const S* rstd,
                                      double* pw, double* pb, int64_t rows, int64_t cols,
                                      int64_t len) {
  using M = stat_t<T>;
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  const int64_t begin = blockIdx.y * len, end = begin + len < rows ? begin + len : rows;
  double sw = 0, sb = 0;
  for (int64_t r = begin; r < end; ++r) {
    const M gv = convert<M>(g[r * cols + c]);
    const M xhat = (convert<M>(x[r * cols + c]) - (mean ? M(mean[r]) : M(0))) * M(rstd[r]);
    sw += double(gv * xhat);
    sb += double(gv);
  }
  pw[blockIdx.y * cols + c] = sw;
  pb[blockIdx.y * cols + c] = sb;
}

template <class T>
__global__ void sum_pieces(const double* pw, const double* pb, T* gw, T* gb, int64_t pieces,
                           int64_t cols) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  double sw = 0, sb = 0;
  for (int64_t p = 0; p < pieces; ++p) {
    sw += pw[p * cols + c];
    sb += pb[p * cols + c];
  }
  if (gw) gw[c] = convert<T>(stat_t<T>(sw));
  if (gb) gb[c] = convert<T>(stat_t<T>(sb));
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

void norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, bool rms,
          const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const int64_t rows = rstd.numel(), cols = rows ? x.numel() / rows : 0;
  if (rows == 0) return;
  const Launch launch(out.device(), "layer_norm");
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using S = stat_t<T>;
    norm_rows<T, S><<<row_blocks(rows), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), data_or_null<T>(w), data_or_null<T>(b), eps, rms,
        static_cast<T*>(out.raw_data()),
        mean.defined() ? static_cast<S*>(mean.raw_data()) : nullptr,
        static_cast<S*>(rstd.raw_data()), rows, cols);
  });
  launch.done();
}

void norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                   const Tensor& rstd, bool rms, const Tensor& gx, const Tensor& gw,
                   const Tensor& gb) {
  const int64_t rows = rstd.numel();
  int64_t cols = gw.defined() ? gw.numel() : gb.defined() ? gb.numel() : 0;
  if (rows) cols = x.numel() / rows;
  const Launch launch(gx.device(), "layer_norm_backward");
  cudaStream_t stream = stream_of(gx.device());
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using S = stat_t<T>;
    const S* mean_p = mean.defined() ? static_cast<const S*>(mean.raw_data()) : nullptr;
    const S* rstd_p = static_cast<const S*>(rstd.raw_data());
    if (rows)
      norm_backward_rows<T, S><<<row_blocks(rows), kThreads, 0, stream>>>(
          static_cast<const T*>(g.raw_data()), static_cast<const T*>(x.raw_data()),
          data_or_null<T>(w), mean_p, rstd_p, rms, static_cast<T*>(gx.raw_data()), rows, cols);
    if ((gw.defined() || gb.defined()) && cols) {
      // Pieces of at least 64 rows, enough of them to fill the GPU (about 512 blocks).
      const int64_t blocks = blocks_for(cols, kThreads);
      const int64_t pieces = std::max<int64_t>(
          1, std::min<int64_t>({(512 + blocks - 1) / blocks, (rows + 63) / 64, int64_t(65535)}));
      const int64_t len = (rows + pieces - 1) / pieces;
      Tensor part = scratch(2 * pieces * cols, DType::kFloat64, gx.device());
      double* pw = static_cast<double*>(part.raw_data());
      norm_backward_columns<T, S>
          <<<dim3(unsigned(blocks), unsigned(pieces)), kThreads, 0, stream>>>(
              static_cast<const T*>(g.raw_data()), static_cast<const T*>(x.raw_data()), mean_p,
              rstd_p, pw, pw + pieces * cols, rows, cols, len);
      sum_pieces<T><<<blocks, kThreads, 0, stream>>>(
          pw, pw + pieces * cols, gw.defined() ? static_cast<T*>(gw.raw_data()) : nullptr,
          gb.defined() ? static_cast<T*>(gb.raw_data()) : nullptr, pieces, cols);
    }
  });
  launch.done();
}

OFL_REGISTER_KERNEL(norm_kernel, DeviceType::kCUDA, norm);
OFL_REGISTER_KERNEL(norm_backward_kernel, DeviceType::kCUDA, norm_backward);

}  // namespace
}  // namespace ofl::internal::cuda
