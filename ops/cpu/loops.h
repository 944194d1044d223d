// Typed elementwise loops over core/loop.h. Every element is computed by the same vectorised code,
// wherever it sits: runs of contiguous elements in place, a run's last partial vector and every
// strided run through a buffer padded to whole vectors. libmvec's vector math and libm's scalar
// functions differ in the last bit, so a tail computed one element at a time would make an
// element's value depend on its place in the loop (a shard's, a fused program's chunk's).
#pragma once
#include <algorithm>

#include "core/loop.h"

namespace ofl::internal::cpu {

// Elements of M in the widest vector (64 bytes): vectorised loops run over multiples of it.
template <class M>
inline constexpr int64_t kLanes = 64 / int64_t(sizeof(M)) > 0 ? 64 / int64_t(sizeof(M)) : 1;
// Elements a strided run or a tail is staged through at a time (a multiple of every kLanes).
inline constexpr int64_t kStage = 256;

template <class M>
inline int64_t whole_vectors(int64_t n) {
  return n - n % kLanes<M>;
}
template <class M>
inline int64_t padded(int64_t n) {
  return (n + kLanes<M> - 1) / kLanes<M> * kLanes<M>;
}

// out = f(x) elementwise; Out/In are storage types, f works on opmath values.
template <class Out, class In, class F>
void map1(const Tensor& in, const Tensor& out, F f) {
  using M = opmath_t<In>;
  auto plan = make_loop<2>(out.shape(), {&out, &in});
  run_loop<2>(plan, [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    int64_t i = 0;
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      const int64_t whole = whole_vectors<M>(n);
#pragma omp simd
      for (int64_t k = 0; k < whole; ++k) o[k] = static_cast<Out>(f(static_cast<M>(x[k])));
      i = whole;
    }
    alignas(64) M xs[kStage];
    alignas(64) Out os[kStage];
    for (; i < n; i += kStage) {
      const int64_t m = std::min(kStage, n - i), mp = padded<M>(m);
      for (int64_t k = 0; k < m; ++k)
        xs[k] = static_cast<M>(*reinterpret_cast<const In*>(p[1] + (i + k) * s[1]));
      std::fill(xs + m, xs + mp, M(0));
#pragma omp simd
      for (int64_t k = 0; k < mp; ++k) os[k] = static_cast<Out>(f(xs[k]));
      for (int64_t k = 0; k < m; ++k) *reinterpret_cast<Out*>(p[0] + (i + k) * s[0]) = os[k];
    }
  });
}

// out = v everywhere, without reading out (its memory may be uninitialised: as a bool, such a
// byte is not even a valid value to load).
template <class Out>
void fill_with(const Tensor& out, Out v) {
  auto plan = make_loop<1>(out.shape(), {&out});
  run_loop<1>(plan, [&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
    if (s[0] == sizeof(Out)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<Out*>(p[0] + i * s[0]) = v;
    }
  });
}

// out = f(a, b) elementwise with broadcasting.
template <class Out, class In, class F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  using M = opmath_t<In>;
  auto plan = make_loop<3>(out.shape(), {&out, &a, &b});
  run_loop<3>(plan, [&](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    constexpr int64_t so = sizeof(Out), si = sizeof(In);
    const int64_t whole = whole_vectors<M>(n);
    int64_t i = 0;
    if (s[0] == so && s[1] == si && s[2] == si) {
#pragma omp simd
      for (int64_t k = 0; k < whole; ++k) o[k] = static_cast<Out>(f(M(x[k]), M(y[k])));
      i = whole;
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      const M yv = M(*y);
#pragma omp simd
      for (int64_t k = 0; k < whole; ++k) o[k] = static_cast<Out>(f(M(x[k]), yv));
      i = whole;
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      const M xv = M(*x);
#pragma omp simd
      for (int64_t k = 0; k < whole; ++k) o[k] = static_cast<Out>(f(xv, M(y[k])));
      i = whole;
    }
    alignas(64) M xs[kStage], ys[kStage];
    alignas(64) Out os[kStage];
    for (; i < n; i += kStage) {
      const int64_t m = std::min(kStage, n - i), mp = padded<M>(m);
      for (int64_t k = 0; k < m; ++k) {
        xs[k] = M(*reinterpret_cast<const In*>(p[1] + (i + k) * s[1]));
        ys[k] = M(*reinterpret_cast<const In*>(p[2] + (i + k) * s[2]));
      }
      std::fill(xs + m, xs + mp, M(0));
      std::fill(ys + m, ys + mp, M(0));
#pragma omp simd
      for (int64_t k = 0; k < mp; ++k) os[k] = static_cast<Out>(f(xs[k], ys[k]));
      for (int64_t k = 0; k < m; ++k) *reinterpret_cast<Out*>(p[0] + (i + k) * s[0]) = os[k];
    }
  });
}

}  // namespace ofl::internal::cpu
