// Elementwise op definitions: dtype rules, broadcasting and backward rules.
#include "ops/elementwise.h"

#include <cmath>

#include "core/autograd/node.h"
#include "ops/creation.h"
#include "ops/elementwise_grad.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/reduce.h"
#include "ops/sbp_rules.h"
#include "ops/shape_ops.h"

namespace ofl {

using elementwise_grad::grad_for;
using elementwise_grad::InputMeta;
using elementwise_grad::scaled;

namespace elementwise_grad {
Tensor grad_for(const Tensor& g, const InputMeta& input) {
  return to_dtype(sum_to(g, input.shape), input.dtype);
}
Tensor scaled(const Tensor& t, double s) {
  return s == 1.0 ? t : mul(t, wrap_scalar(s, DType::kFloat64));
}
}  // namespace elementwise_grad

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;

namespace {

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::kEq && op <= BinaryOp::kLogicalXor;
}

const char* binary_name(BinaryOp op) {
  static const char* names[] = {"add",
                                "sub",
                                "mul",
                                "div",
                                "pow",
                                "maximum",
                                "minimum",
                                "eq",
                                "ne",
                                "lt",
                                "le",
                                "gt",
                                "ge",
                                "logical_and",
                                "logical_or",
                                "logical_xor",
                                "floor_divide",
                                "remainder",
                                "gelu_backward",
                                "gelu_backward",
                                "silu_backward",
                                "sigmoid_backward",
                                "tanh_backward"};
  return names[static_cast<int>(op)];
}

// 0: wrapped number, 1: 0-d tensor, 2: tensor with dims. Higher wins within a category.
int priority(const Tensor& t) {
  return t.is_wrapped_number() ? 0 : (t.dim() == 0 ? 1 : 2);
}
int category(DType t) {
  return t == DType::kBool ? 0 : (is_integral(t) ? 1 : 2);
}

// Floating-only unary ops turn integer inputs into the default float dtype.
bool promotes_int_to_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kRelu:
    case UnaryOp::kSign:
    case UnaryOp::kSquare:
    case UnaryOp::kClamp:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kPowScalar:
    case UnaryOp::kLogicalNot:
      return false;
    default:
      return true;
  }
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  int pa = priority(a), pb = priority(b);
  if (pa == pb) return promote_types(a.dtype(), b.dtype());
  const Tensor& hi = pa > pb ? a : b;
  const Tensor& lo = pa > pb ? b : a;
  if (category(lo.dtype()) <= category(hi.dtype())) return hi.dtype();
  // A higher-category scalar: its category's default (float32 for a Python float).
  if (lo.is_wrapped_number()) return lo.dtype() == DType::kFloat64 ? DType::kFloat32 : lo.dtype();
  return promote_types(hi.dtype(), lo.dtype());
}

Tensor wrap_scalar(double v, DType kind) {
  Tensor t = scalar_tensor(v, kind);
  t.set_wrapped_number(true);
  return t;
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  if (x.is_global())
    return run_global1("to", {x}, logical_shape(x), {is_floating(dtype)},
                       [dtype](const auto& l, const Shape&) { return to_dtype(l[0], dtype); });
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  copy_kernel().get(x.device().type)(x, out);
  if (autograd::needs_grad(x) && is_floating(dtype)) {
    DType from = x.dtype();
    autograd::record("to", {x}, {out}, [from](const Grads& g, const Needs&) -> Grads {
      return {to_dtype(g[0], from)};
    });
  }
  return out;
}

Tensor contiguous_copy(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_kernel().get(x.device().type)(x, out);
  return out;
}

