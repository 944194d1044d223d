// Fused attention on the CPU, one (batch, head) pair per task: each query row's scores, their
// log-sum-exp and the weighted values in one pass; backward recomputes the probabilities from
// the saved log-sum-exp (the flash-attention formulation, without its tiling).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
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

void attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
               const Tensor& out, const Tensor& lse) {
  dispatch_floating(q.dtype(), "flash_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (q.dtype() == DType::kFloat64)
      forward<T, double>(q, k, v, scale, causal, out, lse);
    else
      forward<T, float>(q, k, v, scale, causal, out, lse);
  });
}

void attention_bw(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& out, const Tensor& lse, double scale, bool causal, const Tensor& dq,
                  const Tensor& dk, const Tensor& dv) {
  dispatch_floating(q.dtype(), "flash_attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (q.dtype() == DType::kFloat64)
      backward<T, double>(g, q, k, v, out, lse, scale, causal, dq, dk, dv);
    else
      backward<T, float>(g, q, k, v, out, lse, scale, causal, dq, dk, dv);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(attention_kernel, DeviceType::kCPU, attention);
OFL_REGISTER_KERNEL(attention_backward_kernel, DeviceType::kCPU, attention_bw);

}  // namespace ofl::internal::cpu
