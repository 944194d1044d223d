// Fused attention on the CPU, one (batch, head) pair per task, the flash-attention formulation:
// only each row's log-sum-exp is saved, and the backward recomputes the probabilities from it.
// float and double run on the BLAS a block of query rows at a time (the block's scores, one
// GEMM; its softmax in place; its output, one GEMM), a causal block reading only the keys its
// last row sees. 16-bit floats take a row at a time in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/vector_math.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

// Row i of (batch b, head h) of a 4-d tensor whose last axis has unit stride.
template <class T>
struct Rows {
  T* base;
  int64_t sb, sh, si;
  Rows(const Tensor& t)
      : base(t.data<T>()), sb(t.strides()[0]), sh(t.strides()[1]), si(t.strides()[2]) {}
  T* at(int64_t b, int64_t h, int64_t i) const { return base + b * sb + h * sh + i * si; }
};

// Keys a query row sees: all of them, or those up to and including its own position.
int64_t visible(int64_t i, int64_t keys, bool causal) {
  return causal ? std::min(i + 1, keys) : keys;
}

template <class A, class T>
A dot(const T* x, const T* y, int64_t n) {
  A s = 0;
  for (int64_t d = 0; d < n; ++d) s += A(x[d]) * A(y[d]);
  return s;
}

template <class T, class S>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
             const Tensor& out, const Tensor& lse) {
  using A = opmath_t<T>;
  const int64_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], D = q.shape()[3];
  const int64_t keys = k.shape()[2], Dv = v.shape()[3];
  const Rows<T> Q(q), K(k), V(v), O(out);
  S* stats = lse.data<S>();
  const int64_t work = std::max<int64_t>(1, L * keys * (D + Dv));
  parallel_for(B * H, std::max<int64_t>(1, kGrainSize / work), [&](int64_t lo, int64_t hi) {
    std::vector<A> p(static_cast<size_t>(keys)), acc(static_cast<size_t>(Dv));
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      for (int64_t i = 0; i < L; ++i) {
        const int64_t n = visible(i, keys, causal);
        const T* qi = Q.at(b, h, i);
        A top = -std::numeric_limits<A>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          p[j] = A(scale) * dot<A>(qi, K.at(b, h, j), D);
          top = std::max(top, p[j]);
        }
        A sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(p[j] - top);
        const A log_sum = n ? top + std::log(sum) : -std::numeric_limits<A>::infinity();
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t j = 0; j < n; ++j) {
          const A w = std::exp(p[j] - log_sum);
          const T* vj = V.at(b, h, j);
          for (int64_t d = 0; d < Dv; ++d) acc[d] += w * A(vj[d]);
        }
        T* oi = O.at(b, h, i);
        for (int64_t d = 0; d < Dv; ++d) oi[d] = static_cast<T>(acc[d]);
        stats[bh * L + i] = static_cast<S>(log_sum);
      }
    }
  });
}