Tensor unary_op(UnaryOp op, const Tensor& x, double a, double b) {
  require_local("unary", x);
  DType dt = x.dtype();
  if (promotes_int_to_float(op) && !is_floating(dt)) dt = DType::kFloat32;
  if (op == UnaryOp::kLogicalNot) {
    Tensor out = Tensor::empty(x.shape(), DType::kBool, x.device());
    unary_kernel().get(x.device().type)(op, x, out, a, b);
    return out;
  }
  if (dt == DType::kBool && op != UnaryOp::kAbs && op != UnaryOp::kRelu)
    fail<TypeError>("unary", "this op is not supported for bool tensors of shape ",
                    shape_str(x.shape()));
  Tensor in = to_dtype(x, dt);
  if (dt == DType::kBool) return clone(in);
  Tensor out = Tensor::empty(x.shape(), dt, x.device());
  unary_kernel().get(x.device().type)(op, in, out, a, b);
  return out;
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  if (any_global({a, b}))
    return run_global1(name, {a, b}, broadcast_shapes(logical_shape(a), logical_shape(b), name), {},
                       [op](const auto& l, const Shape&) { return binary_op(op, l[0], l[1]); });
  if (a.device() != b.device())
    fail(name, "tensors are on different devices: ", a.device().str(), " and ", b.device().str());
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  DType compute = result_type(a, b);
  bool needs_float = op == BinaryOp::kDiv || (op >= BinaryOp::kGeluGrad);
  if (needs_float && !is_floating(compute)) compute = DType::kFloat32;
  if (compute == DType::kBool && (op == BinaryOp::kSub || op == BinaryOp::kPow ||
                                  op == BinaryOp::kFloorDiv || op == BinaryOp::kRemainder))
    fail<TypeError>(name, "is not supported for bool tensors ", a.str(), " and ", b.str());
  DType out_dtype = is_comparison(op) ? DType::kBool : compute;
  Tensor out = Tensor::empty(shape, out_dtype, a.device());
  binary_kernel().get(a.device().type)(op, to_dtype(a, compute), to_dtype(b, compute), out);
  return out;
}

// --- unary ops with their backward rules ---

namespace {

template <class Backward>
Tensor unary_with_grad(const char* name, UnaryOp op, const Tensor& x, Backward bw, double a = 0,
                       double b = 0) {
  if (x.is_global())
    return run_global1(name, {x}, logical_shape(x), {}, [=](const auto& l, const Shape&) {
      return unary_with_grad(name, op, l[0], bw, a, b);
    });
  Tensor out = unary_op(op, x, a, b);
  if (autograd::needs_grad(x) && is_floating(out.dtype())) {
    autograd::record(name, {x}, {out},
                     [bw, sx = SavedTensor(x), so = SavedTensor(out, true),
                      name = std::string(name)](const Grads& g, const Needs&) -> Grads {
                       return {bw(g[0], sx.unpack(name), so.unpack(name))};
                     });
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  return unary_with_grad("neg", UnaryOp::kNeg, x,
                         [](const Tensor& g, const Tensor&, const Tensor&) { return neg(g); });
}
Tensor abs(const Tensor& x) {
  return unary_with_grad(
      "abs", UnaryOp::kAbs, x,
      [](const Tensor& g, const Tensor& x, const Tensor&) { return mul(g, sign(x)); });
}
Tensor exp(const Tensor& x) {
  return unary_with_grad("exp", UnaryOp::kExp, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, y); });
}
Tensor log(const Tensor& x) {
  return unary_with_grad("log", UnaryOp::kLog, x,
                         [](const Tensor& g, const Tensor& x, const Tensor&) { return div(g, x); });
}
Tensor sqrt(const Tensor& x) {
  return unary_with_grad("sqrt", UnaryOp::kSqrt, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return div(g, mul(y, wrap_scalar(2.0, DType::kFloat64)));
                         });
}
Tensor rsqrt(const Tensor& x) {
  return unary_with_grad("rsqrt", UnaryOp::kRsqrt, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return mul(g, mul(pow(y, 3.0), wrap_scalar(-0.5, DType::kFloat64)));
                         });
}
Tensor sin(const Tensor& x) {
  return unary_with_grad(
      "sin", UnaryOp::kSin, x,
      [](const Tensor& g, const Tensor& x, const Tensor&) { return mul(g, cos(x)); });
}
Tensor cos(const Tensor& x) {
  return unary_with_grad(
      "cos", UnaryOp::kCos, x,
      [](const Tensor& g, const Tensor& x, const Tensor&) { return neg(mul(g, sin(x))); });
}
Tensor tanh(const Tensor& x) {
  return unary_with_grad("tanh", UnaryOp::kTanh, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return binary_op(BinaryOp::kTanhGradFromOutput, y, g);
                         });
}
Tensor sigmoid(const Tensor& x) {
  return unary_with_grad("sigmoid", UnaryOp::kSigmoid, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return binary_op(BinaryOp::kSigmoidGradFromOutput, y, g);
                         });
}
Tensor relu(const Tensor& x) {
  return unary_with_grad("relu", UnaryOp::kRelu, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return mul(g, gt(y, wrap_scalar(0, DType::kInt64)));
                         });
}
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    fail("gelu", "approximate must be 'none' or 'tanh', got '", approximate, "'");
  bool use_tanh = approximate == "tanh";
  return unary_with_grad("gelu", use_tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu, x,
                         [use_tanh](const Tensor& g, const Tensor& x, const Tensor&) {
                           return binary_op(
                               use_tanh ? BinaryOp::kGeluTanhGrad : BinaryOp::kGeluGrad, x, g);
                         });
}
Tensor silu(const Tensor& x) {
  return unary_with_grad("silu", UnaryOp::kSilu, x,
                         [](const Tensor& g, const Tensor& x, const Tensor&) {
                           return binary_op(BinaryOp::kSiluGrad, x, g);
                         });
}
Tensor pow(const Tensor& x, double p) {
  return unary_with_grad(
      "pow", UnaryOp::kPowScalar, x,
      [p](const Tensor& g, const Tensor& x, const Tensor&) {
        if (p == 0.0) return zeros_like(g);
        return mul(g, mul(pow(x, p - 1.0), wrap_scalar(p, DType::kFloat64)));
      },
      p);
}
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  if (!lo && !hi) fail("clamp", "at least one of min and max must be given");
  double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
  return unary_with_grad(
      "clamp", UnaryOp::kClamp, x,
      [l, h](const Tensor& g, const Tensor& x, const Tensor&) {
        Tensor inside = logical_and(ge(x, wrap_scalar(l, DType::kFloat64)),
                                    le(x, wrap_scalar(h, DType::kFloat64)));
        return mul(g, inside);
      },
      l, h);
}

