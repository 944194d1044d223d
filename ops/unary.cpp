// Unary elementwise op definitions and the dtype cast: dtype rules, backward as ops, SBP rules.
#include <cmath>
#include <limits>

#include "core/dispatcher.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"
#include "ops/unary_def.h"

namespace ofl::internal {

using namespace elementwise_sbp;

using elementwise_grad::k;

namespace {

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
    case UnaryOp::kTrunc:
    case UnaryOp::kBitwiseNot:
      return false;
    default:
      return true;
  }
}

std::vector<TensorMeta> infer_unary(UnaryOp op, const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  if (op == UnaryOp::kLogicalNot) return single_output(x.shape, DType::kBool, x.device);
  DType dt = x.dtype;
  if (promotes_int_to_float(op) && !is_floating(dt)) dt = DType::kFloat32;
  if (op == UnaryOp::kBitwiseNot && is_floating(dt))
    fail<TypeError>(a.op, "is only defined for integer and bool tensors, got ", x.str());
  if (dt == DType::kBool && op != UnaryOp::kAbs && op != UnaryOp::kRelu &&
      op != UnaryOp::kBitwiseNot)
    fail<TypeError>(a.op, "is not supported for bool tensors; got shape ", shape_str(x.shape));
  if (op == UnaryOp::kPolygamma && a.attrs.get<int64_t>("n") < 0)
    fail(a.op, "does not support negative n, got ", a.attrs.get<int64_t>("n"));
  if (op == UnaryOp::kPowScalar && !is_floating(dt) && a.attrs.get<double>("exponent") < 0)
    fail(a.op, "integers to negative integer powers are not allowed (", x.str(), " ** ",
         a.attrs.get<double>("exponent"), ")");
  return single_output(x.shape, dt, x.device);
}

// The kernel's two scalar parameters, from the op's attributes.
std::pair<double, double> scalar_params(UnaryOp op, const Attrs& attrs) {
  if (op == UnaryOp::kPowScalar) return {attrs.get<double>("exponent"), 0};
  if (op == UnaryOp::kClamp) return {attrs.get<double>("min"), attrs.get<double>("max")};
  if (op == UnaryOp::kPolygamma) return {double(attrs.get<int64_t>("n")), 0};
  return {0, 0};
}

void compute_unary(UnaryOp op, const ComputeArgs& c) {
  const Tensor& out = c.out[0];
  if (op == UnaryOp::kBitwiseNot && out.dtype() == DType::kBool) op = UnaryOp::kLogicalNot;
  Tensor in = op == UnaryOp::kLogicalNot ? c.in[0] : converted(c.in[0], out.dtype());
  if (out.dtype() == DType::kBool && op != UnaryOp::kLogicalNot) {
    copy_kernel().get(out.device().type)(in, out);  // abs and relu of bools are the identity
    return;
  }
  if (op == UnaryOp::kGelu && c.attrs.get<std::string>("approximate") == "tanh")
    op = UnaryOp::kGeluTanh;
  auto [p, q] = scalar_params(op, c.attrs);
  unary_kernel().get(out.device().type)(op, in, out, p, q);
}

}  // namespace

Tensor zero_grad(const Tensor& g, const Tensor&, const Tensor&, const Attrs&) {
  return zeros_like(g);
}

OpDef unary_def(const char* name, UnaryOp op, const SbpRule& sbp, uint8_t saves, UnaryGrad grad,
                std::vector<AttrDef> attrs) {
  OpDef def{.name = name, .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp};
  def.attrs = std::move(attrs);
  def.infer = [op](const InferArgs& a) { return infer_unary(op, a); };
  def.compute = [op](const ComputeArgs& c) { compute_unary(op, c); };
  def.saves = saves;
  if (grad) {
    def.backward = [grad](const BackwardArgs& b) -> std::vector<Tensor> {
      return {b.needs[0] ? grad(b.grads[0], b.in[0], b.out[0], b.attrs) : Tensor()};
    };
  }
  def.differentiable = grad && grad != zero_grad;
  def.api = {unary_api(name)};
  if (op != UnaryOp::kLogicalNot && op != UnaryOp::kBitwiseNot)
    def.elementwise = [op](const Attrs& attrs, ElementwiseStep& step) {
      UnaryOp o = op;
      if (o == UnaryOp::kGelu && attrs.get<std::string>("approximate") == "tanh")
        o = UnaryOp::kGeluTanh;
      const auto [p, q] = scalar_params(o, attrs);
      step = {ElementwiseStep::kUnary, static_cast<int32_t>(o), p, q};
      return true;
    };
  return def;
}

