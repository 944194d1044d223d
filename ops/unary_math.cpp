// Trigonometric, hyperbolic, exponential and special unary functions (PyTorch's torch.* and
// torch.special.* names): rows over the shared scalar math (ops/elementwise_math.h,
// ops/special_math.h), their backward as ops, and their SBP rules.
#include <cmath>

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/op_helpers.h"
#include "ops/unary_def.h"

namespace ofl::internal {

using namespace elementwise_sbp;
using elementwise_grad::k;

namespace {

constexpr double kPi = 3.141592653589793, kLn2 = 0.6931471805599453, kLn10 = 2.302585092994046;
constexpr double kSqrtPi = 1.7724538509055159, kSqrt2Pi = 2.5066282746310002;

// The unary op `name` on x.
Tensor u(const char* name, const Tensor& x) {
  return dispatch1(op_def(name), {x});
}

// f(x) where x is not 0, and `at0` where it is (a removable singularity of a derivative).
Tensor except_at_zero(const Tensor& x, const Tensor& f, double at0) {
  return where(eq(x, k(0)), full_like(f, at0), f);
}

const uint8_t kX = kSaveInputs, kY = kSaveOutputs, kXY = kSaveInputs | kSaveOutputs;
const auto& kEw = kElementwise;
const auto& kMono = kMonotoneUnary;

using G = const Tensor&;
using A = const Attrs&;

// A row bound also under PyTorch's other spelling of the name (arccos for acos).
OpDef aliased(const char* alias, OpDef def) {
  def.api.push_back(unary_api(alias));
  return def;
}

// A torch.special function: flow.special_<name> (flow.special.<name> in Python), no method.
OpDef special_fn(OpDef def) {
  for (Api& api : def.api) api.bind = kFunction;
  return def;
}

OFL_REGISTER_OPS({
    aliased("arccos",
            unary_def("acos", UnaryOp::kAcos, kEw, kX,
                      [](G g, G x, G, A) { return neg(div(g, sqrt(sub(k(1), square(x))))); })),
    aliased("arcsin", unary_def("asin", UnaryOp::kAsin, kEw, kX,
                                [](G g, G x, G, A) { return div(g, sqrt(sub(k(1), square(x)))); })),
    aliased("arctan", unary_def("atan", UnaryOp::kAtan, kMono, kX,
                                [](G g, G x, G, A) { return div(g, add(square(x), k(1))); })),
    unary_def("sinh", UnaryOp::kSinh, kMono, kX,
              [](G g, G x, G, A) { return mul(g, u("cosh", x)); }),
    unary_def("cosh", UnaryOp::kCosh, kEw, kX, [](G g, G x, G, A) { return mul(g, u("sinh", x)); }),
    unary_def("tan", UnaryOp::kTan, kEw, kY,
              [](G g, G, G y, A) { return mul(g, add(square(y), k(1))); }),
    aliased("arcsinh",
            unary_def("asinh", UnaryOp::kAsinh, kMono, kX,
                      [](G g, G x, G, A) { return div(g, sqrt(add(square(x), k(1)))); })),
    aliased("arccosh", unary_def("acosh", UnaryOp::kAcosh, kEw, kX,
                                 [](G g, G x, G, A) {
                                   return div(g, sqrt(mul(sub(x, k(1)), add(x, k(1)))));
                                 })),
    aliased("arctanh", unary_def("atanh", UnaryOp::kAtanh, kEw, kX,
                                 [](G g, G x, G, A) { return div(g, sub(k(1), square(x))); })),
    unary_def("exp2", UnaryOp::kExp2, kMono, kY,
              [](G g, G, G y, A) { return mul(g, mul(y, k(kLn2))); }),
    unary_def("log2", UnaryOp::kLog2, kEw, kX,
              [](G g, G x, G, A) { return div(g, mul(x, k(kLn2))); }),
    unary_def("log10", UnaryOp::kLog10, kEw, kX,
              [](G g, G x, G, A) { return div(g, mul(x, k(kLn10))); }),
    unary_def("erfc", UnaryOp::kErfc, kEw, kX,
              [](G g, G x, G, A) { return mul(g, mul(exp(neg(square(x))), k(-2 / kSqrtPi))); }),
    unary_def("erfinv", UnaryOp::kErfinv, kEw, kY,
              [](G g, G, G y, A) { return mul(g, mul(exp(square(y)), k(kSqrtPi / 2))); }),
    unary_def("lgamma", UnaryOp::kLgamma, kEw, kX,
              [](G g, G x, G, A) { return mul(g, u("digamma", x)); }),
    unary_def("digamma", UnaryOp::kDigamma, kEw, kX,
              [](G g, G x, G, A) { return mul(g, polygamma(1, x)); }),
    with_api({{"polygamma(int n, Tensor input) -> Tensor", call_front<polygamma>(), kFunction},
              {"polygamma(Tensor input, int n) -> Tensor",
               [](const CallArgs& a) { return polygamma(a.integer(1), a.tensor(0)); }, kMethod}},
             unary_def("polygamma", UnaryOp::kPolygamma, kEw, kX,
                       [](G g, G x, G, A a) {
                         return mul(g, polygamma(a.get<int64_t>("n") + 1, x));
                       },
                       {{"n", AttrType::kInt}})),
    unary_def("i0", UnaryOp::kI0, kEw, kX,
              [](G g, G x, G, A) { return mul(g, u("special_i1", x)); }),
    special_fn(unary_def("special_i0e", UnaryOp::kI0e, kEw, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, sub(u("special_i1e", x), mul(sign(x), y)));
                         })),
    special_fn(unary_def("special_i1", UnaryOp::kI1, kMono, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, except_at_zero(x, sub(u("i0", x), div(y, x)), 0.5));
                         })),
    special_fn(unary_def("special_i1e", UnaryOp::kI1e, kEw, kXY,
                         [](G g, G x, G y, A) {
                           Tensor d = sub(u("special_i0e", x), mul(y, add(sign(x), reciprocal(x))));
                           return mul(g, except_at_zero(x, d, 0.5));
                         })),
    unary_def("sinc", UnaryOp::kSinc, kEw, kXY,
              [](G g, G x, G y, A) {
                return mul(g, except_at_zero(x, div(sub(cos(mul(x, k(kPi))), y), x), 0.0));
              }),
    special_fn(unary_def("special_ndtri", UnaryOp::kNdtri, kEw, kY,
                         [](G g, G, G y, A) {
                           return mul(g, mul(exp(mul(square(y), k(0.5))), k(kSqrt2Pi)));
                         })),
    special_fn(unary_def("special_log_ndtr", UnaryOp::kLogNdtr, kMono, kXY,
                         [](G g, G x, G y, A) {
                           Tensor log_pdf = sub(mul(square(x), k(-0.5)), y);
                           return mul(g, mul(exp(log_pdf), k(1 / kSqrt2Pi)));
                         })),
    special_fn(unary_def("special_erfcx", UnaryOp::kErfcx, kEw, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, sub(mul(mul(x, y), k(2)), k(2 / kSqrtPi)));
                         })),
    special_fn(unary_def("special_entr", UnaryOp::kEntr, kEw, kX,
                         [](G g, G x, G, A) { return neg(mul(g, add(log(x), k(1)))); })),
    special_fn(unary_def("special_bessel_j0", UnaryOp::kBesselJ0, kEw, kX,
                         [](G g, G x, G, A) { return neg(mul(g, u("special_bessel_j1", x))); })),
    special_fn(unary_def("special_bessel_j1", UnaryOp::kBesselJ1, kEw, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, except_at_zero(
                                             x, sub(u("special_bessel_j0", x), div(y, x)), 0.5));
                         })),
    special_fn(unary_def("special_bessel_y0", UnaryOp::kBesselY0, kEw, kX,
                         [](G g, G x, G, A) { return neg(mul(g, u("special_bessel_y1", x))); })),
    special_fn(unary_def("special_bessel_y1", UnaryOp::kBesselY1, kEw, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, sub(u("special_bessel_y0", x), div(y, x)));
                         })),
    special_fn(unary_def("special_spherical_bessel_j0", UnaryOp::kSphericalBesselJ0, kEw, kXY,
                         [](G g, G x, G y, A) {
                           return mul(g, except_at_zero(x, div(sub(cos(x), y), x), 0.0));
                         })),
    aliased("fix", unary_def("trunc", UnaryOp::kTrunc, kMono, kSaveNone, zero_grad)),
    unary_def("bitwise_not", UnaryOp::kBitwiseNot, kEw, kSaveNone, nullptr),
});

}  // namespace

Tensor polygamma(int64_t n, const Tensor& x) {
  static const OpDef& d = op_def("polygamma");
  return dispatch1(d, {x}, {{"n", n}});
}
Tensor trunc(const Tensor& x) {
  static const OpDef& d = op_def("trunc");
  return dispatch1(d, {x});
}
Tensor bitwise_not(const Tensor& x) {
  static const OpDef& d = op_def("bitwise_not");
  return dispatch1(d, {x});
}

}  // namespace ofl::internal
