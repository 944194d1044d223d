// Binary elementwise op definitions (broadcasting, PyTorch's type promotion) and where.
#include <algorithm>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/binary_def.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/masked.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using elementwise_grad::grad_for;
using elementwise_grad::k;

namespace {

struct BinaryInfo {
  const char* name;
  const SbpRule* sbp;
};

// Indexed by BinaryOp.
const BinaryInfo kBinary[] = {{"add", &elementwise_sbp::kAddLike},
                              {"sub", &elementwise_sbp::kAddLike},
                              {"mul", &elementwise_sbp::kMulLike},
                              {"div", &elementwise_sbp::kDivLike},
                              {"pow", &elementwise_sbp::kElementwise},
                              {"maximum", &elementwise_sbp::kMaximum},
                              {"minimum", &elementwise_sbp::kMinimum},
                              {"eq", &elementwise_sbp::kElementwise},
                              {"ne", &elementwise_sbp::kElementwise},
                              {"lt", &elementwise_sbp::kElementwise},
                              {"le", &elementwise_sbp::kElementwise},
                              {"gt", &elementwise_sbp::kElementwise},
                              {"ge", &elementwise_sbp::kElementwise},
                              {"logical_and", &elementwise_sbp::kElementwise},
                              {"logical_or", &elementwise_sbp::kElementwise},
                              {"logical_xor", &elementwise_sbp::kElementwise},
                              {"floor_divide", &elementwise_sbp::kElementwise},
                              {"remainder", &elementwise_sbp::kElementwise},
                              {"logaddexp", &elementwise_sbp::kElementwise},
                              {"hypot", &elementwise_sbp::kElementwise},
                              {"atan2", &elementwise_sbp::kElementwise},
                              {"copysign", &elementwise_sbp::kElementwise},
                              {"nextafter", &elementwise_sbp::kElementwise},
                              {"xlogy", &elementwise_sbp::kElementwise},
                              {"special_xlog1py", &elementwise_sbp::kElementwise},
                              {"special_zeta", &elementwise_sbp::kElementwise},
                              {"igamma", &elementwise_sbp::kElementwise},
                              {"igammac", &elementwise_sbp::kElementwise},
                              {"special_chebyshev_polynomial_t", &elementwise_sbp::kElementwise},
                              {"special_chebyshev_polynomial_u", &elementwise_sbp::kElementwise},
                              {"special_chebyshev_polynomial_v", &elementwise_sbp::kElementwise},
                              {"special_chebyshev_polynomial_w", &elementwise_sbp::kElementwise},
                              {"special_hermite_polynomial_h", &elementwise_sbp::kElementwise},
                              {"special_hermite_polynomial_he", &elementwise_sbp::kElementwise},
                              {"special_laguerre_polynomial_l", &elementwise_sbp::kElementwise},
                              {"special_legendre_polynomial_p", &elementwise_sbp::kElementwise},
                              {"fmod", &elementwise_sbp::kElementwise},
                              {"fmax", &elementwise_sbp::kElementwise},
                              {"fmin", &elementwise_sbp::kElementwise},
                              {"gcd", &elementwise_sbp::kElementwise},
                              {"lcm", &elementwise_sbp::kElementwise},
                              {"bitwise_and", &elementwise_sbp::kElementwise},
                              {"bitwise_or", &elementwise_sbp::kElementwise},
                              {"bitwise_xor", &elementwise_sbp::kElementwise},
                              {"bitwise_left_shift", &elementwise_sbp::kElementwise},
                              {"bitwise_right_shift", &elementwise_sbp::kElementwise},
                              {"gelu_backward", &elementwise_sbp::kActivationGrad},
                              {"gelu_tanh_backward", &elementwise_sbp::kActivationGrad},
                              {"silu_backward", &elementwise_sbp::kActivationGrad},
                              {"sigmoid_backward", &elementwise_sbp::kActivationGrad},
                              {"tanh_backward", &elementwise_sbp::kActivationGrad}};

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::kEq && op <= BinaryOp::kLogicalXor;
}

// The ops that compute in floating point (integers promote to float32).
bool needs_float(BinaryOp op) {
  return op == BinaryOp::kDiv || (op >= BinaryOp::kLogAddExp && op <= BinaryOp::kLegendreP) ||
         op >= BinaryOp::kGeluGrad;
}

// The ops defined on integers only (and bool for and, or and xor).
bool integers_only(BinaryOp op) {
  return op >= BinaryOp::kGcd && op <= BinaryOp::kBitwiseRightShift;
}

