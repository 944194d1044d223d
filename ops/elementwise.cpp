// Shared pieces of the elementwise ops (ops/unary.cpp, ops/binary.cpp): PyTorch's type
// promotion, wrapped scalars and the gradient helpers.
#include "ops/elementwise.h"

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise_grad.h"
#include "ops/op_def.h"
#include "ops/shape_ops.h"

namespace ofl {

namespace elementwise_grad {
Tensor grad_for(const Tensor& g, const InputMeta& input) {
  return to_dtype(sum_to(g, input.shape), input.dtype);
}
Tensor grad_for(const Tensor& g, const TensorMeta& input) {
  return to_dtype(sum_to(g, input.shape), input.dtype);
}
Tensor scaled(const Tensor& t, double s) {
  return s == 1.0 ? t : mul(t, wrap_scalar(s, DType::kFloat64));
}
Tensor k(double v) {
  return wrap_scalar(v, DType::kFloat64);
}
}  // namespace elementwise_grad

namespace {

// 0: wrapped number, 1: 0-d tensor, 2: tensor with dims. Higher wins within a category.
int priority(const TensorMeta& t) {
  return t.wrapped ? 0 : (t.shape.empty() ? 1 : 2);
}
int category(DType t) {
  return t == DType::kBool ? 0 : (is_integral(t) ? 1 : 2);
}

}  // namespace

DType result_type(const TensorMeta& a, const TensorMeta& b) {
  int pa = priority(a), pb = priority(b);
  if (pa == pb) return promote_types(a.dtype, b.dtype);
  const TensorMeta& hi = pa > pb ? a : b;
  const TensorMeta& lo = pa > pb ? b : a;
  if (category(lo.dtype) <= category(hi.dtype)) return hi.dtype;
  // A higher-category scalar: its category's default (float32 for a Python float).
  if (lo.wrapped) return lo.dtype == DType::kFloat64 ? DType::kFloat32 : lo.dtype;
  return promote_types(hi.dtype, lo.dtype);
}

DType result_type(const Tensor& a, const Tensor& b) {
  return result_type(meta_of(a), meta_of(b));
}

Tensor wrap_scalar(double v, DType kind) {
  Tensor t = scalar_tensor(v, kind);
  t.set_wrapped_number(true);
  return t;
}

}  // namespace ofl
