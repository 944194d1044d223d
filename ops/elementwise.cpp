// Shared pieces of the elementwise ops (ops/unary.cpp, ops/binary.cpp): PyTorch's type
// promotion, wrapped scalars and the gradient helpers.
#include "ops/elementwise.h"

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/creation.h"
#include "ops/elementwise_grad.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

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

// What type promotion looks at: the dtype, and 0: wrapped number, 1: 0-d tensor, 2: tensor with
// dims (higher wins within a category).
struct Operand {
  DType dtype;
  int priority;
  bool wrapped;
};
Operand operand(const TensorMeta& t) {
  return {t.dtype, t.wrapped ? 0 : (t.shape.empty() ? 1 : 2), t.wrapped};
}
Operand operand(const Tensor& t) {  // a global tensor's rank is its shards'
  const bool wrapped = t.is_wrapped_number();
  return {t.dtype(), wrapped ? 0 : (t.dim() == 0 ? 1 : 2), wrapped};
}
int category(DType t) {
  return t == DType::kBool ? 0 : (is_integral(t) ? 1 : (is_complex(t) ? 3 : 2));
}

DType promote(const Operand& a, const Operand& b) {
  if (a.priority == b.priority) {
    const DType t = promote_types(a.dtype, b.dtype);
    // Python numbers alone take their category's default: float32 for floats, as PyTorch's
    // torch.where(cond, 1.0, 2.0).
    return a.wrapped && b.wrapped && t == DType::kFloat64 ? DType::kFloat32 : t;
  }
  const Operand& hi = a.priority > b.priority ? a : b;
  const Operand& lo = a.priority > b.priority ? b : a;
  if (category(lo.dtype) <= category(hi.dtype)) return hi.dtype;
  // A higher-category scalar: its category's default (float32 for a Python float).
  if (lo.wrapped) return lo.dtype == DType::kFloat64 ? DType::kFloat32 : lo.dtype;
  return promote_types(hi.dtype, lo.dtype);
}

}  // namespace

DType result_type(const TensorMeta& a, const TensorMeta& b) {
  return promote(operand(a), operand(b));
}

DType result_type(const Tensor& a, const Tensor& b) {
  return promote(operand(a), operand(b));
}

Tensor wrap_scalar(double v, DType kind) {
  // A constant, not an op call: allocated and filled directly (the hot path of `x * 2`).
  Tensor t = Tensor::empty({}, kind, Device{});
  fill_kernel().get(DeviceType::kCPU)(t, v);
  t.set_wrapped_number(true);
  return t;
}

}  // namespace ofl::internal