// The dtype the kernel computes in.
DType compute_dtype(BinaryOp op, const TensorMeta& a, const TensorMeta& b) {
  DType dt = result_type(a, b);
  return needs_float(op) && !is_floating(dt) ? DType::kFloat32 : dt;
}

std::vector<TensorMeta> infer_binary(BinaryOp op, const InferArgs& a) {
  const TensorMeta &x = a.in[0], &y = a.in[1];
  Device device = common_device(a);
  Shape shape = broadcast_shapes(x.shape, y.shape, a.op);
  DType dt = compute_dtype(op, x, y);
  if (integers_only(op) && is_floating(dt))
    fail<TypeError>(a.op, "is only defined for integer and bool tensors, got ", x.str(), " and ",
                    y.str());
  const bool bool_ok = op == BinaryOp::kBitwiseAnd || op == BinaryOp::kBitwiseOr ||
                       op == BinaryOp::kBitwiseXor || op == BinaryOp::kAdd ||
                       op == BinaryOp::kMul || op == BinaryOp::kMaximum ||
                       op == BinaryOp::kMinimum || is_comparison(op) || needs_float(op);
  if (dt == DType::kBool && !bool_ok)
    fail<TypeError>(a.op, "is not supported for bool tensors ", x.str(), " and ", y.str());
  return single_output(std::move(shape), is_comparison(op) ? DType::kBool : dt, device);
}

// Integer floor division and remainder by zero raise on the CPU, as in PyTorch (a CUDA kernel
// cannot raise: its scalar math gives 0 there).
void check_no_zero_divisor(BinaryOp op, const Tensor& b, DType dt) {
  if (is_floating(dt) ||
      (op != BinaryOp::kFloorDiv && op != BinaryOp::kRemainder && op != BinaryOp::kFmod) ||
      b.device().type != DeviceType::kCPU)
    return;
  const Tensor d = contiguous_local(b);
  const bool zero = dispatch_all(d.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = d.data<T>();
    return std::find(p, p + d.numel(), T(0)) != p + d.numel();
  });
  if (zero)
    fail(kBinary[static_cast<int>(op)].name, "ZeroDivisionError: integer division by zero (",
         b.str(), " holds a 0)");
}

void compute_binary(BinaryOp op, const ComputeArgs& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  DType dt = is_comparison(op) ? result_type(a, b) : c.out[0].dtype();
  if (!is_comparison(op)) check_no_zero_divisor(op, b, dt);
  binary_kernel().get(c.out[0].device().type)(op, converted(a, dt), converted(b, dt), c.out[0]);
}

}  // namespace

OpDef binary_def(BinaryOp op, uint8_t saves, BinaryGrad grad) {
  const BinaryInfo& info = kBinary[static_cast<int>(op)];
  OpDef def{.name = info.name, .num_inputs = 2, .cost = elementwise_cost, .sbp = info.sbp};
  def.infer = [op](const InferArgs& a) { return infer_binary(op, a); };
  def.compute = [op](const ComputeArgs& c) { compute_binary(op, c); };
  def.saves = saves;
  def.differentiable = grad != nullptr;
  if (grad) def.backward = grad;
  if (op < BinaryOp::kGeluGrad && op != BinaryOp::kPow) def.api = {binary_api(info.name)};
  // mul and div through their front end, which sends complex operands to complex_binary.
  if (op == BinaryOp::kMul || op == BinaryOp::kDiv)
    def.api[0].call = [op](const CallArgs& a) { return binary_op(op, a.tensor(0), a.tensor(1)); };
  // max(input, other) and min(input, other): the overloads of max(input, dim) taking a tensor.
  if (!is_comparison(op) && !integers_only(op))
    def.elementwise = [op](const Attrs&, ElementwiseStep& step) {
      step = {ElementwiseStep::kBinary, static_cast<int32_t>(op)};
      return true;
    };
  if (op == BinaryOp::kMaximum) def.api.push_back({"max(Tensor input, Tensor other) -> Tensor"});
  if (op == BinaryOp::kMinimum) def.api.push_back({"min(Tensor input, Tensor other) -> Tensor"});
  return def;
}

std::vector<Tensor> both(const BackwardArgs& b, const Tensor& ga, const Tensor& gb) {
  return {b.needs[0] ? grad_for(ga, b.in_meta[0]) : Tensor(),
          b.needs[1] ? grad_for(gb, b.in_meta[1]) : Tensor()};
}

