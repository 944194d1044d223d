// Softmax / log-softmax over the last axis, forward and backward, one pass per row.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/vector_math.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

// A row's sum in kLanes partial sums (a vector's lanes, kept in registers; ops/cpu/loops.h) added
// at the end: GCC vectorises this loop well, where `omp simd reduction(+)` spilled its lanes to the
// stack.
template <class M, class Load>
M row_sum(int64_t n, Load load) {
  constexpr int L = int(kLanes<M>);
  alignas(64) M lane[L] = {};
  int64_t c = 0;
  for (; c + L <= n; c += L)
    for (int k = 0; k < L; ++k) lane[k] += load(c + k);
  for (int k = 0; c < n; ++c, ++k) lane[k] += load(c);
  M s = 0;
  for (int k = 0; k < L; ++k) s += lane[k];
  return s;
}

template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using M = opmath_t<T>;
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cols, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<M> buf(cols);
                 M* bp = buf.data();
                 for (int64_t r = b; r < e; ++r) {
                   const T* xr = x + r * cols;
                   T* yr = y + r * cols;
                   M mx = -INFINITY;
#pragma omp simd reduction(max : mx)
                   for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, M(xr[c]));
                   if (std::isinf(mx) && mx < 0) mx = 0;  // an all -inf row
#pragma omp simd
                   for (int64_t c = 0; c < cols; ++c) bp[c] = std::exp(M(xr[c]) - mx);
                   const M total = row_sum<M>(cols, [&](int64_t c) { return bp[c]; });
                   if (log) {
                     const M lse = std::log(total) + mx;
#pragma omp simd
                     for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<T>(M(xr[c]) - lse);
                   } else {
                     const M inv = M(1) / total;
#pragma omp simd
                     for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<T>(bp[c] * inv);
                   }
                 }
               });
}

template <class T>
void softmax_backward_rows(const T* g, const T* y, T* gx, int64_t rows, int64_t cols, bool log) {
  using M = opmath_t<T>;
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cols, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   const T* gr = g + r * cols;
                   const T* yr = y + r * cols;
                   T* out = gx + r * cols;
                   if (log) {
                     const M dot = row_sum<M>(cols, [&](int64_t c) { return M(gr[c]); });
#pragma omp simd
                     for (int64_t c = 0; c < cols; ++c)
                       out[c] = static_cast<T>(M(gr[c]) - std::exp(M(yr[c])) * dot);
                   } else {
                     const M dot = row_sum<M>(cols, [&](int64_t c) { return M(gr[c]) * M(yr[c]); });
#pragma omp simd
                     for (int64_t c = 0; c < cols; ++c)
                       out[c] = static_cast<T>(M(yr[c]) * (M(gr[c]) - dot));
                   }
                 }
               });
}

void softmax(const Tensor& x, const Tensor& out, bool log) {
  const int64_t cols = x.dim() ? x.shape().back() : 1;
  const int64_t rows = cols ? x.numel() / cols : 0;
  dispatch_floating(x.dtype(), "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_rows<T>(x.data<T>(), out.data<T>(), rows, cols, log);
  });
}

void softmax_backward(const Tensor& g, const Tensor& y, const Tensor& gx, bool log) {
  const int64_t cols = y.dim() ? y.shape().back() : 1;
  const int64_t rows = cols ? y.numel() / cols : 0;
  dispatch_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_rows<T>(g.data<T>(), y.data<T>(), gx.data<T>(), rows, cols, log);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(softmax_kernel, DeviceType::kCPU, softmax);
OFL_REGISTER_KERNEL(softmax_backward_kernel, DeviceType::kCPU, softmax_backward);

}  // namespace ofl::internal::cpu
