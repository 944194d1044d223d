// Binary elementwise functions of torch.* and torch.special.* (atan2, copysign, fmod, xlogy, the
// incomplete gamma functions, gcd, the bitwise ops, the orthogonal polynomials) over the shared
// scalar math, with their backward as ops; and the composites of elementwise ops (deg2rad,
// logit, heaviside, float_power, ...), which run as their parts.
#include <cmath>

#include "core/dispatcher.h"
#include "ops/binary_def.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/op_helpers.h"

namespace ofl::internal {

using elementwise_grad::k;

namespace {

constexpr double kPi = 3.141592653589793, kLn2 = 0.6931471805599453;

const uint8_t kX = kSaveInputs, kXY = kSaveInputs | kSaveOutputs;

Tensor bin(BinaryOp op, const Tensor& a, const Tensor& b) {
  return binary_op(op, a, b);
}

Tensor u_lgamma(const Tensor& x) {
  static const OpDef& d = op_def("lgamma");
  return dispatch1(d, {x});
}

// Bound as flow.special_<name> only (flow.special.<name> in Python).
OpDef special_fn(const char* schema, OpDef def) {
  def.api = {{schema, nullptr, kFunction}};
  return def;
}

// fmax / fmin: the gradient goes to input where it is chosen (ties included), else to other.
template <bool kMax>
std::vector<Tensor> fextremum_grad(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
  const Tensor x_wins = logical_or(kMax ? ge(x, y) : le(x, y), ne(y, y));
  return both(b, b.needs[0] ? mul(g, x_wins) : Tensor(),
              b.needs[1] ? mul(g, logical_not(x_wins)) : Tensor());
}

// x * f(y) with 0 where x is 0 (xlogy, xlog1py): d/dx = f(y) (0 where x is 0 and y is outside
// f's domain, as PyTorch), d/dy = x f'(y).
template <BinaryOp kOp>
std::vector<Tensor> x_times_log_grad(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
  const double edge = kOp == BinaryOp::kXlogy ? 0.0 : -1.0;
  Tensor gx, gy;
  if (b.needs[0]) {
    Tensor outside = logical_and(eq(x, k(0)), le(y, k(edge)));
    gx = where(outside, zeros_like(g), bin(kOp, g, y));
  }
  if (b.needs[1]) gy = div(mul(g, x), kOp == BinaryOp::kXlogy ? y : add(y, k(1)));
  return both(b, gx, gy);
}

// The derivative of the incomplete gamma functions in x (PyTorch has none in a either).
template <bool kUpper>
std::vector<Tensor> igamma_grad(const BackwardArgs& b) {
  const char* name = kUpper ? "igammac" : "igamma";
  if (b.needs[0]) fail(name, "the derivative with respect to input (a) is not implemented");
  const Tensor &a = b.in[0], &x = b.in[1], &g = b.grads[0];
  Tensor density = exp(sub(sub(mul(sub(a, k(1)), log(x)), x), u_lgamma(a)));
  return both(b, Tensor(), mul(g, kUpper ? neg(density) : density));
}

OFL_REGISTER_OPS({
    with_api({binary_api("atan2"), binary_api("arctan2")},
             binary_def(BinaryOp::kAtan2, kX,
                        [](const BackwardArgs& b) {
                          const Tensor &y = b.in[0], &x = b.in[1], &g = b.grads[0];
                          const Tensor r2 = add(square(x), square(y));
                          return both(b, b.needs[0] ? mul(g, div(x, r2)) : Tensor(),
                                      b.needs[1] ? neg(mul(g, div(y, r2))) : Tensor());
                        })),
    binary_def(BinaryOp::kCopysign, kXY,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.out[0], &g = b.grads[0];
                 Tensor gx;
                 if (b.needs[0]) gx = where(eq(x, k(0)), zeros_like(y), mul(g, div(y, x)));
                 return both(b, gx, b.needs[1] ? zeros_like(g) : Tensor());
               }),
    binary_def(BinaryOp::kNextafter),
    binary_def(BinaryOp::kXlogy, kX, x_times_log_grad<BinaryOp::kXlogy>),
    special_fn("special_xlog1py(Tensor|Number input, Tensor|Number other) -> Tensor",
               binary_def(BinaryOp::kXlog1py, kX, x_times_log_grad<BinaryOp::kXlog1py>)),
    special_fn("special_zeta(Tensor|Number input, Tensor|Number other) -> Tensor",
               binary_def(BinaryOp::kZeta, kX,
                          [](const BackwardArgs& b) {
                            if (b.needs[0])
                              fail("special_zeta",
                                   "the derivative with respect to input (x) is not implemented");
                            const Tensor &x = b.in[0], &q = b.in[1], &g = b.grads[0];
                            Tensor d = neg(mul(x, bin(BinaryOp::kZeta, add(x, k(1)), q)));
                            return both(b, Tensor(), mul(g, d));
                          })),
    binary_def(BinaryOp::kIgamma, kX, igamma_grad<false>),
    binary_def(BinaryOp::kIgammac, kX, igamma_grad<true>),
    special_fn("special_chebyshev_polynomial_t(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kChebyshevT)),
    special_fn("special_chebyshev_polynomial_u(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kChebyshevU)),
    special_fn("special_chebyshev_polynomial_v(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kChebyshevV)),
    special_fn("special_chebyshev_polynomial_w(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kChebyshevW)),
    special_fn("special_hermite_polynomial_h(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kHermiteH)),
    special_fn("special_hermite_polynomial_he(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kHermiteHe)),
    special_fn("special_laguerre_polynomial_l(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kLaguerreL)),
    special_fn("special_legendre_polynomial_p(Tensor|Number input, Tensor|Number n) -> Tensor",
               binary_def(BinaryOp::kLegendreP)),
    // d/dy fmod(x, y) = -trunc(x / y).
    binary_def(BinaryOp::kFmod, kX,
               [](const BackwardArgs& b) {
                 const Tensor &x = b.in[0], &y = b.in[1], &g = b.grads[0];
                 return both(b, g, b.needs[1] ? neg(mul(g, trunc(div(x, y)))) : Tensor());
               }),
    binary_def(BinaryOp::kFmax, kX, fextremum_grad<true>),
    binary_def(BinaryOp::kFmin, kX, fextremum_grad<false>),
    binary_def(BinaryOp::kGcd),
    binary_def(BinaryOp::kLcm),
    binary_def(BinaryOp::kBitwiseAnd),
    binary_def(BinaryOp::kBitwiseOr),
    binary_def(BinaryOp::kBitwiseXor),
    binary_def(BinaryOp::kBitwiseLeftShift),
    binary_def(BinaryOp::kBitwiseRightShift),
});

}  // namespace
}  // namespace ofl::internal