namespace {

// f''(a) in ops, for the fused activation backward f'(a) * g (a is x, or the output y for
// sigmoid and tanh, where f' is written in y).
Tensor second_derivative(BinaryOp op, const Tensor& a) {
  constexpr double kInvSqrt2Pi = 0.3989422804014327, kSqrt2OverPi = 0.7978845608028654;
  constexpr double kCubic = 0.044715;
  switch (op) {
    case BinaryOp::kGeluGrad:  // phi(x) (2 - x^2)
      return mul(mul(exp(mul(square(a), k(-0.5))), k(kInvSqrt2Pi)), sub(k(2.0), square(a)));
    case BinaryOp::kGeluTanhGrad: {  // u = c (x + 0.044715 x^3), t = tanh(u)
      const Tensor t = tanh(mul(add(a, mul(mul(square(a), a), k(kCubic))), k(kSqrt2OverPi)));
      const Tensor du = mul(add(mul(square(a), k(3 * kCubic)), k(1.0)), k(kSqrt2OverPi));
      // (1 - t^2) (u' - x t u'^2 + 3 c 0.044715 x^2)
      const Tensor inner =
          add(sub(du, mul(mul(a, t), square(du))), mul(square(a), k(3 * kSqrt2OverPi * kCubic)));
      return mul(sub(k(1.0), square(t)), inner);
    }
    case BinaryOp::kSiluGrad: {  // s (1 - s) (2 + x (1 - 2 s))
      const Tensor s = sigmoid(a);
      return mul(mul(s, sub(k(1.0), s)), add(k(2.0), mul(a, sub(k(1.0), mul(s, k(2.0))))));
    }
    case BinaryOp::kSigmoidGradFromOutput:  // d/dy y (1 - y)
      return sub(k(1.0), mul(a, k(2.0)));
    case BinaryOp::kTanhGradFromOutput:  // d/dy (1 - y^2)
      return mul(a, k(-2.0));
    default:
      OFL_CHECK(false, "no second derivative for binary op ", static_cast<int>(op));
  }
}

// The backward of f'(a) * g: f''(a) g gg for a, and the op itself on gg for g.
template <BinaryOp op>
std::vector<Tensor> activation_grad(const BackwardArgs& b) {
  const Tensor &a = b.in[0], &g = b.in[1], &gg = b.grads[0];
  return both(b, b.needs[0] ? mul(mul(second_derivative(op, a), g), gg) : Tensor(),
              b.needs[1] ? binary_op(op, a, gg) : Tensor());
}

// maximum/minimum: the gradient goes to the selected input, split evenly on ties.
std::vector<Tensor> extremum_grad(const BackwardArgs& b, bool is_max) {
  const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
  Tensor tie = mul(eq(x, y), k(0.5));
  Tensor x_wins = add(is_max ? gt(x, y) : lt(x, y), tie);
  Tensor y_wins = add(is_max ? lt(x, y) : gt(x, y), tie);
  return {b.needs[0] ? grad_for(mul(g, x_wins), b.in_meta[0]) : Tensor(),
          b.needs[1] ? grad_for(mul(g, y_wins), b.in_meta[1]) : Tensor()};
}

const uint8_t kX = kSaveInputs, kXY = kSaveInputs | kSaveOutputs;

// add(input, other, alpha) and sub: other scaled by alpha.
Api alpha_api(const char* schema, Tensor (*fn)(const Tensor&, const Tensor&, double)) {
  return {schema, [fn](const CallArgs& a) { return fn(a.tensor(0), a.tensor(1), a.number(2)); }};
}

OFL_REGISTER_OPS({
    with_api({alpha_api("add(Tensor|Number input, Tensor|Number other, float alpha=1) -> Tensor",
                        &add)},
             binary_def(BinaryOp::kAdd, kSaveNone,
                        [](const BackwardArgs& b) { return both(b, b.grads[0], b.grads[0]); })),
    with_api(
        {alpha_api("sub(Tensor|Number input, Tensor|Number other, float alpha=1) -> Tensor", &sub)},
        binary_def(BinaryOp::kSub, kSaveNone,
                   [](const BackwardArgs& b) { return both(b, b.grads[0], neg(b.grads[0])); })),
    binary_def(BinaryOp::kMul, kX,
               [](const BackwardArgs& b) {
                 const Tensor& g = b.grads[0];
                 return both(b, b.needs[0] ? mul(g, b.in[1]) : Tensor(),
                             b.needs[1] ? mul(g, b.in[0]) : Tensor());
               }),
    binary_def(BinaryOp::kDiv, kX,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
                 return both(b, b.needs[0] ? div(g, y) : Tensor(),
                             b.needs[1] ? neg(div(mul(g, x), mul(y, y))) : Tensor());
               }),
    under_autocast(Autocast::kFloat32,
                   with_api({{"pow(Tensor|Number input, Tensor|Number exponent) -> Tensor",
                              [](const CallArgs& a) { return pow(a.tensor(0), a.tensor(1)); }}},
                            binary_def(BinaryOp::kPow, kXY,
                                       [](const BackwardArgs& b) {
                                         const Tensor &x = b.in[0], &e = b.in[1], &y = b.out[0],
                                                      &g = b.grads[0];
                                         Tensor gx, ge;
                                         if (b.needs[0]) gx = mul(g, mul(e, pow(x, sub(e, k(1)))));
                                         // d/de x^e = x^e log x, taken as 0 where x == 0 (PyTorch's
                                         // convention).
                                         if (b.needs[1])
                                           ge = mul(g, mul(y, where(eq(x, k(0)), zeros_like(y),
                                                                    log(x))));
                                         return both(b, gx, ge);
                                       }))),
    binary_def(BinaryOp::kMaximum, kX,
               [](const BackwardArgs& b) { return extremum_grad(b, true); }),
    binary_def(BinaryOp::kMinimum, kX,
               [](const BackwardArgs& b) { return extremum_grad(b, false); }),
    binary_def(BinaryOp::kEq),
    binary_def(BinaryOp::kNe),
    binary_def(BinaryOp::kLt),
    binary_def(BinaryOp::kLe),
    binary_def(BinaryOp::kGt),
    binary_def(BinaryOp::kGe),
    binary_def(BinaryOp::kLogicalAnd),
    binary_def(BinaryOp::kLogicalOr),
    binary_def(BinaryOp::kLogicalXor),
    binary_def(BinaryOp::kFloorDiv),
    // d/dy remainder(x, y) = -floor(x / y) (PyTorch's).
    binary_def(BinaryOp::kRemainder, kSaveInputs,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
                 return both(b, g, b.needs[1] ? neg(mul(g, floor(div(x, y)))) : Tensor());
               }),
    // d/dx = exp(x - out) (the softmax weight of x); d/dy likewise.
    binary_def(BinaryOp::kLogAddExp, kXY,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.in[1], &out = b.out[0], &g = b.grads[0];
                 return both(b, b.needs[0] ? mul(g, exp(sub(x, out))) : Tensor(),
                             b.needs[1] ? mul(g, exp(sub(y, out))) : Tensor());
               }),
    // d/dx = x / out, d/dy = y / out (NaN at the origin, as in PyTorch).
    binary_def(BinaryOp::kHypot, kXY,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.in[1], &out = b.out[0], &g = b.grads[0];
                 return both(b, b.needs[0] ? mul(g, div(x, out)) : Tensor(),
                             b.needs[1] ? mul(g, div(y, out)) : Tensor());
               }),
    // The fused backward of activations: f'(a) * grad in one pass, differentiable in turn.
    binary_def(BinaryOp::kGeluGrad, kSaveInputs, activation_grad<BinaryOp::kGeluGrad>),
    binary_def(BinaryOp::kGeluTanhGrad, kSaveInputs, activation_grad<BinaryOp::kGeluTanhGrad>),
    binary_def(BinaryOp::kSiluGrad, kSaveInputs, activation_grad<BinaryOp::kSiluGrad>),
    binary_def(BinaryOp::kSigmoidGradFromOutput, kSaveInputs,
               activation_grad<BinaryOp::kSigmoidGradFromOutput>),
    binary_def(BinaryOp::kTanhGradFromOutput, kSaveInputs,
               activation_grad<BinaryOp::kTanhGradFromOutput>),
    {.name = "where",
     .num_inputs = 3,
     .cost = elementwise_cost,
     .sbp = &elementwise_sbp::kElementwise,
     .infer = [](const InferArgs& a) -> std::vector<TensorMeta> {
       const TensorMeta &c = a.in[0], &x = a.in[1], &y = a.in[2];
       if (c.dtype != DType::kBool)
         fail<TypeError>(a.op, "condition must be a bool tensor, got ", c.str());
       Device device = common_device(a);
       Shape shape = broadcast_shapes(broadcast_shapes(c.shape, x.shape, a.op), y.shape, a.op);
       return single_output(std::move(shape), result_type(x, y), device);
     },
     .compute =
         [](const ComputeArgs& c) {
           const Tensor& out = c.out[0];
           where_kernel().get(out.device().type)(c.in[0], converted(c.in[1], out.dtype()),
                                                 converted(c.in[2], out.dtype()), out);
         },
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       const Tensor &c = b.in[0], &g = b.grads[0];
       Tensor z = zeros_like(g);
       return {Tensor(), b.needs[1] ? grad_for(where(c, g, z), b.in_meta[1]) : Tensor(),
               b.needs[2] ? grad_for(where(c, z, g), b.in_meta[2]) : Tensor()};
     },
     .saves = kSaveInputs,
     .elementwise =
         [](const Attrs&, ElementwiseStep& step) {
           step = {ElementwiseStep::kWhere};
           return true;
         },
     .api = {{"where(Tensor condition, Tensor|Number input, Tensor|Number other) -> Tensor",
              nullptr, kFunction},
             {"where(Tensor input, Tensor condition, Tensor|Number other) -> Tensor",
              [](const CallArgs& a) { return where(a.tensor(1), a.tensor(0), a.tensor(2)); },
              kMethod}}},
    {.name = "lerp",  // input + weight * (end - input)
     .num_inputs = 3,
     .cost = elementwise_cost,
     .api = {{"lerp(Tensor input, Tensor end, Tensor|Number weight) -> Tensor", call_front<lerp>()},
             {"lerp_(Tensor input, Tensor end, Tensor|Number weight) -> Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return copy_(self, lerp(self, a.tensor(1), a.tensor(2)));
              },
              kMethod}}},
    {.name = "addcmul",  // input + value * tensor1 * tensor2 (optimizers' moment updates)
     .num_inputs = 3,
     .cost = elementwise_cost,
     .api = {{"addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1) -> Tensor",
              [](const CallArgs& a) {
                return add(a.tensor(0), mul(a.tensor(1), a.tensor(2)), a.scalar(3));
              }},
             {"addcmul_(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1) -> "
              "Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return add_(self, mul(a.tensor(1), a.tensor(2)), a.scalar(3));
              },
              kMethod}}},
    {.name = "addcdiv",  // input + value * tensor1 / tensor2
     .num_inputs = 3,
     .cost = elementwise_cost,
     .api = {{"addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1) -> Tensor",
              [](const CallArgs& a) {
                return add(a.tensor(0), div(a.tensor(1), a.tensor(2)), a.scalar(3));
              }},
             {"addcdiv_(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value=1) -> "
              "Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return add_(self, div(a.tensor(1), a.tensor(2)), a.scalar(3));
              },
              kMethod}}},
    {.name = "masked_fill",  // where(mask, value, x)
     .num_inputs = 3,
     .cost = elementwise_cost,
     .api = {{"masked_fill(Tensor input, Tensor mask, Tensor|Number value) -> Tensor",
              [](const CallArgs& a) {
                // Out of place, the input broadcasts with the mask (PyTorch's).
                const Tensor& x = a.tensor(0);
                const Shape both =
                    broadcast_shapes(meta_of(x).shape, meta_of(a.tensor(1)).shape, "masked_fill");
                return masked_fill(both == meta_of(x).shape ? x : expand(x, both), a.tensor(1),
                                   a.tensor(2));
              }},
             {"masked_fill_(Tensor input, Tensor mask, Tensor|Number value) -> Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return masked_fill_(self, a.tensor(1), a.tensor(2));
              },
              kMethod}}},
});

