// CUDA kernels of the layers a transformer trains with: softmax and log-softmax over the last
// axis, LayerNorm / RMSNorm, index_select / index_add (embeddings and their gradients) with the
// bounds check, gather / scatter / scatter_add, and the negative log-likelihood. A block per row
// where a row is reduced (a shared-memory tree), otherwise a thread per element; statistics in
// float (double for float64, and double for the norms' moments, as the CPU kernels).
#include <algorithm>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

// The sum of every thread's `v` in the block, on every thread (kThreads threads).
template <class A>
__device__ A block_sum(A v, A* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const A total = shared[0];
  __syncthreads();
  return total;
}

template <class A>
__device__ A block_max(A v, A* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half && shared[threadIdx.x + half] > shared[threadIdx.x])
      shared[threadIdx.x] = shared[threadIdx.x + half];
    __syncthreads();
  }
  const A total = shared[0];
  __syncthreads();
  return total;
}

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

int64_t row_blocks(int64_t rows) {
  return std::min<int64_t>(rows, 65535);
}

// --- softmax -------------------------------------------------------------------------------

template <class T>
__global__ void softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using M = stat_t<T>;
  __shared__ M shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    M mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) mx = dm::fmax(mx, convert<M>(xr[c]));
    mx = block_max(mx, shared);
    if (dm::isinf(mx) && mx < 0) mx = 0;  // an all -inf row
    M total = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      total += dm::exp(convert<M>(xr[c]) - mx);
    total = block_sum(total, shared);
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
  check(cudaSetDevice(out.device().index), "softmax");
  dispatch_floating(x.dtype(), "softmax", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    softmax_rows<T><<<row_blocks(rows), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), rows, cols, log);
  });
  check(cudaGetLastError(), "softmax");
}

void softmax_backward(const Tensor& g, const Tensor& y, const Tensor& gx, bool log) {
  const int64_t cols = y.dim() ? y.shape().back() : 1;
  const int64_t rows = cols ? y.numel() / cols : 0;
  if (rows == 0) return;
  check(cudaSetDevice(gx.device().index), "softmax_backward");
  dispatch_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    softmax_backward_rows<T><<<row_blocks(rows), kThreads, 0, stream_of(gx.device())>>>(
        static_cast<const T*>(g.raw_data()), static_cast<const T*>(y.raw_data()),
        static_cast<T*>(gx.raw_data()), rows, cols, log);
  });
  check(cudaGetLastError(), "softmax_backward");
}

// --- LayerNorm / RMSNorm -------------------------------------------------------------------

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
  check(cudaSetDevice(out.device().index), "layer_norm");
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using S = stat_t<T>;
    norm_rows<T, S><<<row_blocks(rows), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), data_or_null<T>(w), data_or_null<T>(b), eps, rms,
        static_cast<T*>(out.raw_data()),
        mean.defined() ? static_cast<S*>(mean.raw_data()) : nullptr,
        static_cast<S*>(rstd.raw_data()), rows, cols);
  });
  check(cudaGetLastError(), "layer_norm");
}

void norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                   const Tensor& rstd, bool rms, const Tensor& gx, const Tensor& gw,
                   const Tensor& gb) {
  const int64_t rows = rstd.numel();
  int64_t cols = gw.defined() ? gw.numel() : gb.defined() ? gb.numel() : 0;
  if (rows) cols = x.numel() / rows;
  check(cudaSetDevice(gx.device().index), "layer_norm_backward");
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
  check(cudaGetLastError(), "layer_norm_backward");
}

// --- index_select / index_add and their bounds check ---------------------------------------

void index_check(const char* op, const Tensor& index, int64_t size, int64_t axis) {
  index_check_kernel().get(DeviceType::kCPU)(op, on_host(index), size, axis);
}

template <class T>
__global__ void select_rows(const T* x, const int64_t* idx, T* out, int64_t outer, int64_t n,
                            int64_t k, int64_t inner) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * k * inner) return;
  const int64_t c = e % inner, t = e / inner, o = t / k, i = t % k;
  out[e] = x[(o * n + idx[i]) * inner + c];
}