namespace {
Tensor zero_grad_unary(const char* name, UnaryOp op, const Tensor& x) {
  return unary_with_grad(
      name, op, x, [](const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); });
}
}  // namespace

Tensor sign(const Tensor& x) {
  return zero_grad_unary("sign", UnaryOp::kSign, x);
}
Tensor floor(const Tensor& x) {
  return zero_grad_unary("floor", UnaryOp::kFloor, x);
}
Tensor ceil(const Tensor& x) {
  return zero_grad_unary("ceil", UnaryOp::kCeil, x);
}
Tensor round(const Tensor& x) {
  return zero_grad_unary("round", UnaryOp::kRound, x);
}
Tensor reciprocal(const Tensor& x) {
  return unary_with_grad(
      "reciprocal", UnaryOp::kReciprocal, x,
      [](const Tensor& g, const Tensor&, const Tensor& y) { return neg(mul(g, mul(y, y))); });
}
Tensor square(const Tensor& x) {
  return unary_with_grad("square", UnaryOp::kSquare, x,
                         [](const Tensor& g, const Tensor& x, const Tensor&) {
                           return mul(g, mul(x, wrap_scalar(2.0, DType::kFloat64)));
                         });
}
Tensor log1p(const Tensor& x) {
  return unary_with_grad("log1p", UnaryOp::kLog1p, x,
                         [](const Tensor& g, const Tensor& x, const Tensor&) {
                           return div(g, add(x, wrap_scalar(1.0, DType::kFloat64)));
                         });
}
Tensor expm1(const Tensor& x) {
  return unary_with_grad("expm1", UnaryOp::kExpm1, x,
                         [](const Tensor& g, const Tensor&, const Tensor& y) {
                           return mul(g, add(y, wrap_scalar(1.0, DType::kFloat64)));
                         });
}
Tensor erf(const Tensor& x) {
  return unary_with_grad(
      "erf", UnaryOp::kErf, x, [](const Tensor& g, const Tensor& x, const Tensor&) {
        Tensor d = mul(exp(neg(mul(x, x))), wrap_scalar(1.1283791670955126, DType::kFloat64));
        return mul(g, d);
      });
}
Tensor logical_not(const Tensor& x) {
  if (x.is_global())
    return run_global1("logical_not", {x}, logical_shape(x), {},
                       [](const auto& l, const Shape&) { return logical_not(l[0]); });
  return unary_op(UnaryOp::kLogicalNot, x);
}