const OpDef& binary_def_of(BinaryOp op) {
  static const auto defs = [] {
    std::vector<const OpDef*> v;
    for (const BinaryInfo& info : kBinary) v.push_back(&op_def(info.name));
    return v;
  }();
  return *defs[static_cast<size_t>(op)];
}

}  // namespace

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (op <= BinaryOp::kDiv && (is_complex(a.dtype()) || is_complex(b.dtype())))
    return complex_binary(op, a, b);
  return dispatch1(binary_def_of(op), {a, b});
}

// add_, sub_, mul_, div_: the in-place forms, registered once their bases are (same file).
OFL_REGISTER_OPS({
    with_api({{"add_(Tensor input, Tensor|Number other, float alpha=1) -> Tensor",
               [](const CallArgs& a) {
                 Tensor self = a.tensor(0);
                 return add_(self, a.tensor(1), a.number(2));
               },
               kMethod}},
             inplace_variant("add_", op_def("add"))),
    with_api({{"sub_(Tensor input, Tensor|Number other, float alpha=1) -> Tensor",
               [](const CallArgs& a) {
                 Tensor self = a.tensor(0);
                 return sub_(self, a.tensor(1), a.number(2));
               },
               kMethod}},
             inplace_variant("sub_", op_def("sub"))),
    with_api({{"mul_(Tensor input, Tensor|Number other) -> Tensor", nullptr, kMethod}},
             inplace_variant("mul_", op_def("mul"))),
    with_api({{"div_(Tensor input, Tensor|Number other) -> Tensor", nullptr, kMethod}},
             inplace_variant("div_", op_def("div"))),
});

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  return binary_op(BinaryOp::kAdd, a, elementwise_grad::scaled(b, alpha));
}
Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  return binary_op(BinaryOp::kSub, a, elementwise_grad::scaled(b, alpha));
}

