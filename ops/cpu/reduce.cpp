// CPU reduction kernels over a contiguous [outer, reduce, inner] block.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double,
                                 std::conditional_t<std::is_same_v<T, bool>, int64_t, opmath_t<T>>>;

template <class A>
struct Sum {
  static A init() { return A(0); }
  static A combine(A a, A b) { return a + b; }
};
template <class A>
struct Prod {
  static A init() { return A(1); }
  static A combine(A a, A b) { return a * b; }
};
template <class A>
struct Max {
  static A init() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  }
  static A combine(A a, A b) { return (a != a || a > b) ? a : b; }
};
template <class A>
struct Min {
  static A init() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::max();
  }
  static A combine(A a, A b) { return (a != a || a < b) ? a : b; }
};

// Reduces one contiguous row; sums split into lanes so the compiler can vectorise.
template <class R, class A, class T>
A reduce_row(const T* x, int64_t n) {
  if constexpr (std::is_same_v<R, Sum<A>> && std::is_same_v<T, float>) {
    // Cascade: float lanes within blocks (fast, vectorised), blocks added in double (accurate).
    constexpr int64_t kBlock = 4096;
    A total = 0;
    for (int64_t b = 0; b < n; b += kBlock) {
      float acc = 0;
      const int64_t e = std::min(n, b + kBlock);
#pragma omp simd reduction(+ : acc)
      for (int64_t i = b; i < e; ++i) acc += x[i];
      total += acc;
    }
    return total;
  } else if constexpr (std::is_same_v<R, Sum<A>>) {
    A acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(static_cast<opmath_t<T>>(x[i]));
    return acc;
  } else {
    A acc = R::init();
    for (int64_t i = 0; i < n; ++i)
      acc = R::combine(acc, static_cast<A>(static_cast<opmath_t<T>>(x[i])));
    return acc;
  }
}

template <class R, class A, class T, class O>
void reduce_typed(const T* x, int64_t outer, int64_t red, int64_t inner, O* out) {
  if (inner == 1) {
    if (outer == 1 && red > 4 * kGrainSize) {
      // One long row: fixed chunks combined in order, so the result is deterministic.
      const int64_t chunks = std::min<int64_t>(64, red / kGrainSize);
      const int64_t per = (red + chunks - 1) / chunks;
      std::vector<A> partial(chunks, R::init());
      parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t lo = c * per, hi = std::min(red, lo + per);
          if (lo < hi) partial[c] = reduce_row<R, A>(x + lo, hi - lo);
        }
      });
      A acc = R::init();
      for (A p : partial) acc = R::combine(acc, p);
      out[0] = static_cast<O>(acc);
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(red, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o)
                     out[o] = static_cast<O>(reduce_row<R, A>(x + o * red, red));
                 });
    return;
  }
  // Reduce over rows of length `inner`: accumulate whole rows, vectorised along inner.
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(red * inner, 1));
  parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    std::vector<A> acc(inner);
    for (int64_t o = b; o < e; ++o) {
      std::fill(acc.begin(), acc.end(), R::init());
      const T* base = x + o * red * inner;
      for (int64_t r = 0; r < red; ++r) {
        const T* row = base + r * inner;
        A* a = acc.data();
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j)
          a[j] = R::combine(a[j], static_cast<A>(static_cast<opmath_t<T>>(row[j])));
      }
      O* dst = out + o * inner;
      for (int64_t j = 0; j < inner; ++j) dst[j] = static_cast<O>(acc[j]);
    }
  });
}

void reduce(ReduceOp op, const Tensor& in, int64_t outer, int64_t red, int64_t inner,
            const Tensor& out) {
  OFL_CHECK(in.is_contiguous() && out.is_contiguous());
  if (op == ReduceOp::kAll || op == ReduceOp::kAny) {
    const bool* x = in.data<bool>();
    bool* o = out.data<bool>();
    // all = product of 0/1 values, any = their sum; both right for empty inputs.
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(x);
    if (op == ReduceOp::kAll)
      return reduce_typed<Prod<int64_t>, int64_t>(bytes, outer, red, inner, o);
    return reduce_typed<Sum<int64_t>, int64_t>(bytes, outer, red, inner, o);
  }
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    using M = std::conditional_t<std::is_same_v<T, bool>, int64_t, opmath_t<T>>;
    const T* x = in.data<T>();
    T* o = out.data<T>();
    switch (op) {
      case ReduceOp::kSum:
        return reduce_typed<Sum<A>, A>(x, outer, red, inner, o);
      case ReduceOp::kProd:
        return reduce_typed<Prod<A>, A>(x, outer, red, inner, o);
      case ReduceOp::kMax:
        return reduce_typed<Max<M>, M>(x, outer, red, inner, o);
      case ReduceOp::kMin:
        return reduce_typed<Min<M>, M>(x, outer, red, inner, o);
      default:
        OFL_CHECK(false, "bad reduce op");
    }
  });
}

void arg_reduce(bool is_max, const Tensor& in, int64_t outer, int64_t red, int64_t inner,
                const Tensor& values, const Tensor& indices) {
  OFL_CHECK(in.is_contiguous());
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* x = in.data<T>();
    T* v = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    parallel_for(outer * inner, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(red, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t k = b; k < e; ++k) {
                     int64_t o = k / inner, j = k % inner;
                     const T* p = x + o * red * inner + j;
                     M best = M(p[0]);
                     int64_t bi = 0;
                     for (int64_t r = 1; r < red; ++r) {
                       M cur = M(p[r * inner]);
                       if (best != best) break;  // NaN wins
                       if (cur != cur || (is_max ? cur > best : cur < best)) {
                         best = cur;
                         bi = r;
                       }
                     }
                     v[k] = static_cast<T>(best);
                     idx[k] = bi;
                   }
                 });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(reduce_kernel, DeviceType::kCPU, reduce);
OFL_REGISTER_KERNEL(arg_reduce_kernel, DeviceType::kCPU, arg_reduce);

}  // namespace ofl::internal::cpu
