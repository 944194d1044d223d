// LayerNorm / RMSNorm over the trailing `cols` elements of each row, with fused backward.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/loops.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

template <class T, class S>
void norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, bool rms,
                  const Tensor& out, const Tensor& mean_t, const Tensor& rstd_t) {
  using M = opmath_t<T>;
  const int64_t rows = rstd_t.numel(), cols = rows ? x.numel() / rows : 0;
  const T* xp = x.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const T* bp = b.defined() ? b.data<T>() : nullptr;
  T* yp = out.data<T>();
  S* mean = mean_t.defined() ? mean_t.data<S>() : nullptr;
  S* rstd = rstd_t.data<S>();
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cols, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   const T* xr = xp + r * cols;
                   double s = 0, ss = 0;
#pragma omp simd reduction(+ : s, ss)
                   for (int64_t c = 0; c < cols; ++c) {
                     double v = static_cast<double>(M(xr[c]));
                     s += v;
                     ss += v * v;
                   }
                   double mu = rms ? 0.0 : s / cols;
                   double var = rms ? ss / cols : std::max(0.0, ss / cols - mu * mu);
                   double inv = 1.0 / std::sqrt(var + eps);
                   if (mean) mean[r] = static_cast<S>(mu);
                   rstd[r] = static_cast<S>(inv);
                   const M mu_m = static_cast<M>(mu), inv_m = static_cast<M>(inv);
                   T* yr = yp + r * cols;
                   for (int64_t c = 0; c < cols; ++c) {
                     M v = (M(xr[c]) - mu_m) * inv_m;
                     if (wp) v *= M(wp[c]);
                     if (bp) v += M(bp[c]);
                     yr[c] = static_cast<T>(v);
                   }
                 }
               });
}

template <class T, class S>
void norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean_t,
                   const Tensor& rstd_t, bool rms, const Tensor& gx, const Tensor& gw,
                   const Tensor& gb) {
  using M = opmath_t<T>;
  // An empty shard (no rows) still owes its zero weight and bias gradients.
  const int64_t rows = rstd_t.numel();
  int64_t cols = gw.defined() ? gw.numel() : gb.defined() ? gb.numel() : 0;
  if (rows) cols = x.numel() / rows;
  const T* gp = g.data<T>();
  const T* xp = x.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const S* mean = mean_t.defined() ? mean_t.data<S>() : nullptr;
  const S* rstd = rstd_t.data<S>();
  T* gxp = gx.data<T>();
  // Weight/bias gradients: at most 16 fixed row chunks with private sums (in M, as PyTorch's),
  // added in order in double (deterministic, whatever the threads; 64 chunks cost two threads
  // a fifth of the backward in allocating and adding them).
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(16, rows * cols / kGrainSize));
  const int64_t per = (rows + chunks - 1) / std::max<int64_t>(chunks, 1);
  std::vector<std::vector<M>> pw(chunks, std::vector<M>(gw.defined() ? cols : 0));
  std::vector<std::vector<M>> pb(chunks, std::vector<M>(gb.defined() ? cols : 0));
  // Two branch-free vectorised loops a row: its sums with its weight and bias gradient terms,
  // then the input gradient, x-hat and g * w recomputed from the row in cache.
  constexpr int kL = int(kLanes<M>);
  std::vector<M> wm(cols, M(1));  // the weight (ones without one: g * 1 is g exactly)
  if (wp)
    for (int64_t c = 0; c < cols; ++c) wm[c] = M(wp[c]);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<M> sink(pw[0].empty() || pb[0].empty() ? cols : 0);
    for (int64_t ch = c0; ch < c1; ++ch) {
      M* pwc = pw[ch].empty() ? sink.data() : pw[ch].data();
      M* pbc = pb[ch].empty() ? sink.data() : pb[ch].data();
      for (int64_t r = ch * per; r < std::min(rows, (ch + 1) * per); ++r) {
        const T* xr = xp + r * cols;
        const T* gr = gp + r * cols;
        const M mu = mean ? M(mean[r]) : M(0), inv = M(rstd[r]);
        // Sums in kLanes partial sums (a vector's lanes, in registers), added at the end.
        alignas(64) M lane_gy[kL] = {}, lane_gyx[kL] = {};
        auto step = [&](int64_t c, int k) {
          const M g = M(gr[c]), xhat = (M(xr[c]) - mu) * inv, gy = g * wm[c];
          lane_gy[k] += gy;
          lane_gyx[k] += gy * xhat;
          pwc[c] += g * xhat;
          pbc[c] += g;
        };
        int64_t c = 0;
        for (; c + kL <= cols; c += kL)
          for (int k = 0; k < kL; ++k) step(c + k, k);
        for (int k = 0; c < cols; ++c, ++k) step(c, k);
        M sum_gy = 0, sum_gy_xhat = 0;
        for (int k = 0; k < kL; ++k) {
          sum_gy += lane_gy[k];
          sum_gy_xhat += lane_gyx[k];
        }
        const M mean_gy = rms ? M(0) : sum_gy / cols, mean_gyx = sum_gy_xhat / cols;
        T* out = gxp + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c)
          out[c] =
              static_cast<T>(inv * (M(gr[c]) * wm[c] - mean_gy - (M(xr[c]) - mu) * inv * mean_gyx));
      }
    }
  });
  auto finish = [&](const Tensor& t, const std::vector<std::vector<M>>& parts) {
    if (!t.defined()) return;
    T* p = t.data<T>();
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (const auto& part : parts) acc += static_cast<double>(part[c]);
      p[c] = static_cast<T>(static_cast<M>(acc));
    }
  };
  finish(gw, pw);
  finish(gb, pb);
}

void norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, bool rms,
          const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.dtype() == DType::kFloat64)
      norm_forward<T, double>(x, w, b, eps, rms, out, mean, rstd);
    else
      norm_forward<T, float>(x, w, b, eps, rms, out, mean, rstd);
  });
}

void norm_bw(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
             const Tensor& rstd, bool rms, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.dtype() == DType::kFloat64)
      norm_backward<T, double>(g, x, w, mean, rstd, rms, gx, gw, gb);
    else
      norm_backward<T, float>(g, x, w, mean, rstd, rms, gx, gw, gb);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(norm_kernel, DeviceType::kCPU, norm);
OFL_REGISTER_KERNEL(norm_backward_kernel, DeviceType::kCPU, norm_bw);

}  // namespace ofl::internal::cpu