#define OFL_BINARY_FRONT_END(fn, op)            \
  Tensor fn(const Tensor& a, const Tensor& b) { \
    return binary_op(BinaryOp::op, a, b);       \
  }
OFL_BINARY_FRONT_END(mul, kMul)
OFL_BINARY_FRONT_END(div, kDiv)
OFL_BINARY_FRONT_END(maximum, kMaximum)
OFL_BINARY_FRONT_END(minimum, kMinimum)
OFL_BINARY_FRONT_END(floor_divide, kFloorDiv)
OFL_BINARY_FRONT_END(remainder, kRemainder)
OFL_BINARY_FRONT_END(logaddexp, kLogAddExp)
OFL_BINARY_FRONT_END(hypot, kHypot)
OFL_BINARY_FRONT_END(bitwise_and, kBitwiseAnd)
OFL_BINARY_FRONT_END(bitwise_or, kBitwiseOr)
OFL_BINARY_FRONT_END(bitwise_xor, kBitwiseXor)
OFL_BINARY_FRONT_END(bitwise_left_shift, kBitwiseLeftShift)
OFL_BINARY_FRONT_END(bitwise_right_shift, kBitwiseRightShift)
OFL_BINARY_FRONT_END(eq, kEq)
OFL_BINARY_FRONT_END(ne, kNe)
OFL_BINARY_FRONT_END(lt, kLt)
OFL_BINARY_FRONT_END(le, kLe)
OFL_BINARY_FRONT_END(gt, kGt)
OFL_BINARY_FRONT_END(ge, kGe)
OFL_BINARY_FRONT_END(logical_and, kLogicalAnd)
OFL_BINARY_FRONT_END(logical_or, kLogicalOr)
OFL_BINARY_FRONT_END(logical_xor, kLogicalXor)
#undef OFL_BINARY_FRONT_END

