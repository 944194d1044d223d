// In-place elementwise ops (add_, mul_, copy_, fill_, ...): the out-of-place dtype rules,
// version bumps, and checks against writing through leaves, views and expanded tensors.
#include <cmath>

#include "core/autograd/node.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/sbp_rules.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;
using elementwise_grad::grad_for;
using elementwise_grad::InputMeta;
using elementwise_grad::scaled;

namespace {

void check_inplace(const char* op, const Tensor& self) {
  if (!autograd::grad_enabled() || !self.requires_grad()) return;
  if (self.is_leaf())
    fail(op, "a leaf tensor of shape ", shape_str(self.shape()),
         " that requires grad is used in an in-place operation; wrap it in no_grad()");
  if (self.impl()->is_view)
    fail(op, "in-place change of a view of shape ", shape_str(self.shape()),
         " that requires grad is not supported; clone() it first");
}

// Writing through a broadcast (stride-0) view would update one element several times.
void check_no_internal_overlap(const char* op, const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.shape()[d] > 1 && self.strides()[d] == 0)
      fail(op, "the written-to tensor of shape ", shape_str(self.shape()), " with strides ",
           shape_str(self.strides()),
           " has elements sharing one memory location (an expanded view); clone() it first");
}

// Writes op(self, other) into self (same dtype rules as the out-of-place op).
void binary_into_self(const char* name, BinaryOp op, Tensor& self, const Tensor& other) {
  check_inplace(name, self);
  check_no_internal_overlap(name, self);
  Shape shape = broadcast_shapes(self.shape(), other.shape(), name);
  if (shape != self.shape())
    fail(name, "the output of shape ", shape_str(self.shape()),
         " does not match the broadcast shape ", shape_str(shape));
  DType dt = result_type(self, other);
  if (op == BinaryOp::kDiv && !is_floating(dt)) dt = DType::kFloat32;
  if ((is_floating(dt) && !is_floating(self.dtype())) ||
      (dt != DType::kBool && self.dtype() == DType::kBool))
    fail<TypeError>(name, "result type ", dtype_name(dt),
                    " can't be cast to the in-place output type ", dtype_name(self.dtype()));
  auto kernel = binary_kernel().get(self.device().type);
  if (dt == self.dtype()) {
    kernel(op, self, to_dtype(other, dt), self);
  } else {
    Tensor tmp = Tensor::empty(shape, dt, self.device());
    kernel(op, to_dtype(self, dt), to_dtype(other, dt), tmp);
    copy_kernel().get(self.device().type)(tmp, self);
  }
  self.bump_version();
}

}  // namespace

namespace {
// An in-place op on a global tensor: the same op on its shard, in its own layout.
template <class F>
bool global_inplace(const char* name, Tensor& self, const Tensor& other, std::vector<int64_t> attrs,
                    F f) {
  if (!any_global({self, other})) return false;
  std::vector<Tensor> inputs{self};
  if (other.defined()) inputs.push_back(other);
  run_global1(
      name, inputs, logical_shape(self), std::move(attrs),
      [f](const auto& l, const Shape&) {
        Tensor local = l[0];
        f(local, l.size() > 1 ? l[1] : Tensor());
        return local;
      },
      /*inplace=*/true);
  return true;
}
}  // namespace

Tensor& add_(Tensor& self, const Tensor& other, double alpha) {
  if (global_inplace("add_", self, other, {},
                     [alpha](Tensor& s, const Tensor& o) { add_(s, o, alpha); }))
    return self;
  Tensor b = scaled(other, alpha);
  bool record = autograd::needs_grad(self, b);
  binary_into_self("add_", BinaryOp::kAdd, self, b);
  if (record)
    autograd::record("add_", {self, b}, {self},
                     [mb = InputMeta(b)](const Grads& g, const Needs& n) -> Grads {
                       return {g[0], n[1] ? grad_for(g[0], mb) : Tensor()};
                     });
  return self;
}

Tensor& sub_(Tensor& self, const Tensor& other, double alpha) {
  return add_(self, other, -alpha);
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  if (global_inplace("mul_", self, other, {}, [](Tensor& s, const Tensor& o) { mul_(s, o); }))
    return self;
  bool record = autograd::needs_grad(self, other);
  Tensor before = record && other.requires_grad() ? contiguous_copy(self) : Tensor();
  binary_into_self("mul_", BinaryOp::kMul, self, other);
  if (record)
    autograd::record(
        "mul_", {self, other}, {self},
        [sb = SavedTensor(before), so = SavedTensor(other)](const Grads& g,
                                                            const Needs& n) -> Grads {
          Tensor other = so.unpack("mul_");
          return {n[0] ? mul(g[0], other) : Tensor(),
                  n[1] ? grad_for(mul(g[0], sb.unpack("mul_")), InputMeta(other)) : Tensor()};
        });
  return self;
}