namespace {

// to: typed attribute dtype; P(max|min) pass (casts are monotone), P(sum) into floats.
Sigs cast_sbp(const SbpQuery& q) {
  Sigs sigs = kMonotoneUnary.signatures(q);
  if (is_floating(q.typed->get<DType>("dtype"))) sigs.push_back(uniform(q, kPSum));
  return sigs;
}
const SbpRule kCast{"cast", cast_sbp};

// clamp's public signature: a float bound turns an integer input into float32, as in PyTorch.
Tensor clamp_numbers(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const Tensor lo = a.optional_tensor(1), hi = a.optional_tensor(2);
  auto by_tensor = [](const Tensor& b) {
    return b.defined() && (b.dim() != 0 || b.requires_grad());
  };
  if (by_tensor(lo) || by_tensor(hi)) return clamp_by_tensors(x, lo, hi);
  auto bound = [](const Tensor& b) {
    return b.defined() ? std::optional<double>(b.item<double>()) : std::nullopt;
  };
  auto floating = [](const Tensor& b) { return b.defined() && is_floating(b.dtype()); };
  const bool promote = (floating(lo) || floating(hi)) && !is_floating(x.dtype());
  return clamp(promote ? to_dtype(x, DType::kFloat32) : x, bound(lo), bound(hi));
}

const uint8_t kX = kSaveInputs, kY = kSaveOutputs;
const auto& kEw = kElementwise;
const auto& kMono = kMonotoneUnary;

OFL_REGISTER_OPS({
    unary_def("neg", UnaryOp::kNeg, kLinearUnary, kSaveNone,
              [](const Tensor& g, const Tensor&, const Tensor&, const Attrs&) { return neg(g); }),
    // Through its front end, which takes complex64 too (|z|, as hypot of the parts).
    with_api({{"abs(Tensor input) -> Tensor", call_front<abs>()}},
             unary_def("abs", UnaryOp::kAbs, kEw, kX,
                       [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                         return mul(g, sign(x));
                       })),
    under_autocast(Autocast::kFloat32, unary_def("exp", UnaryOp::kExp, kMono, kY,
                                                 [](const Tensor& g, const Tensor&, const Tensor& y,
                                                    const Attrs&) { return mul(g, y); })),
    under_autocast(Autocast::kFloat32, unary_def("log", UnaryOp::kLog, kEw, kX,
                                                 [](const Tensor& g, const Tensor& x, const Tensor&,
                                                    const Attrs&) { return div(g, x); })),
    unary_def("sqrt", UnaryOp::kSqrt, kEw, kY,
              [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                return div(g, mul(y, k(2.0)));
              }),
    under_autocast(Autocast::kFloat32,
                   unary_def("rsqrt", UnaryOp::kRsqrt, kEw, kY,
                             [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                               return mul(g, mul(pow(y, 3.0), k(-0.5)));
                             })),
    unary_def("sin", UnaryOp::kSin, kEw, kX,
              [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                return mul(g, cos(x));
              }),
    unary_def("cos", UnaryOp::kCos, kEw, kX,
              [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                return neg(mul(g, sin(x)));
              }),
    unary_def("tanh", UnaryOp::kTanh, kMono, kY,
              [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                return binary_op(BinaryOp::kTanhGradFromOutput, y, g);
              }),
    unary_def("sigmoid", UnaryOp::kSigmoid, kMono, kY,
              [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                return binary_op(BinaryOp::kSigmoidGradFromOutput, y, g);
              }),
    unary_def("relu", UnaryOp::kRelu, kMono, kY,
              [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                return mul(g, logical_not(le(y, k(0))));  // PyTorch's: NaN passes the gradient
              }),
    with_api({{"gelu(Tensor input, str approximate='none') -> Tensor",
               call_front<gelu>()}},
             unary_def("gelu", UnaryOp::kGelu, kEw, kX,
                       [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs& a) {
                         const bool tanh = a.get<std::string>("approximate") == "tanh";
                         return binary_op(tanh ? BinaryOp::kGeluTanhGrad : BinaryOp::kGeluGrad, x,
                                          g);
                       },
                       {{"approximate", AttrType::kString}})),
    unary_def("silu", UnaryOp::kSilu, kEw, kX,
              [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                return binary_op(BinaryOp::kSiluGrad, x, g);
              }),
    // x ** p for a number p: internal (Python's pow takes it when p keeps x's dtype).
    with_api({}, under_autocast(Autocast::kFloat32,
                                unary_def("pow_scalar", UnaryOp::kPowScalar, kEw, kX,
                                          [](const Tensor& g, const Tensor& x, const Tensor&,
                                             const Attrs& a) {
                                            const double p = a.get<double>("exponent");
                                            if (p == 0.0) return zeros_like(g);
                                            return mul(g, mul(pow(x, p - 1.0), k(p)));
                                          },
                                          {{"exponent", AttrType::kFloat}}))),
    with_api({{"clamp(Tensor input, Tensor|Number? min=None, Tensor|Number? max=None) -> Tensor",
               clamp_numbers}},
             unary_def("clamp", UnaryOp::kClamp, kMono, kX,
                       [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs& a) {
                         Tensor inside = logical_and(ge(x, k(a.get<double>("min"))),
                                                     le(x, k(a.get<double>("max"))));
                         return mul(g, inside);
                       },
                       {{"min", AttrType::kFloat}, {"max", AttrType::kFloat}})),
    under_autocast(Autocast::kFloat32,
                   unary_def("reciprocal", UnaryOp::kReciprocal, kEw, kY,
                             [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                               return neg(mul(g, mul(y, y)));
                             })),
    unary_def("square", UnaryOp::kSquare, kEw, kX,
              [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                return mul(g, mul(x, k(2.0)));
              }),
    under_autocast(Autocast::kFloat32,
                   unary_def("log1p", UnaryOp::kLog1p, kEw, kX,
                             [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                               return div(g, add(x, k(1.0)));
                             })),
    under_autocast(Autocast::kFloat32,
                   unary_def("expm1", UnaryOp::kExpm1, kMono, kY,
                             [](const Tensor& g, const Tensor&, const Tensor& y, const Attrs&) {
                               return mul(g, add(y, k(1.0)));
                             })),
    unary_def("erf", UnaryOp::kErf, kMono, kX,
              [](const Tensor& g, const Tensor& x, const Tensor&, const Attrs&) {
                return mul(g, mul(exp(neg(mul(x, x))), k(1.1283791670955126)));  // 2/sqrt(pi)
              }),
    unary_def("sign", UnaryOp::kSign, kMono, kSaveNone, zero_grad),
    unary_def("floor", UnaryOp::kFloor, kMono, kSaveNone, zero_grad),
    unary_def("ceil", UnaryOp::kCeil, kMono, kSaveNone, zero_grad),
    with_api({unary_api("round"),
              {"round(Tensor input, *, int decimals) -> Tensor",
               [](const CallArgs& a) {
                 // PyTorch's: scaled by 10^decimals in the input's dtype, rounded, scaled back.
                 const Tensor& x = a.tensor(0);
                 const int64_t d = a.integer(1);
                 if (d == 0 || !is_floating(x.dtype())) return round(x);
                 const Tensor scale = wrap_scalar(std::pow(10.0, double(d < 0 ? -d : d)),
                                                  DType::kFloat64);
                 return d > 0 ? div(round(mul(x, scale)), scale)
                              : mul(round(div(x, scale)), scale);
               }}},
             unary_def("round", UnaryOp::kRound, kMono, kSaveNone, zero_grad)),
    unary_def("logical_not", UnaryOp::kLogicalNot, kEw, kSaveNone, nullptr),
    {.name = "to",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kCast,
     .attrs = {{"dtype", AttrType::kDType}},
     .infer = [](const InferArgs& a) -> std::vector<TensorMeta> {
       return single_output(a.in[0].shape, a.attrs.get<DType>("dtype"), a.in[0].device);
     },
     .compute =
         [](const ComputeArgs& c) { copy_kernel().get(c.out[0].device().type)(c.in[0], c.out[0]); },
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       return {to_dtype(b.grads[0], b.in_meta[0].dtype)};
     },
     .complex = true},  // a cast into complex64 zeroes the imaginary part, out of it drops it
});