// --- binary ops ---

namespace {
// A differentiable binary op on global inputs: the same front end on the shards.
template <class F>
std::optional<Tensor> global_binary(const char* name, const Tensor& a, const Tensor& b, F f) {
  if (!any_global({a, b})) return std::nullopt;
  return run_global1(name, {a, b}, broadcast_shapes(logical_shape(a), logical_shape(b), name), {},
                     [f](const auto& l, const Shape&) { return f(l[0], l[1]); });
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  if (auto g = global_binary(
          "add", a, b, [alpha](const Tensor& x, const Tensor& y) { return add(x, y, alpha); }))
    return *g;
  Tensor out = binary_op(BinaryOp::kAdd, a, scaled(b, alpha));
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "add", {a, b}, {out},
        [ma = InputMeta(a), mb = InputMeta(b), alpha](const Grads& g, const Needs& n) -> Grads {
          return {n[0] ? grad_for(g[0], ma) : Tensor(),
                  n[1] ? grad_for(scaled(g[0], alpha), mb) : Tensor()};
        });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  if (auto g = global_binary(
          "sub", a, b, [alpha](const Tensor& x, const Tensor& y) { return sub(x, y, alpha); }))
    return *g;
  Tensor out = binary_op(BinaryOp::kSub, a, scaled(b, alpha));
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "sub", {a, b}, {out},
        [ma = InputMeta(a), mb = InputMeta(b), alpha](const Grads& g, const Needs& n) -> Grads {
          return {n[0] ? grad_for(g[0], ma) : Tensor(),
                  n[1] ? grad_for(scaled(g[0], -alpha), mb) : Tensor()};
        });
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  if (auto g =
          global_binary("mul", a, b, [](const Tensor& x, const Tensor& y) { return mul(x, y); }))
    return *g;
  Tensor out = binary_op(BinaryOp::kMul, a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "mul", {a, b}, {out},
        [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const Needs& n) -> Grads {
          Tensor a = sa.unpack("mul"), b = sb.unpack("mul");
          return {n[0] ? grad_for(mul(g[0], b), InputMeta(a)) : Tensor(),
                  n[1] ? grad_for(mul(g[0], a), InputMeta(b)) : Tensor()};
        });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  if (auto g =
          global_binary("div", a, b, [](const Tensor& x, const Tensor& y) { return div(x, y); }))
    return *g;
  Tensor out = binary_op(BinaryOp::kDiv, a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "div", {a, b}, {out},
        [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const Needs& n) -> Grads {
          Tensor a = sa.unpack("div"), b = sb.unpack("div");
          Tensor ga, gb;
          if (n[0]) ga = grad_for(div(g[0], b), InputMeta(a));
          if (n[1]) gb = grad_for(neg(div(mul(g[0], a), mul(b, b))), InputMeta(b));
          return {ga, gb};
        });
  }
  return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
  if (auto g =
          global_binary("pow", a, b, [](const Tensor& x, const Tensor& y) { return pow(x, y); }))
    return *g;
  Tensor out = binary_op(BinaryOp::kPow, a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "pow", {a, b}, {out},
        [sa = SavedTensor(a), sb = SavedTensor(b), so = SavedTensor(out, true)](
            const Grads& g, const Needs& n) -> Grads {
          Tensor a = sa.unpack("pow"), b = sb.unpack("pow"), y = so.unpack("pow");
          Tensor ga, gb;
          if (n[0])
            ga = grad_for(mul(g[0], mul(b, pow(a, sub(b, wrap_scalar(1, DType::kInt64))))),
                          InputMeta(a));
          if (n[1]) {
            // d/db a^b = a^b log a, taken as 0 where a == 0 (PyTorch's convention).
            Tensor la = where(eq(a, wrap_scalar(0, DType::kInt64)), zeros_like(y), log(a));
            gb = grad_for(mul(g[0], mul(y, la)), InputMeta(b));
          }
          return {ga, gb};
        });
  }
  return out;
}