void index_select(const Tensor& x_in, const Tensor& index_in, int64_t outer, int64_t n,
                  int64_t inner, const Tensor& out) {
  const int64_t k = index_in.numel(), total = outer * k * inner;
  if (total == 0) return;
  check(cudaSetDevice(out.device().index), "index_select");
  // A 0-d host index (or x) follows the GPU operands unmoved (common_device): move it here.
  const Tensor x = on_device(x_in, out.device()), index = on_device(index_in, out.device());
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    select_rows<U><<<blocks_for(total, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const U*>(x.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<U*>(out.raw_data()), outer, n, k, inner);
  });
  check(cudaGetLastError(), "index_select");
}

template <class T>
__global__ void add_rows(const T* src, const int64_t* idx, T* out, int64_t outer, int64_t n,
                         int64_t k, int64_t inner) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * k * inner) return;
  const int64_t c = e % inner, t = e / inner, o = t / k, i = t % k;
  add_to(out + (o * n + idx[i]) * inner + c, src[e]);
}

void index_add(const Tensor& src_in, const Tensor& index_in, int64_t outer, int64_t n,
               int64_t inner, const Tensor& out) {
  const int64_t k = index_in.numel(), total = outer * k * inner;
  if (total == 0) return;
  check(cudaSetDevice(out.device().index), "index_add");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  with_atomic_add(out.dtype(), "index_add", [&](auto tag) {
    using T = decltype(tag);
    add_rows<T><<<blocks_for(total, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(src.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<T*>(out.raw_data()), outer, n, k, inner);
  });
  check(cudaGetLastError(), "index_add");
}

// --- gather / scatter_add along an axis, with a same-rank contiguous index ------------------

// Where element i of the index (row-major over its shape) reads or writes in a contiguous
// tensor: its own position, with the index's value along `axis`.
struct Along {
  int ndim = 0, axis = 0;
  int64_t ishape[kMaxDims] = {}, strides[kMaxDims] = {};

  __device__ int64_t offset(int64_t i, const int64_t* idx) const {
    int64_t off = 0;
    const int64_t value = idx[i];
    for (int d = ndim - 1; d >= 0; --d) {
      off += (d == axis ? value : i % ishape[d]) * strides[d];
      i /= ishape[d];
    }
    return off;
  }
};

Along along(const Tensor& t, int64_t axis, const Tensor& index, const char* op) {
  if (index.dim() > kMaxDims) fail(op, "CUDA kernels take at most ", kMaxDims, " dimensions");
  Along a;
  a.ndim = int(index.dim());
  a.axis = int(axis);
  const Shape strides = contiguous_strides(t.shape());
  for (int d = 0; d < a.ndim; ++d) {
    a.ishape[d] = index.shape()[d];
    a.strides[d] = strides[d];
  }
  return a;
}

template <class U>
__global__ void gather_elements(const U* x, const int64_t* idx, U* out, int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[where.ndim ? where.offset(i, idx) : 0];
}

void gather(const Tensor& x_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "gather");
  const Tensor x = on_device(x_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(x, axis, index, "gather");
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    gather_elements<U><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const U*>(x.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<U*>(out.raw_data()), n, where);
  });
  check(cudaGetLastError(), "gather");
}

template <class T>
__global__ void scatter_add_elements(const T* src, const int64_t* idx, T* out, int64_t n,
                                     Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) add_to(out + (where.ndim ? where.offset(i, idx) : 0), src[i]);
}

void scatter_add(const Tensor& src_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "scatter_add");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(out, axis, index, "scatter_add");
  with_atomic_add(out.dtype(), "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    scatter_add_elements<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(src.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<T*>(out.raw_data()), n, where);
  });
  check(cudaGetLastError(), "scatter_add");
}

// scatter: where indices coincide the last one wins, as on the CPU. A first pass elects each
// destination's greatest source position, a second writes only the elected sources.
__global__ void elect_sources(const int64_t* idx, long long* winner, int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) atomicMax(winner + (where.ndim ? where.offset(i, idx) : 0), (long long)i);
}

template <class U>
__global__ void scatter_elected(const U* src, const int64_t* idx, const long long* winner, U* out,
                                int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int64_t off = where.ndim ? where.offset(i, idx) : 0;
  if (winner[off] == i) out[off] = src[i];
}