OFL_REGISTER_OPS({with_api({{"clamp_(Tensor input, float? min=None, float? max=None) -> Tensor",
                             [](const CallArgs& a) {
                               Tensor self = a.tensor(0);
                               return clamp_(self, a.optional_number(1), a.optional_number(2));
                             },
                             kMethod},
                            {"clamp_(Tensor input, Tensor? min=None, Tensor? max=None) -> Tensor",
                             [](const CallArgs& a) {
                               Tensor self = a.tensor(0);
                               return copy_(self, clamp_by_tensors(self, a.optional_tensor(1),
                                                                   a.optional_tensor(2)));
                             },
                             kMethod}},
                           inplace_variant("clamp_", op_def("clamp")))});

const OpDef& def(const char* name) {
  return op_def(name);
}

Tensor unary(const char* name, const Tensor& x, const Attrs& attrs = {}) {
  return dispatch1(def(name), {x}, attrs);
}

}  // namespace

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  static const OpDef& to = def("to");
  return dispatch1(to, {x}, {{"dtype", dtype}});
}

#define OFL_UNARY_FRONT_END(fn)       \
  Tensor fn(const Tensor& x) {        \
    static const OpDef& d = def(#fn); \
    return dispatch1(d, {x});         \
  }
OFL_UNARY_FRONT_END(neg)
Tensor abs(const Tensor& x) {
  if (is_complex(x.dtype())) return complex_abs(x);
  static const OpDef& d = def("abs");
  return dispatch1(d, {x});
}
OFL_UNARY_FRONT_END(exp)
OFL_UNARY_FRONT_END(log)
OFL_UNARY_FRONT_END(sqrt)
OFL_UNARY_FRONT_END(rsqrt)
OFL_UNARY_FRONT_END(sin)
OFL_UNARY_FRONT_END(cos)
OFL_UNARY_FRONT_END(tanh)
OFL_UNARY_FRONT_END(sigmoid)
OFL_UNARY_FRONT_END(relu)
OFL_UNARY_FRONT_END(silu)
OFL_UNARY_FRONT_END(sign)
OFL_UNARY_FRONT_END(floor)
OFL_UNARY_FRONT_END(ceil)
OFL_UNARY_FRONT_END(round)
OFL_UNARY_FRONT_END(reciprocal)
OFL_UNARY_FRONT_END(square)
OFL_UNARY_FRONT_END(log1p)
OFL_UNARY_FRONT_END(expm1)
OFL_UNARY_FRONT_END(erf)
OFL_UNARY_FRONT_END(logical_not)
#undef OFL_UNARY_FRONT_END

namespace {

// x - x: 0 where x is finite, NaN where it is infinite or NaN (and 0 everywhere for integers).
Tensor isfinite(const Tensor& x) {
  return eq(sub(x, x), wrap_scalar(0, DType::kInt64));
}
Tensor isinf(const Tensor& x) {
  return eq(abs(x), wrap_scalar(INFINITY, DType::kFloat64));
}
Tensor isnan(const Tensor& x) {
  return ne(x, x);
}

double largest_finite(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return 3.3895313892515355e38;
    case DType::kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the dtype's
// largest and lowest finite values).
Tensor nan_to_num(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  if (!is_floating(x.dtype())) return clone(x);
  const double big = largest_finite(x.dtype());
  const auto fill = [&](const Tensor& at, double v, const Tensor& rest) {
    return where(at, full_like(x, v), rest);
  };
  Tensor out = fill(isnan(x), a.number(1), x);
  out =
      fill(eq(x, wrap_scalar(INFINITY, DType::kFloat64)), a.optional_number(2).value_or(big), out);
  return fill(eq(x, wrap_scalar(-INFINITY, DType::kFloat64)), a.optional_number(3).value_or(-big),
              out);
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "isfinite",
     .api = {{"isfinite(Tensor input) -> Tensor", call_front<isfinite>()},
             {"isinf(Tensor input) -> Tensor", call_front<isinf>()},
             {"isnan(Tensor input) -> Tensor", call_front<isnan>()}},
     .doc = "Where the elements are finite (isfinite), infinite (isinf) or NaN (isnan)"},
    {.name = "nan_to_num",
     .api = {{"nan_to_num(Tensor input, float nan=0.0, float? posinf=None, float? neginf=None) "
              "-> Tensor",
              nan_to_num}},
     .doc = "NaN and infinities replaced by finite numbers"},
});

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    fail("gelu", "approximate must be 'none' or 'tanh', got '", approximate, "'");
  return unary("gelu", x, {{"approximate", approximate}});
}

Tensor pow(const Tensor& x, double exponent) {
  return unary("pow_scalar", x, {{"exponent", exponent}});
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  if (!lo && !hi) fail("clamp", "at least one of min and max must be given");
  return unary("clamp", x, {{"min", lo.value_or(-INFINITY)}, {"max", hi.value_or(INFINITY)}});
}

}  // namespace ofl::internal