//   p = exp(scale q.k - lse);  dv += p g;  ds = p (g.v - g.out);  dq += scale ds k;  dk += scale ds
//   q
template <class T, class S>
void backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, double scale, bool causal, const Tensor& dq, const Tensor& dk,
              const Tensor& dv) {
  using A = opmath_t<T>;
  const int64_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], D = q.shape()[3];
  const int64_t keys = k.shape()[2], Dv = v.shape()[3];
  const Rows<T> G(g), Q(q), K(k), V(v), O(out), DQ(dq), DK(dk), DV(dv);
  const S* stats = lse.data<S>();
  const int64_t work = std::max<int64_t>(1, L * keys * (D + Dv));
  parallel_for(B * H, std::max<int64_t>(1, kGrainSize / work), [&](int64_t lo, int64_t hi) {
    std::vector<A> gq(static_cast<size_t>(D)), gk(static_cast<size_t>(keys * D)),
        gv(static_cast<size_t>(keys * Dv));
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      std::fill(gk.begin(), gk.end(), A(0));
      std::fill(gv.begin(), gv.end(), A(0));
      for (int64_t i = 0; i < L; ++i) {
        const T *qi = Q.at(b, h, i), *gi = G.at(b, h, i);
        const A row = dot<A>(gi, O.at(b, h, i), Dv), log_sum = A(stats[bh * L + i]);
        std::fill(gq.begin(), gq.end(), A(0));
        for (int64_t j = 0, n = visible(i, keys, causal); j < n; ++j) {
          const T *kj = K.at(b, h, j), *vj = V.at(b, h, j);
          const A p = std::exp(A(scale) * dot<A>(qi, kj, D) - log_sum);
          const A ds = A(scale) * p * (dot<A>(gi, vj, Dv) - row);
          for (int64_t d = 0; d < Dv; ++d) gv[j * Dv + d] += p * A(gi[d]);
          for (int64_t d = 0; d < D; ++d) {
            gq[d] += ds * A(kj[d]);
            gk[j * D + d] += ds * A(qi[d]);
          }
        }
        T* dqi = DQ.at(b, h, i);
        for (int64_t d = 0; d < D; ++d) dqi[d] = static_cast<T>(gq[d]);
      }
      for (int64_t j = 0; j < keys; ++j) {
        T *dkj = DK.at(b, h, j), *dvj = DV.at(b, h, j);
        for (int64_t d = 0; d < D; ++d) dkj[d] = static_cast<T>(gk[j * D + d]);
        for (int64_t d = 0; d < Dv; ++d) dvj[d] = static_cast<T>(gv[j * Dv + d]);
      }
    }
  });
}

// Query rows per block: the block's scores (rows x keys) stay in cache for the keys of a
// training sequence; fewer for very many keys, so that a block's scores (and the backward's two
// buffers of them) stay within kScoreElems a thread.
constexpr int64_t kRowBlock = 64;
constexpr int64_t kScoreElems = int64_t{1} << 20;
int64_t row_block(int64_t keys) {
  return std::clamp<int64_t>(kScoreElems / std::max<int64_t>(keys, 1), 1, kRowBlock);
}

// Matrix (b, h) of a 4-d tensor with unit stride on its last axis, as the BLAS takes it: in
// place where its row stride is a valid leading dimension, else copied densely into buf.
template <class T>
struct Matrix {
  const T* p;
  int64_t ld;
};
template <class T>
Matrix<T> matrix_of(const Rows<T>& t, int64_t b, int64_t h, int64_t rows, int64_t cols,
                    std::vector<T>& buf) {
  const T* p = t.at(b, h, 0);
  if (rows <= 1) return {p, std::max<int64_t>(cols, 1)};
  if (t.si >= cols) return {p, t.si};
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) std::copy(p + i * t.si, p + i * t.si + cols, &buf[i * cols]);
  return {buf.data(), cols};
}

// Turns block rows [i0, i0 + r) of scores q.k (r x n, leading dimension n) into probabilities
// exp(scale q.k - lse), zero where causally hidden. With `lse_in` the rows' log-sum-exps are
// given (backward); otherwise they are computed into `lse_out` (forward).
template <class T>
void probabilities(T* s, int64_t r, int64_t n, int64_t i0, int64_t keys, bool causal, T scale,
                   const T* lse_in, T* lse_out) {
  for (int64_t ii = 0; ii < r; ++ii) {
    T* row = s + ii * n;
    const int64_t vis = visible(i0 + ii, keys, causal);
    T top = -std::numeric_limits<T>::infinity();  // (the forward's: its rows' maxima)
#pragma omp simd
    for (int64_t j = 0; j < vis; ++j) row[j] *= scale;
    if (!lse_in)
      for (int64_t j = 0; j < vis; ++j) top = std::max(top, row[j]);
    // The loops run over whole vectors (up to 16 lanes past the visible keys, within the
    // row), hidden keys masked by a select: exp of a plain 0 for them, as libmvec takes its
    // slow path on -inf.
    const int64_t m = std::min(n, (vis + 15) / 16 * 16);
    if (lse_in) {
      const T log_sum = lse_in[ii];
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) {
        const T e = std::exp(j < vis ? row[j] - log_sum : T(0));
        row[j] = j < vis ? e : T(0);
      }
    } else {
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < m; ++j) {
        const T e = std::exp(j < vis ? row[j] - top : T(0));
        row[j] = j < vis ? e : T(0);
        sum += row[j];
      }
      lse_out[ii] = vis ? top + std::log(sum) : -std::numeric_limits<T>::infinity();
      const T inv = vis ? T(1) / sum : T(0);
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) row[j] *= inv;
    }
    std::fill(row + m, row + n, T(0));
  }
}

