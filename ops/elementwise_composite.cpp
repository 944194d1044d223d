// Elementwise functions of torch.* and torch.special.* written as other elementwise ops (so
// autograd, meta, global and graph mode come from their parts): angle conversions, sign tests,
// clamps by one bound, logit, heaviside, ldexp, float_power, mvlgamma, and PyTorch's aliases.
#include <cmath>
#include <optional>
#include <string>

#include "core/dispatcher.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/op_helpers.h"

namespace ofl::internal {

using elementwise_grad::k;

namespace {

constexpr double kPi = 3.141592653589793, kLn2 = 0.6931471805599453;

// x in floating point: integers and bool as float32 (PyTorch's unary float ops).
Tensor floating(const Tensor& x) {
  return is_floating(x.dtype()) ? x : to_dtype(x, DType::kFloat32);
}

Tensor op1(const char* name, const Tensor& x) {
  return dispatch1(op_def(name), {x});
}

Tensor frac(const Tensor& x) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("frac", "is only defined for floating tensors, got ", x.str());
  return sub(x, trunc(x));
}

Tensor signbit(const Tensor& x) {
  if (x.dtype() == DType::kBool) return full_like(x, 0, DType::kBool);
  if (!is_floating(x.dtype())) return lt(x, k(0));
  // copysign keeps the sign bit of -0.0 and of NaNs, which a comparison does not see.
  return lt(binary_op(BinaryOp::kCopysign, ones_like(x), x), k(0));
}

Tensor is_infinity(const Tensor& x, double inf) {
  if (!is_floating(x.dtype())) return full_like(x, 0, DType::kBool);
  return eq(x, wrap_scalar(inf, DType::kFloat64));
}

// clamp_min / clamp_max: a number bound as clamp's (a float bound makes integers float32), a
// tensor bound (or one that requires grad) as clamp_by_tensors.
Tensor clamp_one_side(const Tensor& x, const Tensor& bound, bool lower) {
  if (bound.dim() != 0 || bound.requires_grad())
    return lower ? clamp_by_tensors(x, bound, Tensor()) : clamp_by_tensors(x, Tensor(), bound);
  const Tensor in =
      is_floating(bound.dtype()) && !is_floating(x.dtype()) ? to_dtype(x, DType::kFloat32) : x;
  const double v = bound.item<double>();
  return lower ? clamp(in, v, std::nullopt) : clamp(in, std::nullopt, v);
}

}  // namespace

Tensor clamp_by_tensors(const Tensor& x, const Tensor& min, const Tensor& max) {
  DType dtype = x.dtype();
  if (min.defined()) dtype = result_type(x, min);
  if (max.defined()) dtype = promote_types(dtype, result_type(x, max));
  // maximum and minimum: a NaN bound gives NaN and a tie splits the gradient, both as PyTorch.
  Tensor r = to_dtype(x, dtype);
  if (min.defined()) r = maximum(r, to_dtype(min, dtype));
  if (max.defined()) r = minimum(r, to_dtype(max, dtype));
  return r;
}

