// Elementwise ops: unary, binary with broadcasting and type promotion, where, casts, and
// the in-place variants.
#pragma once
#include <optional>

#include "core/op_def.h"
#include "core/primitives.h"
#include "core/tensor.h"

namespace ofl::internal {

enum class UnaryOp {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kRelu,
  kGelu,
  kGeluTanh,
  kSilu,
  kPowScalar,
  kClamp,
  kSign,
  kFloor,
  kCeil,
  kRound,
  kLogicalNot,
  kReciprocal,
  kSquare,
  kLog1p,
  kExpm1,
  kErf,
  // Trigonometric, hyperbolic, exponential and special functions (floating; ops/special_math.h).
  kAcos,
  kAsin,
  kAtan,
  kSinh,
  kCosh,
  kTan,
  kAsinh,
  kAcosh,
  kAtanh,
  kExp2,
  kLog2,
  kLog10,
  kErfc,
  kErfinv,
  kLgamma,
  kDigamma,
  kPolygamma,  // the order n is the first scalar
  kI0,
  kI0e,
  kI1,
  kI1e,
  kSinc,
  kNdtri,
  kLogNdtr,
  kErfcx,
  kEntr,
  kBesselJ0,
  kBesselJ1,
  kBesselY0,
  kBesselY1,
  kSphericalBesselJ0,
  kTrunc,       // keeps integers
  kBitwiseNot,  // integers and bool
};
enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMaximum,
  kMinimum,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kFloorDiv,
  kRemainder,
  kLogAddExp,  // log(exp(x) + exp(y)), floating only
  kHypot,      // sqrt(x^2 + y^2) without overflow, floating only
  // Floating only (integers promote to float32):
  kAtan2,
  kCopysign,
  kNextafter,
  kXlogy,
  kXlog1py,
  kZeta,
  kIgamma,
  kIgammac,
  kChebyshevT,  // the polynomials: x, then the degree n
  kChebyshevU,
  kChebyshevV,
  kChebyshevW,
  kHermiteH,
  kHermiteHe,
  kLaguerreL,
  kLegendreP,
  // Keeping integers:
  kFmod,
  kFmax,  // NaN is ignored
  kFmin,
  // Integers (and bool for and, or, xor):
  kGcd,
  kLcm,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kBitwiseLeftShift,
  kBitwiseRightShift,
  // Backward helpers: f(x, grad) fused so the backward of an activation is one pass.
  kGeluGrad,
  kGeluTanhGrad,
  kSiluGrad,
  kSigmoidGradFromOutput,
  kTanhGradFromOutput,
};

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
// clamp with tensor bounds (either undefined for none), as PyTorch's: x where min <= x <= max,
// min below, max above (max where min > max); the gradient flows to the value taken, split
// evenly at ties.
Tensor clamp_by_tensors(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor square(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor polygamma(int64_t n, const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor bitwise_not(const Tensor& x);
// Elementwise dtype conversion (a no-op returning x when the dtype already matches).
Tensor to_dtype(const Tensor& x, DType dtype);

Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
// input + weight * (end - input).
Tensor lerp(const Tensor& input, const Tensor& end, const Tensor& weight);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
// A Python scalar as a 0-d "wrapped number" tensor (int64, float64 or bool).
Tensor wrap_scalar(double v, DType kind);
// The result dtype of a binary op under PyTorch's promotion (dims > 0-d > wrapped numbers).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const TensorMeta& a, const TensorMeta& b);

// In-place: out-of-place kernel semantics, written into `self` (bumps its version).
Tensor& add_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& sub_(Tensor& self, const Tensor& other, double alpha = 1.0);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& fill_(Tensor& self, double value);
Tensor& zero_(Tensor& self);
Tensor& clamp_(Tensor& self, std::optional<double> min, std::optional<double> max);

// --- shared by other op files ---
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);

}  // namespace ofl::internal
