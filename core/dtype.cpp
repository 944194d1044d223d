#include "core/dtype.h"

namespace ofl::internal {

size_t itemsize(DType t) {
  static constexpr size_t sizes[kNumDTypes] = {1, 1, 1, 4, 8, 2, 2, 4, 8, 8, 16};
  return sizes[static_cast<int>(t)];
}

const char* dtype_name(DType t) {
  static constexpr const char* names[kNumDTypes] = {"bool",    "uint8",     "int8",      "int32",
                                                    "int64",   "float16",   "bfloat16",  "float32",
                                                    "float64", "complex64", "complex128"};
  return names[static_cast<int>(t)];
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  if (name == "cfloat") return DType::kComplex64;
  if (name == "cdouble") return DType::kComplex128;
  fail<TypeError>("dtype", "unknown dtype '", name, "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    const bool wide = a == DType::kComplex128 || b == DType::kComplex128 || a == DType::kFloat64 ||
                      b == DType::kFloat64;
    return wide ? DType::kComplex128 : DType::kComplex64;
  }
  if (is_floating(a) && is_floating(b)) {
    if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
    return DType::kFloat32;  // float16 with bfloat16 (or float32) gives float32
  }
  if (is_floating(a)) return a;
  if (is_floating(b)) return b;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  // uint8 with int8 is int16 in PyTorch; we have no int16, so the next wider type.
  if ((a == DType::kUInt8 && b == DType::kInt8) || (a == DType::kInt8 && b == DType::kUInt8))
    return DType::kInt32;
  return a > b ? a : b;
}

}  // namespace ofl::internal