namespace {

Tensor logit(const Tensor& x, std::optional<double> eps) {
  Tensor p = floating(x);
  if (eps) p = clamp(p, *eps, 1 - *eps);
  return log(div(p, sub(k(1), p)));
}

// 0 below zero, 1 above, `values` at zero.
Tensor heaviside(const Tensor& x, const Tensor& values) {
  if (x.dtype() != values.dtype())
    fail<TypeError>("heaviside", "input and values must have the same dtype, got ", x.str(),
                    " and ", values.str());
  return where(eq(x, k(0)), values, to_dtype(gt(x, k(0)), x.dtype()));
}

Tensor float_power(const Tensor& x, const Tensor& e) {
  return pow(to_dtype(x, DType::kFloat64), to_dtype(e, DType::kFloat64));
}

// The multivariate log-gamma of dimension p: sum of lgamma(x - i/2) + p (p-1)/4 log(pi).
Tensor mvlgamma(const Tensor& x, int64_t p) {
  if (p < 1) fail("mvlgamma", "p has to be greater than or equal to 1, got ", p);
  const Tensor xf = floating(x);
  Tensor out = op1("lgamma", xf);
  for (int64_t i = 1; i < p; ++i) out = add(out, op1("lgamma", sub(xf, k(0.5 * double(i)))));
  return add(out, k(double(p) * double(p - 1) / 4 * std::log(kPi)));
}

// div with a rounding mode: None (true division), 'trunc' or 'floor'.
Tensor divide(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  if (!mode) return div(a, b);
  if (*mode == "floor") return floor_divide(a, b);
  if (*mode != "trunc")
    fail("div", "rounding_mode must be None, 'trunc' or 'floor', got '", *mode, "'");
  const DType dt = result_type(a, b);
  if (is_floating(dt)) return trunc(div(a, b));
  if (dt == DType::kBool) fail<TypeError>("div", "is not supported for bool tensors");
  return to_dtype(trunc(div(to_dtype(a, DType::kFloat64), to_dtype(b, DType::kFloat64))), dt);
}

std::optional<std::string> optional_str(const CallArgs& a, size_t i) {
  return a.is_none(i) ? std::nullopt : std::optional<std::string>(a.str(i));
}

// A composite row: `name`'s signatures run other ops.
OpDef composite(const char* name, std::vector<Api> api, const char* doc) {
  return {.name = name, .api = std::move(api), .doc = doc};
}

Tensor shifted(BinaryOp op, const CallArgs& a) {
  return binary_op(op, sub(mul(a.tensor(0), k(2)), k(1)), a.tensor(1));
}

OFL_REGISTER_OPS({
    composite("deg2rad",
              {{"deg2rad(Tensor input) -> Tensor",
                [](const CallArgs& a) { return mul(floating(a.tensor(0)), k(kPi / 180)); }},
               {"rad2deg(Tensor input) -> Tensor",
                [](const CallArgs& a) { return mul(floating(a.tensor(0)), k(180 / kPi)); }}},
              "Angles from degrees to radians (deg2rad) and back (rad2deg)"),
    composite("frac", {{"frac(Tensor input) -> Tensor", call_front<frac>()}},
              "The fractional part, input - trunc(input)"),
    composite("sgn",
              {{"sgn(Tensor input) -> Tensor", call_front<sign>()},
               {"signbit(Tensor input) -> Tensor", call_front<signbit>()}},
              "The sign (sgn, as sign for real tensors) and where the sign bit is set (signbit)"),
    composite("positive",
              {{"positive(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  if (a.tensor(0).dtype() == DType::kBool)
                    fail<TypeError>("positive", "is not supported for bool tensors");
                  return a.tensor(0);
                }}},
              "The input itself (unary plus)"),
    composite("isposinf",
              {{"isposinf(Tensor input) -> Tensor",
                [](const CallArgs& a) { return is_infinity(a.tensor(0), INFINITY); }},
               {"isneginf(Tensor input) -> Tensor",
                [](const CallArgs& a) { return is_infinity(a.tensor(0), -INFINITY); }},
               {"isreal(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  const Tensor& x = a.tensor(0);
                  if (is_complex(x.dtype())) return eq(imag(x), k(0));
                  return full_like(x, 1, DType::kBool);
                }}},
              "Where the elements are +inf (isposinf), -inf (isneginf) or real (isreal)"),
    composite("rsub",
              {{"rsub(Tensor input, Tensor|Number other, *, Number alpha=1) -> Tensor",
                [](const CallArgs& a) { return sub(a.tensor(1), a.tensor(0), a.scalar(2)); }}},
              "other - alpha * input"),
    composite("clamp_min",
              {{"clamp_min(Tensor input, Tensor|Number min) -> Tensor",
                [](const CallArgs& a) { return clamp_one_side(a.tensor(0), a.tensor(1), true); }},
               {"clamp_max(Tensor input, Tensor|Number max) -> Tensor",
                [](const CallArgs& a) { return clamp_one_side(a.tensor(0), a.tensor(1), false); }}},
              "clamp by a lower (clamp_min) or an upper (clamp_max) bound"),
    composite("logit", {{"logit(Tensor input, float? eps=None) -> Tensor", call_front<logit>()}},
              "log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given"),
    composite("heaviside",
              {{"heaviside(Tensor input, Tensor values) -> Tensor", call_front<heaviside>()}},
              "The step function: 0 below zero, 1 above, values at zero"),
    composite("ldexp",
              {{"ldexp(Tensor input, Tensor other) -> Tensor",
                [](const CallArgs& a) {
                  return mul(floating(a.tensor(0)), pow(k(2), a.tensor(1)));
                }}},
              "input * 2 ** other"),
    composite("logaddexp2",
              {{"logaddexp2(Tensor|Number input, Tensor|Number other) -> Tensor",
                [](const CallArgs& a) {
                  const Tensor x = mul(a.tensor(0), k(kLn2)), y = mul(a.tensor(1), k(kLn2));
                  return div(logaddexp(x, y), k(kLn2));
                }}},
              "log2(2 ** input + 2 ** other)"),
    composite("float_power",
              {{"float_power(Tensor|Number input, Tensor|Number exponent) -> Tensor",
                call_front<float_power>()}},
              "pow in float64"),
    composite("mvlgamma",
              {{"mvlgamma(Tensor input, int p) -> Tensor", call_front<mvlgamma>()},
               {"special_multigammaln(Tensor input, int p) -> Tensor", call_front<mvlgamma>(),
                kFunction}},
              "The multivariate log-gamma function of dimension p"),
    composite("special_ndtr",
              {{"special_ndtr(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  return mul(op1("erfc", mul(floating(a.tensor(0)), k(-M_SQRT1_2))), k(0.5));
                },
                kFunction}},
              "The standard normal CDF"),
    composite("special_shifted_chebyshev_polynomial_t",
              {{"special_shifted_chebyshev_polynomial_t(Tensor|Number input, Tensor|Number n) -> "
                "Tensor",
                [](const CallArgs& a) { return shifted(BinaryOp::kChebyshevT, a); }, kFunction},
               {"special_shifted_chebyshev_polynomial_u(Tensor|Number input, Tensor|Number n) -> "
                "Tensor",
                [](const CallArgs& a) { return shifted(BinaryOp::kChebyshevU, a); }, kFunction},
               {"special_shifted_chebyshev_polynomial_v(Tensor|Number input, Tensor|Number n) -> "
                "Tensor",
                [](const CallArgs& a) { return shifted(BinaryOp::kChebyshevV, a); }, kFunction},
               {"special_shifted_chebyshev_polynomial_w(Tensor|Number input, Tensor|Number n) -> "
                "Tensor",
                [](const CallArgs& a) { return shifted(BinaryOp::kChebyshevW, a); }, kFunction}},
              "The Chebyshev polynomials of 2 x - 1"),
    composite(
        "divide",
        {{"divide(Tensor|Number input, Tensor|Number other, *, str? rounding_mode=None) -> Tensor",
          [](const CallArgs& a) { return divide(a.tensor(0), a.tensor(1), optional_str(a, 2)); }},
         {"div(Tensor|Number input, Tensor|Number other, *, str? rounding_mode=None) -> Tensor",
          [](const CallArgs& a) { return divide(a.tensor(0), a.tensor(1), optional_str(a, 2)); }},
         {"true_divide(Tensor|Number input, Tensor|Number other) -> Tensor", call_front<div>()},
         {"multiply(Tensor|Number input, Tensor|Number other) -> Tensor", call_front<mul>()},
         {"subtract(Tensor|Number input, Tensor|Number other, *, Number alpha=1) -> Tensor",
          call_front<sub>()},
         {"negative(Tensor input) -> Tensor", call_front<neg>()},
         {"absolute(Tensor input) -> Tensor", call_front<abs>()}},
        "PyTorch's other names of div (with rounding_mode), mul, sub, neg and abs"),
});

}  // namespace
}  // namespace ofl::internal