Tensor& div_(Tensor& self, const Tensor& other) {
  if (global_inplace("div_", self, other, {}, [](Tensor& s, const Tensor& o) { div_(s, o); }))
    return self;
  bool record = autograd::needs_grad(self, other);
  binary_into_self("div_", BinaryOp::kDiv, self, other);
  if (record)
    autograd::record("div_", {self, other}, {self},
                     [so = SavedTensor(other), sy = SavedTensor(self, true)](
                         const Grads& g, const Needs& n) -> Grads {
                       Tensor other = so.unpack("div_");
                       Tensor ga = div(g[0], other);
                       Tensor gb;
                       if (n[1]) gb = grad_for(neg(mul(ga, sy.unpack("div_"))), InputMeta(other));
                       return {ga, gb};
                     });
  return self;
}

Tensor& copy_(Tensor& self, const Tensor& src) {
  if (global_inplace("copy_", self, src, {}, [](Tensor& s, const Tensor& o) { copy_(s, o); }))
    return self;
  check_inplace("copy_", self);
  check_no_internal_overlap("copy_", self);
  broadcast_shapes(self.shape(), src.shape(), "copy_");
  if (numel_of(broadcast_shapes(self.shape(), src.shape(), "copy_")) != self.numel())
    fail("copy_", "source of shape ", shape_str(src.shape()),
         " cannot be broadcast to the destination's shape ", shape_str(self.shape()));
  bool record = autograd::needs_grad(self, src) && is_floating(self.dtype());
  // Copy through a temporary when src overlaps self's storage.
  Tensor from = src.storage() == self.storage() ? contiguous_copy(src) : src;
  copy_kernel().get(self.device().type)(from, self);
  self.bump_version();
  if (record)
    autograd::record("copy_", {self, src}, {self},
                     [ms = InputMeta(src)](const Grads& g, const Needs& n) -> Grads {
                       return {Tensor(), n[1] ? grad_for(g[0], ms) : Tensor()};
                     });
  return self;
}

namespace {
Tensor& fill_named(const char* name, Tensor& self, double value) {
  if (global_inplace(name, self, Tensor(), {value == 0.0},
                     [name, value](Tensor& s, const Tensor&) { fill_named(name, s, value); }))
    return self;
  check_inplace(name, self);
  bool record = autograd::needs_grad(self);
  fill_kernel().get(self.device().type)(self, value);
  self.bump_version();
  // The new values are constants: a history without inputs stops the gradient here.
  if (record)
    autograd::record(name, {}, {self}, [](const Grads&, const Needs&) -> Grads { return {}; });
  return self;
}
}  // namespace

Tensor& fill_(Tensor& self, double value) {
  return fill_named("fill_", self, value);
}

Tensor& zero_(Tensor& self) {
  return fill_named("zero_", self, 0.0);
}

Tensor& clamp_(Tensor& self, std::optional<double> lo, std::optional<double> hi) {
  if (global_inplace("clamp_", self, Tensor(), {},
                     [lo, hi](Tensor& s, const Tensor&) { clamp_(s, lo, hi); }))
    return self;
  check_inplace("clamp_", self);
  if (!lo && !hi) fail("clamp_", "at least one of min and max must be given");
  double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
  bool record = autograd::needs_grad(self);
  Tensor inside;  // where the gradient passes, from the values before clamping
  if (record)
    inside = logical_and(ge(self, wrap_scalar(l, DType::kFloat64)),
                         le(self, wrap_scalar(h, DType::kFloat64)));
  unary_kernel().get(self.device().type)(UnaryOp::kClamp, self, self, l, h);
  self.bump_version();
  if (record)
    autograd::record("clamp_", {self}, {self}, [inside](const Grads& g, const Needs&) -> Grads {
      return {mul(g[0], inside)};
    });
  return self;
}

OFL_REGISTER_OPS({
    {.name = "add_", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kAddLike},
    {.name = "sub_", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kAddLike},
    {.name = "mul_", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kMulLike},
    {.name = "div_", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kDivLike},
    {.name = "copy_", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kCopy},
    {.name = "fill_",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kFill},
    {.name = "zero_",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kFill},
    {.name = "clamp_",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
});

}  // namespace ofl
