// Typed element-wise reductions handed to Gloo: 16-bit floats compute in float, integers wrap
// around like PyTorch's, bool sums are logical or, and max/min propagate NaN.
#include <cmath>
#include <type_traits>

#include "core/comm/gloo/gloo_impl.h"
#include "core/error.h"

namespace ofl::internal::comm::gloo_detail {
namespace {

template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
T wrap_mul(T a, T b) {
  // Promote to at least unsigned int so that uint16-sized products cannot overflow int.
  using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

template <class T>
struct Sum {
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || b;
    else if constexpr (std::is_integral_v<T>)
      return wrap_add(a, b);
    else
      return T(opmath_t<T>(a) + opmath_t<T>(b));
  }
};
template <class T>
struct Product {
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else if constexpr (std::is_integral_v<T>)
      return wrap_mul(a, b);
    else
      return T(opmath_t<T>(a) * opmath_t<T>(b));
  }
};
// x != x is the NaN test; a NaN on either side wins.
template <class T>
struct Max {
  T operator()(T a, T b) const {
    auto x = static_cast<opmath_t<T>>(a), y = static_cast<opmath_t<T>>(b);
    return (x > y || x != x) ? a : b;
  }
};
template <class T>
struct Min {
  T operator()(T a, T b) const {
    auto x = static_cast<opmath_t<T>>(a), y = static_cast<opmath_t<T>>(b);
    return (x < y || x != x) ? a : b;
  }
};

template <class T, template <class> class Op>
void apply(void* c, const void* a, const void* b, size_t n) {
  auto* pc = static_cast<T*>(c);
  const auto* pa = static_cast<const T*>(a);
  const auto* pb = static_cast<const T*>(b);
  Op<T> op;
#pragma omp simd
  for (size_t i = 0; i < n; ++i) pc[i] = op(pa[i], pb[i]);
}

}  // namespace

ReduceFn reduce_fn(DType dtype, ReduceOp op) {
  return dispatch_all(dtype, [&](auto tag) -> ReduceFn {
    using T = typename decltype(tag)::type;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        return &apply<T, Sum>;
      case ReduceOp::kProduct:
        return &apply<T, Product>;
      case ReduceOp::kMax:
        return &apply<T, Max>;
      case ReduceOp::kMin:
        return &apply<T, Min>;
    }
    OFL_CHECK(false, "bad reduce op");
    return nullptr;
  });
}

void check_reduce_op(const char* op, DType dtype, ReduceOp reduce) {
  if (reduce == ReduceOp::kAvg && !is_floating(dtype))
    fail<TypeError>(op, "avg needs a floating-point tensor, got ", dtype_name(dtype),
                    " (use sum and divide)");
}

void divide_in_place(void* data, int64_t n, DType dtype, int divisor) {
  dispatch_floating(dtype, "avg", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    auto* p = static_cast<T*>(data);
    const M d = static_cast<M>(divisor);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) p[i] = T(static_cast<M>(p[i]) / d);
  });
}

}  // namespace ofl::internal::comm::gloo_detail
