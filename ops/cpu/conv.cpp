// conv2d as im2col + GEMM on OpenBLAS (float/double). The input gradient is W^T @ grad folded
// back by col2im; the weight gradient is grad @ cols^T summed over the batch in fixed chunks,
// so results do not depend on the number of threads.
//
// Images run in parallel while each GEMM is small (one task each); larger GEMMs go one image at
// a time and split into panels inside gemm(). im2col/col2im split over channels on oneTBB.

#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/gemm.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

// A GEMM this small runs as one task, so images can run in parallel.
constexpr int64_t kSingleThreadedGemm = kGemmTaskWork;

// Sizes of one conv2d call. A group's column matrix is (K, L): K = Cg * kh * kw, L = Ho * Wo.
struct Geometry {
  int64_t N, C, H, W, Co, Ho, Wo, G, Cg, Cog, K, L;
  // 1x1 kernel, stride 1, no padding: the input plane already is the column matrix.
  bool direct;
  // Images run in parallel, each GEMM on one thread (else one image at a time).
  bool batch_parallel;
  // The forward and the input gradient also run images in parallel when there are enough to
  // keep every thread busy: each thread's im2col then feeds its own GEMM from cache, with no
  // join per image (1.3x to 1.9x for a 16-image stride-2 conv here). The weight gradient's
  // chunks are fixed by the shapes alone, so its sums do not depend on the thread count.
  int64_t batch_grain() const {
    return batch_parallel || N >= get_num_threads() ? 1 : std::max<int64_t>(N, 1);
  }
};

Geometry geometry(const Shape& xs, const Shape& ws, const Window2d& win, int64_t groups) {
  Geometry g{};
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.Co = ws[0], g.Ho = win.out_h(g.H), g.Wo = win.out_w(g.W), g.G = groups;
  g.Cg = g.C / groups, g.Cog = g.Co / groups;
  g.K = g.Cg * win.kh * win.kw, g.L = g.Ho * g.Wo;
  g.direct = win.kh == 1 && win.kw == 1 && win.sh == 1 && win.sw == 1 && win.ph == 0 && win.pw == 0;
  g.batch_parallel = g.Cog * g.K * g.L <= kSingleThreadedGemm;
  return g;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The output columns [lo, hi) whose input column ow * sw + dx lies inside [0, W).
std::pair<int64_t, int64_t> valid_cols(int64_t dx, int64_t sw, int64_t W, int64_t Wo) {
  int64_t lo = dx >= 0 ? 0 : ceil_div(-dx, sw);
  int64_t hi = W - dx > 0 ? std::min(Wo, ceil_div(W - dx, sw)) : 0;
  return {std::min(lo, hi), hi};
}

// Calls f(offset in cols, whether the input row is inside the image, offset of input column
// ow = 0 (may lie in the padding), lo, hi) for every (column-matrix row, output row) pair.
// Channels split over oneTBB; the rows of channel c only touch input plane c.
template <class F>
void for_each_window_row(const Geometry& g, const Window2d& win, F&& f) {
  const int64_t per_channel = std::max<int64_t>(win.kh * win.kw * g.L, 1);
  parallel_for(g.Cg, std::max<int64_t>(1, kGrainSize / per_channel), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t i = 0; i < win.kh; ++i)
        for (int64_t j = 0; j < win.kw; ++j) {
          const int64_t row = (c * win.kh + i) * win.kw + j, dx = j * win.dw - win.pw;
          auto [lo, hi] = valid_cols(dx, win.sw, g.W, g.Wo);
          for (int64_t oh = 0; oh < g.Ho; ++oh) {
            const int64_t ih = oh * win.sh - win.ph + i * win.dh;
            const bool inside = ih >= 0 && ih < g.H;
            f(row * g.L + oh * g.Wo, inside, (c * g.H + ih) * g.W + dx, lo, hi);
          }
        }
  });
}

// cols (K, L) from one group's input planes x (Cg, H, W); padding reads as zero.
template <class T>
void im2col(const Geometry& g, const Window2d& win, const T* x, T* cols) {
  const int64_t sw = win.sw;
  for_each_window_row(g, win, [&](int64_t out, bool inside, int64_t in, int64_t lo, int64_t hi) {
    T* r = cols + out;
    if (!inside) {
      std::fill(r, r + g.Wo, T(0));
      return;
    }
    std::fill(r, r + lo, T(0));
    for (int64_t ow = lo; ow < hi; ++ow) r[ow] = x[in + ow * sw];
    std::fill(r + hi, r + g.Wo, T(0));
  });
}

// The adjoint of im2col: adds every column entry back into its input position.
template <class T>
void col2im(const Geometry& g, const Window2d& win, const T* cols, T* x) {
  std::fill(x, x + g.Cg * g.H * g.W, T(0));
  const int64_t sw = win.sw;
  for_each_window_row(g, win, [&](int64_t out, bool inside, int64_t in, int64_t lo, int64_t hi) {
    if (!inside) return;
    const T* r = cols + out;
    for (int64_t ow = lo; ow < hi; ++ow) x[in + ow * sw] += r[ow];
  });
}