Tensor pow(const Tensor& a, const Tensor& b) {
  // A number exponent that keeps a's dtype (an int, or a float for a floating a) takes the
  // scalar kernel, as PyTorch's pow(Tensor, Scalar) does.
  if (b.is_wrapped_number() && !a.is_wrapped_number() && b.dtype() != DType::kBool) {
    const bool keeps = is_floating(b.dtype()) ? is_floating(a.dtype()) : a.dtype() != DType::kBool;
    if (keeps) return pow(a, b.item<double>());
  }
  return binary_op(BinaryOp::kPow, a, b);
}

Tensor lerp(const Tensor& input, const Tensor& end, const Tensor& weight) {
  return add(input, mul(weight, sub(end, input)));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  static const OpDef& def = op_def("where");
  return dispatch1(def, {cond, a, b});
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  if (mask.dtype() != DType::kBool)
    fail<TypeError>("masked_fill", "mask must be a bool tensor, got ", mask.str());
  if (value.dim() != 0)
    fail("masked_fill", "value must be a 0-d tensor or a number, got shape ",
         shape_str(value.shape()));
  Tensor v = to_dtype(value, x.dtype());
  v.set_wrapped_number(true);
  Tensor out = where(mask, v, x);
  if (meta_of(out).shape != meta_of(x).shape)
    fail("masked_fill", "mask of shape ", shape_str(meta_of(mask).shape),
         " is not broadcastable to the input's shape ", shape_str(meta_of(x).shape));
  return out;
}

}  // namespace ofl::internal