void scatter(const Tensor& src_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "scatter");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(out, axis, index, "scatter");
  const Tensor winner = scratch(out.numel(), DType::kInt64, out.device());
  fill_kernel().get(DeviceType::kCUDA)(winner, -1);
  const cudaStream_t stream = stream_of(out.device());
  const auto* idx = static_cast<const int64_t*>(index.raw_data());
  auto* elected = static_cast<long long*>(winner.raw_data());
  elect_sources<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(idx, elected, n, where);
  by_itemsize(out.dtype(), [&](auto tag) {
    using U = decltype(tag);
    scatter_elected<U><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const U*>(src.raw_data()), idx, elected, static_cast<U*>(out.raw_data()), n,
        where);
  });
  check(cudaGetLastError(), "scatter");
}

// --- negative log-likelihood ---------------------------------------------------------------

void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  const Tensor host = on_host(target);
  const int64_t* t = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= classes))
      fail<IndexError>("nll_loss", "target ", t[i], " is out of bounds for ", classes,
                       " classes (ignore_index is ", ignore_index, ")");
}

template <class T>
__global__ void nll_forward(const T* x, const int64_t* t, T* out, int64_t outer, int64_t classes,
                            int64_t inner, int64_t ignore) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * inner) return;
  const int64_t n = e / inner, i = e % inner;
  out[e] = t[e] == ignore ? convert<T>(0.0f)
                          : convert<T>(-convert<stat_t<T>>(x[(n * classes + t[e]) * inner + i]));
}

template <class T>
__global__ void nll_backward(const T* g, const int64_t* t, T* gx, int64_t outer, int64_t classes,
                             int64_t inner, int64_t ignore) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * inner || t[e] == ignore) return;
  const int64_t n = e / inner, i = e % inner;
  gx[(n * classes + t[e]) * inner + i] = convert<T>(-convert<stat_t<T>>(g[e]));
}

void nll_loss(const Tensor& x, const Tensor& target_in, int64_t outer, int64_t classes,
              int64_t inner, int64_t ignore_index, const Tensor& out) {
  // A 0-d host target (x of shape (C,)) follows x to the GPU unmoved (common_device).
  const Tensor target = on_device(target_in, out.device());
  check_targets(target, classes, ignore_index);
  if (outer * inner == 0) return;
  check(cudaSetDevice(out.device().index), "nll_loss");
  dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    nll_forward<T><<<blocks_for(outer * inner, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const int64_t*>(target.raw_data()),
        static_cast<T*>(out.raw_data()), outer, classes, inner, ignore_index);
  });
  check(cudaGetLastError(), "nll_loss");
}

void nll_loss_backward(const Tensor& grad_in, const Tensor& target_in, int64_t outer,
                       int64_t classes, int64_t inner, int64_t ignore_index, const Tensor& gx) {
  const Tensor grad = on_device(grad_in, gx.device()), target = on_device(target_in, gx.device());
  check_targets(target, classes, ignore_index);
  fill_kernel().get(DeviceType::kCUDA)(gx, 0);
  if (outer * inner == 0) return;
  check(cudaSetDevice(gx.device().index), "nll_loss_backward");  // fill skips it when gx is empty
  dispatch_floating(gx.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    nll_backward<T><<<blocks_for(outer * inner, kThreads), kThreads, 0, stream_of(gx.device())>>>(
        static_cast<const T*>(grad.raw_data()), static_cast<const int64_t*>(target.raw_data()),
        static_cast<T*>(gx.raw_data()), outer, classes, inner, ignore_index);
  });
  check(cudaGetLastError(), "nll_loss_backward");
}

const bool registered = [] {
  softmax_kernel().set(DeviceType::kCUDA, softmax);
  softmax_backward_kernel().set(DeviceType::kCUDA, softmax_backward);
  norm_kernel().set(DeviceType::kCUDA, norm);
  norm_backward_kernel().set(DeviceType::kCUDA, norm_backward);
  index_check_kernel().set(DeviceType::kCUDA, index_check);
  index_select_kernel().set(DeviceType::kCUDA, index_select);
  index_add_kernel().set(DeviceType::kCUDA, index_add);
  gather_kernel().set(DeviceType::kCUDA, gather);
  scatter_add_kernel().set(DeviceType::kCUDA, scatter_add);
  scatter_kernel().set(DeviceType::kCUDA, scatter);
  nll_loss_kernel().set(DeviceType::kCUDA, nll_loss);
  nll_loss_backward_kernel().set(DeviceType::kCUDA, nll_loss_backward);
  return true;
}();

}  // namespace
}  // namespace ofl::internal::cuda