template <class T>
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Window2d& win,
                  int64_t groups, const Tensor& y) {
  const Geometry g = geometry(x.shape(), w.shape(), win, groups);
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  T* yp = y.data<T>();
  parallel_for(g.N, g.batch_grain(), [&](int64_t lo, int64_t hi) {
    std::vector<T> cols(g.direct ? 0 : g.K * g.L);
    for (int64_t n = lo; n < hi; ++n) {
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const T* xg = xp + (n * g.C + grp * g.Cg) * g.H * g.W;
        if (!g.direct) im2col(g, win, xg, cols.data());
        gemm<T>(false, false, g.Cog, g.L, g.K, wp + grp * g.Cog * g.K, g.K,
                g.direct ? xg : cols.data(), g.L, T(0), yp + (n * g.Co + grp * g.Cog) * g.L, g.L);
      }
      if (bp)
        for (int64_t co = 0; co < g.Co; ++co) {
          T* yr = yp + (n * g.Co + co) * g.L;
          const T b = bp[co];
#pragma omp simd
          for (int64_t l = 0; l < g.L; ++l) yr[l] += b;
        }
    }
  });
}

template <class T>
void conv_input_grad(const Tensor& gy, const Tensor& w, const Window2d& win, int64_t groups,
                     const Tensor& gx) {
  const Geometry g = geometry(gx.shape(), w.shape(), win, groups);
  const T* gyp = gy.data<T>();
  const T* wp = w.data<T>();
  T* gxp = gx.data<T>();
  parallel_for(g.N, g.batch_grain(), [&](int64_t lo, int64_t hi) {
    std::vector<T> cols(g.direct ? 0 : g.K * g.L);
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        T* gxg = gxp + (n * g.C + grp * g.Cg) * g.H * g.W;
        const T* gyg = gyp + (n * g.Co + grp * g.Cog) * g.L;
        const T* wg = wp + grp * g.Cog * g.K;
        if (g.direct) {
          gemm<T>(true, false, g.K, g.L, g.Cog, wg, g.K, gyg, g.L, T(0), gxg, g.L);
        } else {
          gemm<T>(true, false, g.K, g.L, g.Cog, wg, g.K, gyg, g.L, T(0), cols.data(), g.L);
          col2im(g, win, cols.data(), gxg);
        }
      }
  });
}

template <class T>
void conv_weight_grad(const Tensor& gy, const Tensor& x, const Window2d& win, int64_t groups,
                      const Tensor& gw) {
  const Geometry g = geometry(x.shape(), gw.shape(), win, groups);
  const T* gyp = gy.data<T>();
  const T* xp = x.data<T>();
  T* gwp = gw.data<T>();
  const int64_t size = gw.numel();
  if (g.N == 0) {
    std::fill(gwp, gwp + size, T(0));
    return;
  }
  // A fixed number of batch chunks, each summing into its own buffer (chunk 0 into gw).
  const int64_t most = std::min(g.N, (int64_t{1} << 24) / std::max<int64_t>(size, 1));
  const int64_t chunks = std::clamp<int64_t>(most, 1, 8);
  const int64_t per = ceil_div(g.N, chunks);
  std::vector<std::vector<T>> partial(chunks - 1, std::vector<T>(size));
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<T> cols(g.direct ? 0 : g.K * g.L);
    for (int64_t ch = c0; ch < c1; ++ch) {
      T* acc = ch == 0 ? gwp : partial[ch - 1].data();
      const int64_t n0 = ch * per, n1 = std::min(g.N, n0 + per);
      if (n0 >= n1) std::fill(acc, acc + size, T(0));
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t grp = 0; grp < g.G; ++grp) {
          const T* xg = xp + (n * g.C + grp * g.Cg) * g.H * g.W;
          if (!g.direct) im2col(g, win, xg, cols.data());
          gemm<T>(false, true, g.Cog, g.K, g.L, gyp + (n * g.Co + grp * g.Cog) * g.L, g.L,
                  g.direct ? xg : cols.data(), g.L, n == n0 ? T(0) : T(1), acc + grp * g.Cog * g.K,
                  g.K);
        }
    }
  });
  for (const auto& part : partial)
    for (int64_t i = 0; i < size; ++i) gwp[i] += part[i];
}

template <class F>
void dispatch_blas(DType t, const char* op, F&& f) {
  if (t == DType::kFloat32) return f(TypeTag<float>{});
  if (t == DType::kFloat64) return f(TypeTag<double>{});
  fail<TypeError>(op, "CPU kernel computes in float32 or float64, got ", dtype_name(t));
}

void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Window2d& win,
            int64_t groups, const Tensor& y) {
  dispatch_blas(x.dtype(), "conv2d", [&](auto tag) {
    conv_forward<typename decltype(tag)::type>(x, w, bias, win, groups, y);
  });
}

void conv2d_input_grad(const Tensor& gy, const Tensor& w, const Window2d& win, int64_t groups,
                       const Tensor& gx) {
  dispatch_blas(gy.dtype(), "conv2d_backward", [&](auto tag) {
    conv_input_grad<typename decltype(tag)::type>(gy, w, win, groups, gx);
  });
}

void conv2d_weight_grad(const Tensor& gy, const Tensor& x, const Window2d& win, int64_t groups,
                        const Tensor& gw) {
  dispatch_blas(gy.dtype(), "conv2d_backward", [&](auto tag) {
    conv_weight_grad<typename decltype(tag)::type>(gy, x, win, groups, gw);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(conv2d_kernel, DeviceType::kCPU, conv2d);
OFL_REGISTER_KERNEL(conv2d_input_grad_kernel, DeviceType::kCPU, conv2d_input_grad);
OFL_REGISTER_KERNEL(conv2d_weight_grad_kernel, DeviceType::kCPU, conv2d_weight_grad);

}  // namespace ofl::internal::cpu