namespace {
// maximum/minimum: the gradient goes to the selected input, split evenly on ties.
Tensor extremum(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  if (auto g = global_binary(name, a, b, [op, name](const Tensor& x, const Tensor& y) {
        return extremum(op, name, x, y);
      }))
    return *g;
  Tensor out = binary_op(op, a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        name, {a, b}, {out},
        [sa = SavedTensor(a), sb = SavedTensor(b), name](const Grads& g, const Needs& n) -> Grads {
          Tensor a = sa.unpack(name), b = sb.unpack(name);
          Tensor half = wrap_scalar(0.5, DType::kFloat64);
          Tensor tie = mul(eq(a, b), half);
          Tensor a_wins = name[1] == 'a' ? gt(a, b) : lt(a, b);
          Tensor wa = add(a_wins, tie);
          Tensor wb =
              sub(add(logical_not(a_wins), tie), mul(eq(a, b), wrap_scalar(1, DType::kInt64)));
          return {n[0] ? grad_for(mul(g[0], wa), InputMeta(a)) : Tensor(),
                  n[1] ? grad_for(mul(g[0], wb), InputMeta(b)) : Tensor()};
        });
  }
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return extremum(BinaryOp::kMaximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum(BinaryOp::kMinimum, "minimum", a, b);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kFloorDiv, a, b);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kRemainder, a, b);
}
Tensor eq(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kEq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kNe, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kLt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kLe, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kGt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kGe, a, b);
}
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kLogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kLogicalOr, a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::kLogicalXor, a, b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (cond.dtype() != DType::kBool)
    fail<TypeError>("where", "condition must be a bool tensor, got ", cond.str());
  if (any_global({cond, a, b}))
    return run_global1(
        "where", {cond, a, b},
        broadcast_shapes(broadcast_shapes(logical_shape(cond), logical_shape(a), "where"),
                         logical_shape(b), "where"),
        {}, [](const auto& l, const Shape&) { return where(l[0], l[1], l[2]); });
  Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  DType dt = result_type(a, b);
  Tensor out = Tensor::empty(shape, dt, a.device());
  where_kernel().get(a.device().type)(cond, to_dtype(a, dt), to_dtype(b, dt), out);
  if (autograd::needs_grad(a, b)) {
    autograd::record("where", {a, b}, {out},
                     [sc = SavedTensor(cond), ma = InputMeta(a), mb = InputMeta(b)](
                         const Grads& g, const Needs& n) -> Grads {
                       Tensor c = sc.unpack("where"), z = zeros_like(g[0]);
                       return {n[0] ? grad_for(where(c, g[0], z), ma) : Tensor(),
                               n[1] ? grad_for(where(c, z, g[0]), mb) : Tensor()};
                     });
  }
  return out;
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
  if (logical_shape(out) != logical_shape(x))
    fail("masked_fill", "mask of shape ", shape_str(logical_shape(mask)),
         " is not broadcastable to the input's shape ", shape_str(x.shape()));
  return out;
}

OFL_REGISTER_OPS({
    {.name = "neg", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kLinearUnary},
    {.name = "abs", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "exp", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "log", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "sqrt", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "rsqrt", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "sin", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "cos", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "tanh", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "sigmoid",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "relu", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "gelu", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "silu", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "clamp", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "reciprocal",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "square", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "log1p", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "expm1", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "erf", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "to", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kCast},
    {.name = "sign",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "floor",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "ceil",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "round",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kMonotoneUnary},
    {.name = "logical_not",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "add", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kAddLike},
    {.name = "sub", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kAddLike},
    {.name = "mul", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kMulLike},
    {.name = "div", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kDivLike},
    {.name = "pow", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "maximum", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kMaximum},
    {.name = "minimum", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kMinimum},
    {.name = "where", .num_inputs = 3, .cost = elementwise_cost, .sbp = &sbp_rules::kElementwise},
    {.name = "masked_fill", .num_inputs = 3, .cost = elementwise_cost},
    {.name = "floor_divide",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "remainder",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "eq",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "ne",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "lt",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "le",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "gt",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "ge",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "logical_and",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "logical_or",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
    {.name = "logical_xor",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kElementwise},
});

}  // namespace ofl
