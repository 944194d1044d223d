// Data types, PyTorch's type promotion, and the dtype -> C++ type dispatch.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/half.h"

namespace ofl::internal {

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kComplex64,   // two float32s (real, imaginary); only layout ops and a few composites take it
  kComplex128,  // two float64s, as complex64 otherwise
};
inline constexpr int kNumDTypes = 11;

size_t itemsize(DType t);
const char* dtype_name(DType t);  // "float32", ...
DType dtype_from_name(const std::string& name);
inline bool is_floating(DType t) {
  return t >= DType::kFloat16 && t <= DType::kFloat64;
}
inline bool is_complex(DType t) {
  return t == DType::kComplex64 || t == DType::kComplex128;
}
// The dtype of a complex dtype's parts (float32 for complex64), and the complex dtype whose parts
// are the floating dtype t (float16 and bfloat16 give complex64).
inline DType complex_part_dtype(DType t) {
  return t == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32;
}
inline DType complex_dtype_of(DType t) {
  return t == DType::kFloat64 || t == DType::kComplex128 ? DType::kComplex128 : DType::kComplex64;
}
// Whether tensors of dtype t carry gradients (floating and complex).
inline bool is_differentiable(DType t) {
  return is_floating(t) || is_complex(t);
}
inline bool is_integral(DType t) {
  return t <= DType::kInt64;
}  // includes bool
// PyTorch's promote_types for two dtypes; complex with float64 or complex128 is complex128, with
// anything else complex64.
DType promote_types(DType a, DType b);
// The dtype a reduction like sum produces: integers and bool accumulate in int64.
inline DType sum_dtype(DType t) {
  return is_integral(t) ? DType::kInt64 : t;
}

template <class T>
struct TypeTag {
  using type = T;
};

// Accumulation/compute type: 16-bit floats compute in float.
template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename OpMath<T>::type;

// Calls f(TypeTag<T>{}) for the C++ type of `t`.
template <class F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::kBool:
      return f(TypeTag<bool>{});
    case DType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DType::kInt8:
      return f(TypeTag<int8_t>{});
    case DType::kInt32:
      return f(TypeTag<int32_t>{});
    case DType::kInt64:
      return f(TypeTag<int64_t>{});
    case DType::kFloat16:
      return f(TypeTag<Half>{});
    case DType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    case DType::kFloat32:
      return f(TypeTag<float>{});
    case DType::kFloat64:
      return f(TypeTag<double>{});
    case DType::kComplex64:  // the dispatcher lets complex reach only kernels that handle it
    case DType::kComplex128:
      fail<TypeError>("kernel", "no kernel takes ", dtype_name(t), " tensors here");
  }
  OFL_CHECK(false, "bad dtype");
  return f(TypeTag<float>{});
}

// Floating types only; other dtypes raise a TypeError naming the op.
template <class F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::kFloat16:
      return f(TypeTag<Half>{});
    case DType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    case DType::kFloat32:
      return f(TypeTag<float>{});
    case DType::kFloat64:
      return f(TypeTag<double>{});
    default:
      fail<TypeError>(op, "expects a floating-point tensor, got ", dtype_name(t));
  }
}

// Every dtype except bool (arithmetic on bool is rejected like PyTorch's sub/neg).
template <class F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  if (t == DType::kBool) fail<TypeError>(op, "is not supported for bool tensors");
  return dispatch_all(t, std::forward<F>(f));
}

}  // namespace ofl::internal
