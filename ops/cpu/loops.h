// Typed elementwise loops over core/loop.h with a contiguous, vectorisable fast path.
#pragma once
#include "core/loop.h"

namespace ofl::internal::cpu {

// out = f(x) elementwise; Out/In are storage types, f works on opmath values.
template <class Out, class In, class F>
void map1(const Tensor& in, const Tensor& out, F f) {
  auto plan = make_loop<2>(out.shape(), {&out, &in});
  run_loop<2>(plan, [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<opmath_t<In>>(x[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        auto v = *reinterpret_cast<const In*>(p[1] + i * s[1]);
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            static_cast<Out>(f(static_cast<opmath_t<In>>(v)));
      }
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
    if (s[0] == so && s[1] == si && s[2] == si) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(M(x[i]), M(y[i])));
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      const M yv = M(*y);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(M(x[i]), yv));
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      const M xv = M(*x);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(xv, M(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        M xv = M(*reinterpret_cast<const In*>(p[1] + i * s[1]));
        M yv = M(*reinterpret_cast<const In*>(p[2] + i * s[2]));
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = static_cast<Out>(f(xv, yv));
      }
    }
  });
}

}  // namespace ofl::internal::cpu