template <class T, class S>
void forward_blocked(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                     const Tensor& out, const Tensor& lse) {
  const int64_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], D = q.shape()[3];
  const int64_t keys = k.shape()[2], Dv = v.shape()[3];
  const Rows<T> Q(q), K(k), V(v), O(out);
  S* stats = lse.data<S>();
  const int64_t work = std::max<int64_t>(1, L * keys * (D + Dv));
  parallel_for(B * H, std::max<int64_t>(1, kGrainSize / work), [&](int64_t lo, int64_t hi) {
    const int64_t rb = row_block(keys);
    std::vector<T> s, o, stat(static_cast<size_t>(rb)), qb, kb, vb;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Matrix<T> qm = matrix_of(Q, b, h, L, D, qb), km = matrix_of(K, b, h, keys, D, kb),
                      vm = matrix_of(V, b, h, keys, Dv, vb);
      for (int64_t i0 = 0; i0 < L; i0 += rb) {
        const int64_t r = std::min(rb, L - i0);
        const int64_t n = causal ? std::min(i0 + r, keys) : keys;
        s.resize(static_cast<size_t>(r * std::max<int64_t>(n, 1)));
        gemm<T>(false, true, r, n, D, qm.p + i0 * qm.ld, qm.ld, km.p, km.ld, T(0), s.data(), n);
        probabilities<T>(s.data(), r, n, i0, keys, causal, T(scale), nullptr, stat.data());
        // Straight into out where its rows take a GEMM's output, else through a buffer.
        const bool direct = O.si >= Dv || r == 1;
        if (!direct) o.resize(static_cast<size_t>(r * Dv));
        T* dst = direct ? O.at(b, h, i0) : o.data();
        const int64_t ldo = direct ? std::max<int64_t>(O.si, Dv) : Dv;
        gemm<T>(false, false, r, Dv, n, s.data(), std::max<int64_t>(n, 1), vm.p, vm.ld, T(0), dst,
                ldo);
        if (!direct)
          for (int64_t ii = 0; ii < r; ++ii)
            std::copy(&o[ii * Dv], &o[ii * Dv] + Dv, O.at(b, h, i0 + ii));
        for (int64_t ii = 0; ii < r; ++ii) stats[bh * L + i0 + ii] = static_cast<S>(stat[ii]);
      }
    }
  });
}

//   p = exp(scale q.k - lse);  dv = p^T g;  ds = scale p (g.v - g.out);  dq = ds k;  dk = ds^T q
template <class T, class S>
void backward_blocked(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& out, const Tensor& lse, double scale, bool causal,
                      const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  const int64_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], D = q.shape()[3];
  const int64_t keys = k.shape()[2], Dv = v.shape()[3];
  const Rows<T> G(g), Q(q), K(k), V(v), O(out), DQ(dq), DK(dk), DV(dv);
  const S* stats = lse.data<S>();
  const int64_t work = std::max<int64_t>(1, L * keys * (D + Dv));
  parallel_for(B * H, std::max<int64_t>(1, kGrainSize / work), [&](int64_t lo, int64_t hi) {
    const int64_t rb = row_block(keys);
    std::vector<T> p, ds, gk, gv, gq, stat(static_cast<size_t>(rb)), gb, qb, kb, vb;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const Matrix<T> gm = matrix_of(G, b, h, L, Dv, gb), qm = matrix_of(Q, b, h, L, D, qb),
                      km = matrix_of(K, b, h, keys, D, kb), vm = matrix_of(V, b, h, keys, Dv, vb);
      gk.assign(static_cast<size_t>(keys * D), T(0));
      gv.assign(static_cast<size_t>(keys * Dv), T(0));
      gq.resize(static_cast<size_t>(std::min(rb, L) * D));
      for (int64_t i0 = 0; i0 < L; i0 += rb) {
        const int64_t r = std::min(rb, L - i0);
        const int64_t n = causal ? std::min(i0 + r, keys) : keys;
        if (n == 0) {
          std::fill(gq.begin(), gq.end(), T(0));
        } else {
          const T *qt = qm.p + i0 * qm.ld, *gt = gm.p + i0 * gm.ld;
          p.resize(static_cast<size_t>(r * n));
          ds.resize(static_cast<size_t>(r * n));
          for (int64_t ii = 0; ii < r; ++ii) stat[ii] = static_cast<T>(stats[bh * L + i0 + ii]);
          gemm<T>(false, true, r, n, D, qt, qm.ld, km.p, km.ld, T(0), p.data(), n);
          probabilities<T>(p.data(), r, n, i0, keys, causal, T(scale), stat.data(), nullptr);
          gemm<T>(false, true, r, n, Dv, gt, gm.ld, vm.p, vm.ld, T(0), ds.data(), n);
          for (int64_t ii = 0; ii < r; ++ii) {
            const T row = dot<T>(gt + ii * gm.ld, O.at(b, h, i0 + ii), Dv);
            T *dsi = &ds[ii * n], *pi = &p[ii * n];
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) dsi[j] = T(scale) * pi[j] * (dsi[j] - row);
          }
          gemm<T>(true, false, n, Dv, r, p.data(), n, gt, gm.ld, T(1), gv.data(), Dv);
          gemm<T>(false, false, r, D, n, ds.data(), n, km.p, km.ld, T(0), gq.data(), D);
          gemm<T>(true, false, n, D, r, ds.data(), n, qt, qm.ld, T(1), gk.data(), D);
        }
        for (int64_t ii = 0; ii < r; ++ii)
          std::copy(&gq[ii * D], &gq[ii * D] + D, DQ.at(b, h, i0 + ii));
      }
      for (int64_t j = 0; j < keys; ++j) {
        std::copy(&gk[j * D], &gk[j * D] + D, DK.at(b, h, j));
        std::copy(&gv[j * Dv], &gv[j * Dv] + Dv, DV.at(b, h, j));
      }
    }
  });
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
               const Tensor& out, const Tensor& lse) {
  dispatch_floating(q.dtype(), "flash_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>)
      forward_blocked<T, double>(q, k, v, scale, causal, out, lse);
    else if constexpr (std::is_same_v<T, float>)
      forward_blocked<T, float>(q, k, v, scale, causal, out, lse);
    else
      forward<T, float>(q, k, v, scale, causal, out, lse);
  });
}

void attention_bw(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& out, const Tensor& lse, double scale, bool causal, const Tensor& dq,
                  const Tensor& dk, const Tensor& dv) {
  dispatch_floating(q.dtype(), "flash_attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>)
      backward_blocked<T, double>(g, q, k, v, out, lse, scale, causal, dq, dk, dv);
    else if constexpr (std::is_same_v<T, float>)
      backward_blocked<T, float>(g, q, k, v, out, lse, scale, causal, dq, dk, dv);
    else
      backward<T, float>(g, q, k, v, out, lse, scale, causal, dq, dk, dv);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(attention_kernel, DeviceType::kCPU, attention);
OFL_REGISTER_KERNEL(attention_backward_kernel, DeviceType::kCPU, attention_bw);

}  // namespace ofl::internal::cpu
