// The scalar math of the unary and binary op families, written once for every backend: the CPU
// kernels (ops/cpu/elementwise.cpp) and the CUDA ones (ops/cuda/elementwise.cu) each give
// visit_unary / visit_binary the loop that maps a function object over their tensors. The
// function objects are host-and-device callable under nvcc. M is the type an element computes
// in (float for 16-bit floats).
// Over 600 lines: one table of every unary and binary op's scalar math, the CPU and CUDA kernels'
// single source.
#pragma once
#include <math.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/special_math.h"

#ifdef __CUDACC__
#define OFL_HOST_DEVICE __host__ __device__
#else
#define OFL_HOST_DEVICE
#endif

namespace ofl::internal::ew {

// C's math functions by overload: float calls the f-suffixed ones (the CPU's libmvec vectorises
// them under `omp simd`; on the device they are CUDA's), double the plain ones.
#define OFL_EW_MATH1(name)                       \
  OFL_HOST_DEVICE inline float name(float x) {   \
    return ::name##f(x);                         \
  }                                              \
  OFL_HOST_DEVICE inline double name(double x) { \
    return ::name(x);                            \
  }
#define OFL_EW_MATH2(name)                                 \
  OFL_HOST_DEVICE inline float name(float x, float y) {    \
    return ::name##f(x, y);                                \
  }                                                        \
  OFL_HOST_DEVICE inline double name(double x, double y) { \
    return ::name(x, y);                                   \
  }
OFL_EW_MATH1(exp)
OFL_EW_MATH1(log)
OFL_EW_MATH1(sqrt)
OFL_EW_MATH1(sin)
OFL_EW_MATH1(cos)
OFL_EW_MATH1(tanh)
OFL_EW_MATH1(erf)
OFL_EW_MATH1(floor)
OFL_EW_MATH1(ceil)
OFL_EW_MATH1(nearbyint)
OFL_EW_MATH1(log1p)
OFL_EW_MATH1(expm1)
OFL_EW_MATH1(fabs)
OFL_EW_MATH1(acos)
OFL_EW_MATH1(asin)
OFL_EW_MATH1(atan)
OFL_EW_MATH1(sinh)
OFL_EW_MATH1(cosh)
OFL_EW_MATH1(tan)
OFL_EW_MATH1(asinh)
OFL_EW_MATH1(acosh)
OFL_EW_MATH1(atanh)
OFL_EW_MATH1(exp2)
OFL_EW_MATH1(log2)
OFL_EW_MATH1(log10)
OFL_EW_MATH1(erfc)
OFL_EW_MATH1(lgamma)
OFL_EW_MATH1(trunc)
OFL_EW_MATH1(j0)
OFL_EW_MATH1(j1)
OFL_EW_MATH1(y0)
OFL_EW_MATH1(y1)
OFL_EW_MATH2(pow)
OFL_EW_MATH2(hypot)
OFL_EW_MATH2(fmod)
OFL_EW_MATH2(fmax)
OFL_EW_MATH2(fmin)
OFL_EW_MATH2(atan2)
OFL_EW_MATH2(copysign)
OFL_EW_MATH2(nextafter)
#undef OFL_EW_MATH1
#undef OFL_EW_MATH2

template <class M>
OFL_HOST_DEVICE inline bool isinf(M x) {
  return x == M(INFINITY) || x == M(-INFINITY);
}

inline constexpr double kSqrt2 = 1.4142135623730951;
inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;

// The normal distribution's cdf and pdf at x, for GELU and its gradient. On the CPU in float:
// erfc(|x| / sqrt 2) by Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7, as PyTorch's
// vectorised CPU GELU), whose exp(-x^2 / 2) is the pdf's too: one exp where erf and exp would
// cost about twice as much; the cdf of a negative x is that erfc / 2 itself, with no cancellation.
// Elsewhere (double, the device): erf and exp.
template <class M>
struct CdfPdf {
  M cdf, pdf;
};

#ifndef __CUDACC__
// exp(y) for y <= 0 in float (within 1 ulp), inline, so that a loop over it vectorises whole:
// around a call to libmvec's expf GCC spilled the loop's vectors (exact GELU ran at 0.73x
// PyTorch's). Cephes' expf: y = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts), e^r by its
// polynomial, 2^n from the exponent's bits. n is rounded by adding 1.5 * 2^23, whose low bits
// then hold it: floor and a float-to-int conversion, which may trap, kept GCC from vectorising.
// 0 below -87.3, where 2^n would not be a normal float.
inline float exp_nonpositive(float y) {
  const float yc = y < -87.3f ? -87.3f : y;
  const float shifted = yc * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (yc - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits;
  __builtin_memcpy(&bits, &shifted, sizeof(bits));
  bits = (bits - 0x4B400000 + 127) << 23;  // 2^n
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return y < -87.3f ? 0.0f : p * scale;
}
#endif
template <class M>
OFL_HOST_DEVICE inline CdfPdf<M> normal_cdf_pdf(M x) {
#ifndef __CUDACC__
  if constexpr (std::is_same_v<M, float>) {
    const float a = fabs(x) * float(1 / kSqrt2), t = 1.0f / (1.0f + 0.3275911f * a);
    const float e = exp_nonpositive(-a * a);
    const float poly =
        t * (0.254829592f +
             t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    const float half_tail = 0.5f * poly * e;  // (1 - erf(|x| / sqrt 2)) / 2
    // half_tail below 0, 1 - half_tail from 0 on: a select written as arithmetic.
    const float from_zero = 0.5f * (1.0f + copysign(1.0f, x));
    return {half_tail + from_zero * (1.0f - 2.0f * half_tail), e * float(kInvSqrt2Pi)};
  }
#endif
  return {M(0.5) * (M(1) + erf(x / M(kSqrt2))), exp(M(-0.5) * x * x) * M(kInvSqrt2Pi)};
}

// Integer scalar math with no undefined behaviour for any operands. The CPU raises for a zero
// divisor before it runs (ZeroDivisionError, as PyTorch); what is left here gives 0 for it (the
// device cannot raise). MIN // -1 wraps to MIN and MIN % -1 is 0, as numpy and PyTorch give.
template <class M>
OFL_HOST_DEVICE M wrapping_mul(M a, M b) {
  // At least unsigned int, so that narrow types do not promote to (overflowing) int.
  using U = std::conditional_t<(sizeof(M) < sizeof(unsigned)), unsigned, std::make_unsigned_t<M>>;
  return M(U(std::make_unsigned_t<M>(a)) * U(std::make_unsigned_t<M>(b)));
}
template <class M>
OFL_HOST_DEVICE M int_floor_div(M x, M y) {
  if (y == 0) return M(0);
  if constexpr (std::is_signed_v<M>)
    if (y == M(-1)) return wrapping_mul(x, M(-1));
  const M q = M(x / y);
  return ((x % y != 0) && ((x < 0) != (y < 0))) ? M(q - 1) : q;
}
template <class M>
OFL_HOST_DEVICE M int_remainder(M x, M y) {
  if (y == 0) return M(0);
  if constexpr (std::is_signed_v<M>)
    if (y == M(-1)) return M(0);
  const M r = M(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? M(r + y) : r;
}
// By squaring, wrapping on overflow. A negative exponent gives what the real power truncates to
// (PyTorch's powi): 1 for base 1, +-1 for base -1, 0 otherwise.
template <class M>
OFL_HOST_DEVICE M int_pow(M x, M y) {
  if constexpr (std::is_signed_v<M>) {
    if (y < 0) {
      if (x == 1) return M(1);
      if (x == M(-1)) return (y % 2 == 0) ? M(1) : M(-1);
      return M(0);
    }
  }
  M result = 1;
  for (M e = y; e != 0; e = M(e / 2)) {
    if (e % 2 != 0) result = wrapping_mul(result, x);
    x = wrapping_mul(x, x);
  }
  return result;
}

// Integer gcd, lcm and shifts as PyTorch defines them: shifts by a negative amount or by the
// width or more give 0 (and -1 for a right shift of a negative value).
template <class M>
OFL_HOST_DEVICE M int_fmod(M x, M y) {  // C's truncated remainder
  if (y == 0) return M(0);
  if constexpr (std::is_signed_v<M>)
    if (y == M(-1)) return M(0);
  return M(x % y);
}
template <class M>
OFL_HOST_DEVICE M int_gcd(M a, M b) {
  if constexpr (std::is_signed_v<M>) {
    a = a < 0 ? M(-a) : a;
    b = b < 0 ? M(-b) : b;
  }
  while (b != 0) {
    const M t = M(a % b);
    a = b;
    b = t;
  }
  return a;
}
template <class M>
OFL_HOST_DEVICE M int_lcm(M a, M b) {
  const M g = int_gcd(a, b);
  if (g == 0) return M(0);
  const M l = wrapping_mul(M(a / g), b);
  if constexpr (std::is_signed_v<M>) return l < 0 ? M(-l) : l;
  return l;
}
template <class M>
OFL_HOST_DEVICE M shift_left(M a, M b) {
  using U = std::make_unsigned_t<M>;
  if (b < 0 || b >= M(sizeof(M) * 8)) return M(0);
  return M(U(a) << b);
}
template <class M>
OFL_HOST_DEVICE M shift_right(M a, M b) {
  const bool negative = std::is_signed_v<M> && a < 0;
  if (b < 0 || b >= M(sizeof(M) * 8)) return negative ? M(-1) : M(0);
  return M(a >> b);
}

// Unary op kOp on M; a and b are its scalars (the exponent, the clamp bounds).
template <UnaryOp kOp, class M>
struct Unary {
  M a{}, b{};
  OFL_HOST_DEVICE M operator()(M x) const {
    using U = UnaryOp;
    if constexpr (kOp == U::kNeg) return static_cast<M>(-x);
    if constexpr (kOp == U::kAbs) return x < M(0) ? static_cast<M>(-x) : x;
    if constexpr (kOp == U::kRelu) return x > M(0) || x != x ? x : M(0);  // NaN stays NaN
    if constexpr (kOp == U::kSign) return static_cast<M>((M(0) < x) - (x < M(0)));
    if constexpr (kOp == U::kSquare) return static_cast<M>(x * x);
    if constexpr (kOp == U::kClamp) return x < a ? a : (x > b ? b : x);
    if constexpr (kOp == U::kPowScalar) {
      if constexpr (std::is_floating_point_v<M>) {
        return M(pow(x, a));
      } else if constexpr (std::is_same_v<M, bool>) {
        return M(x || !a);  // x ** 0 is 1
      } else {
        return int_pow(x, a);  // a is whole and not negative: the op's infer checks
      }
    }
    if constexpr (kOp == U::kBitwiseNot) {
      if constexpr (std::is_same_v<M, bool>) return !x;
      if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) return M(~x);
    }
    if constexpr (kOp == U::kFloor || kOp == U::kCeil || kOp == U::kRound || kOp == U::kTrunc) {
      if constexpr (!std::is_floating_point_v<M>) return x;  // integers are whole already
      if constexpr (std::is_floating_point_v<M> && kOp == U::kTrunc) return trunc(x);
      if constexpr (std::is_floating_point_v<M> && kOp == U::kFloor) return floor(x);
      if constexpr (std::is_floating_point_v<M> && kOp == U::kCeil) return ceil(x);
      if constexpr (std::is_floating_point_v<M> && kOp == U::kRound) return nearbyint(x);
    }
    if constexpr (std::is_floating_point_v<M>) {
      if constexpr (kOp == U::kExp) return exp(x);
      if constexpr (kOp == U::kLog) return log(x);
      if constexpr (kOp == U::kSqrt) return sqrt(x);
      if constexpr (kOp == U::kRsqrt) return M(1) / sqrt(x);
      if constexpr (kOp == U::kSin) return sin(x);
      if constexpr (kOp == U::kCos) return cos(x);
      if constexpr (kOp == U::kTanh) return tanh(x);
      if constexpr (kOp == U::kSigmoid) return M(1) / (M(1) + exp(-x));
      if constexpr (kOp == U::kGelu) return x * normal_cdf_pdf(x).cdf;
      if constexpr (kOp == U::kGeluTanh)
        return M(0.5) * x * (M(1) + tanh(M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x)));
      if constexpr (kOp == U::kSilu) return x / (M(1) + exp(-x));
      if constexpr (kOp == U::kReciprocal) return M(1) / x;
      if constexpr (kOp == U::kLog1p) return log1p(x);
      if constexpr (kOp == U::kExpm1) return expm1(x);
      if constexpr (kOp == U::kErf) return erf(x);
      if constexpr (kOp == U::kAcos) return acos(x);
      if constexpr (kOp == U::kAsin) return asin(x);
      if constexpr (kOp == U::kAtan) return atan(x);
      if constexpr (kOp == U::kSinh) return sinh(x);
      if constexpr (kOp == U::kCosh) return cosh(x);
      if constexpr (kOp == U::kTan) return tan(x);
      if constexpr (kOp == U::kAsinh) return asinh(x);
      if constexpr (kOp == U::kAcosh) return acosh(x);
      if constexpr (kOp == U::kAtanh) return atanh(x);
      if constexpr (kOp == U::kExp2) return exp2(x);
      if constexpr (kOp == U::kLog2) return log2(x);
      if constexpr (kOp == U::kLog10) return log10(x);
      if constexpr (kOp == U::kErfc) return erfc(x);
      if constexpr (kOp == U::kLgamma) return lgamma(x);
      if constexpr (kOp == U::kBesselJ0) return j0(x);
      if constexpr (kOp == U::kBesselJ1) return j1(x);
      if constexpr (kOp == U::kBesselY0) return y0(x);
      if constexpr (kOp == U::kBesselY1) return y1(x);
      if constexpr (kOp == U::kSinc) {
        if (x == M(0)) return M(1);
        const M px = M(special::kPi) * x;
        return sin(px) / px;
      }
      if constexpr (kOp == U::kSphericalBesselJ0) return x == M(0) ? M(1) : M(sin(x) / x);
      if constexpr (kOp == U::kEntr) {
        if (x != x) return x;
        if (x > M(0)) return M(-x * log(x));
        return x == M(0) ? M(0) : M(-INFINITY);
      }
      // The special functions compute in double (ops/special_math.h).
      if constexpr (kOp == U::kErfinv) return M(special::erfinv(double(x)));
      if constexpr (kOp == U::kDigamma) return M(special::digamma(double(x)));
      if constexpr (kOp == U::kPolygamma) return M(special::polygamma(int64_t(a), double(x)));
      if constexpr (kOp == U::kI0) return M(special::bessel_i(0, double(x), false));
      if constexpr (kOp == U::kI0e) return M(special::bessel_i(0, double(x), true));
      if constexpr (kOp == U::kI1) return M(special::bessel_i(1, double(x), false));
      if constexpr (kOp == U::kI1e) return M(special::bessel_i(1, double(x), true));
      if constexpr (kOp == U::kNdtri) return M(special::ndtri(double(x)));
      if constexpr (kOp == U::kLogNdtr) return M(special::log_ndtr(double(x)));
      if constexpr (kOp == U::kErfcx) return M(special::erfcx(double(x)));
    }
  }
};

// The cold unary ops, acos through the special functions: each backend instantiates their loops
// once per dtype, calling one out-of-line switch that computes in double, instead of once per op
// and dtype (per-op loops made the kernel files take minutes each to compile).
OFL_HOST_DEVICE constexpr bool cold_unary(UnaryOp op) {
  return op >= UnaryOp::kAcos && op <= UnaryOp::kSphericalBesselJ0;
}

#ifdef __CUDACC__
#define OFL_NOINLINE __noinline__
#else
#define OFL_NOINLINE [[gnu::noinline]]
#endif

OFL_NOINLINE OFL_HOST_DEVICE inline double cold_unary_value(UnaryOp op, double x, double a) {
  using U = UnaryOp;
  switch (op) {
#define OFL_EW_COLD(name) \
  case U::name:           \
    return Unary<U::name, double>{a, 0}(x);
    OFL_EW_COLD(kAcos)
    OFL_EW_COLD(kAsin)
    OFL_EW_COLD(kAtan)
    OFL_EW_COLD(kSinh)
    OFL_EW_COLD(kCosh)
    OFL_EW_COLD(kTan)
    OFL_EW_COLD(kAsinh)
    OFL_EW_COLD(kAcosh)
    OFL_EW_COLD(kAtanh)
    OFL_EW_COLD(kExp2)
    OFL_EW_COLD(kLog2)
    OFL_EW_COLD(kLog10)
    OFL_EW_COLD(kErfc)
    OFL_EW_COLD(kErfinv)
    OFL_EW_COLD(kLgamma)
    OFL_EW_COLD(kDigamma)
    OFL_EW_COLD(kPolygamma)
    OFL_EW_COLD(kI0)
    OFL_EW_COLD(kI0e)
    OFL_EW_COLD(kI1)
    OFL_EW_COLD(kI1e)
    OFL_EW_COLD(kSinc)
    OFL_EW_COLD(kNdtri)
    OFL_EW_COLD(kLogNdtr)
    OFL_EW_COLD(kErfcx)
    OFL_EW_COLD(kEntr)
    OFL_EW_COLD(kBesselJ0)
    OFL_EW_COLD(kBesselJ1)
    OFL_EW_COLD(kBesselY0)
    OFL_EW_COLD(kBesselY1)
    OFL_EW_COLD(kSphericalBesselJ0)
#undef OFL_EW_COLD
    default:
      return NAN;
  }
}

// A cold unary op on M (floating), its scalar a unsaturated (polygamma's order).
template <class M>
struct ColdUnary {
  UnaryOp op;
  double a;
  OFL_HOST_DEVICE M operator()(M x) const { return M(cold_unary_value(op, double(x), a)); }
};

template <UnaryOp kOp>
using UnaryTag = std::integral_constant<UnaryOp, kOp>;

// v in M, saturated into its range (clamp bounds may be +-inf for integer tensors).
template <class M>
M saturate(double v) {
  const double lo = static_cast<double>(std::numeric_limits<M>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<M>::max());
  return static_cast<M>(v < lo ? lo : (v > hi ? hi : v));
}

// Calls run(f) with the function object of `op` on M (not logical_not: its output is bool).
template <class M, class Run>
void visit_unary(UnaryOp op, double a, double b, Run&& run) {
  const M ma = saturate<M>(a), mb = saturate<M>(b);
  auto with = [&](auto tag) { run(Unary<decltype(tag)::value, M>{ma, mb}); };
  using U = UnaryOp;
  if constexpr (std::is_floating_point_v<M>) {  // the exponents with exact forms
    if (op == U::kPowScalar && a == 2.0) return with(UnaryTag<U::kSquare>{});
    if (op == U::kPowScalar && a == 0.5) return with(UnaryTag<U::kSqrt>{});
  }
  switch (op) {
#define OFL_EW_CASE(name) \
  case U::name:           \
    return with(UnaryTag<U::name>{});
    OFL_EW_CASE(kNeg)
    OFL_EW_CASE(kAbs)
    OFL_EW_CASE(kRelu)
    OFL_EW_CASE(kSign)
    OFL_EW_CASE(kSquare)
    OFL_EW_CASE(kClamp)
    OFL_EW_CASE(kPowScalar)
    OFL_EW_CASE(kFloor)
    OFL_EW_CASE(kCeil)
    OFL_EW_CASE(kRound)
    OFL_EW_CASE(kTrunc)
    default:
      break;
  }
  if constexpr (std::is_integral_v<M>) {
    if (op == U::kBitwiseNot) return with(UnaryTag<U::kBitwiseNot>{});
  }
  if constexpr (std::is_floating_point_v<M>) {
    if (cold_unary(op)) return run(ColdUnary<M>{op, a});
    switch (op) {
      OFL_EW_CASE(kExp)
      OFL_EW_CASE(kLog)
      OFL_EW_CASE(kSqrt)
      OFL_EW_CASE(kRsqrt)
      OFL_EW_CASE(kSin)
      OFL_EW_CASE(kCos)
      OFL_EW_CASE(kTanh)
      OFL_EW_CASE(kSigmoid)
      OFL_EW_CASE(kGelu)
      OFL_EW_CASE(kGeluTanh)
      OFL_EW_CASE(kSilu)
      OFL_EW_CASE(kReciprocal)
      OFL_EW_CASE(kLog1p)
      OFL_EW_CASE(kExpm1)
      OFL_EW_CASE(kErf)
      default:
        break;
    }
  }
#undef OFL_EW_CASE
  OFL_CHECK(false, "unary op not supported for this dtype");
}

// Binary op kOp on M (bool: add and maximum are or, mul and minimum and). Comparisons and the
// logical ops return bool.
template <BinaryOp kOp, class M>
struct Binary {
  OFL_HOST_DEVICE auto operator()(M x, M y) const {
    using B = BinaryOp;
    if constexpr (kOp == B::kEq) return x == y;
    if constexpr (kOp == B::kNe) return x != y;
    if constexpr (kOp == B::kLt) return x < y;
    if constexpr (kOp == B::kLe) return x <= y;
    if constexpr (kOp == B::kGt) return x > y;
    if constexpr (kOp == B::kGe) return x >= y;
    if constexpr (kOp == B::kLogicalAnd) return bool(x) && bool(y);
    if constexpr (kOp == B::kLogicalOr) return bool(x) || bool(y);
    if constexpr (kOp == B::kLogicalXor) return bool(x) != bool(y);
    if constexpr (kOp == B::kBitwiseAnd) return M(x & y);
    if constexpr (kOp == B::kBitwiseOr) return M(x | y);
    if constexpr (kOp == B::kBitwiseXor) return M(x ^ y);
    if constexpr (std::is_same_v<M, bool>) {
      if constexpr (kOp == B::kAdd || kOp == B::kMaximum) return M(x || y);
      if constexpr (kOp == B::kMul || kOp == B::kMinimum) return M(x && y);
    } else {
      if constexpr (kOp == B::kAdd) return M(x + y);
      if constexpr (kOp == B::kSub) return M(x - y);
      if constexpr (kOp == B::kMul) return M(x * y);
      if constexpr (kOp == B::kMaximum) return (x != x || x > y) ? x : y;  // NaN propagates
      if constexpr (kOp == B::kMinimum) return (x != x || x < y) ? x : y;
      if constexpr (std::is_floating_point_v<M>) {
        if constexpr (kOp == B::kDiv) return M(x / y);
        if constexpr (kOp == B::kPow) return M(pow(x, y));
        if constexpr (kOp == B::kFloorDiv) return M(floor(x / y));
        if constexpr (kOp == B::kRemainder) {
          const M r = fmod(x, y);
          return (r != 0 && ((r < 0) != (y < 0))) ? M(r + y) : r;
        }
        if constexpr (kOp == B::kLogAddExp) {  // as PyTorch: equal infinities give themselves
          if (isinf(x) && x == y) return x;
          const M m = x > y ? x : y;
          return M(m + log1p(exp(-fabs(x - y))));
        }
        if constexpr (kOp == B::kHypot) return M(hypot(x, y));
        if constexpr (kOp == B::kAtan2) return M(atan2(x, y));
        if constexpr (kOp == B::kCopysign) return M(copysign(x, y));
        if constexpr (kOp == B::kNextafter) return M(nextafter(x, y));
        if constexpr (kOp == B::kFmod) return M(fmod(x, y));
        if constexpr (kOp == B::kFmax) return M(fmax(x, y));
        if constexpr (kOp == B::kFmin) return M(fmin(x, y));
        if constexpr (kOp == B::kXlogy) {  // 0 where x is 0, unless y is NaN
          if (y != y) return y;
          return x == M(0) ? M(0) : M(x * log(y));
        }
        if constexpr (kOp == B::kXlog1py) {
          if (y != y) return y;
          return x == M(0) ? M(0) : M(x * log1p(y));
        }
        if constexpr (kOp == B::kZeta) return M(special::zeta(x, y));
        if constexpr (kOp == B::kIgamma) return M(special::incomplete_gamma(x, y, false));
        if constexpr (kOp == B::kIgammac) return M(special::incomplete_gamma(x, y, true));
        if constexpr (kOp >= B::kChebyshevT && kOp <= B::kLegendreP) {
          constexpr auto kind = special::Polynomial(int(kOp) - int(B::kChebyshevT));
          return M(special::polynomial(kind, x, y));
        }
        if constexpr (kOp == B::kGeluGrad) {  // x, then the incoming gradient
          const CdfPdf<M> n = normal_cdf_pdf(x);
          return M(y * (n.cdf + x * n.pdf));
        }
        if constexpr (kOp == B::kGeluTanhGrad) {
          const M inner = M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x);
          const M t = tanh(inner);
          const M dinner = M(kSqrt2OverPi) * (M(1) + M(3 * 0.044715) * x * x);
          return M(y * (M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * dinner));
        }
        if constexpr (kOp == B::kSiluGrad) {
          const M s = M(1) / (M(1) + exp(-x));
          return M(y * s * (M(1) + x * (M(1) - s)));
        }
        if constexpr (kOp == B::kSigmoidGradFromOutput) return M(y * x * (M(1) - x));
        if constexpr (kOp == B::kTanhGradFromOutput) return M(y * (M(1) - x * x));
      } else {  // integers: Python's floor division and modulo, wrapping as two's complement
        if constexpr (kOp == B::kFloorDiv) return int_floor_div(x, y);
        if constexpr (kOp == B::kRemainder) return int_remainder(x, y);
        if constexpr (kOp == B::kPow) return int_pow(x, y);
        if constexpr (kOp == B::kFmod) return int_fmod(x, y);
        if constexpr (kOp == B::kFmax) return x > y ? x : y;
        if constexpr (kOp == B::kFmin) return x < y ? x : y;
        if constexpr (kOp == B::kGcd) return int_gcd(x, y);
        if constexpr (kOp == B::kLcm) return int_lcm(x, y);
        if constexpr (kOp == B::kBitwiseLeftShift) return shift_left(x, y);
        if constexpr (kOp == B::kBitwiseRightShift) return shift_right(x, y);
      }
    }
  }
};

// The cold binary ops (floating; as cold_unary): atan2, copysign, xlogy, xlog1py, zeta, the
// incomplete gammas and the polynomials. nextafter stays per dtype: it steps in the input's type.
OFL_HOST_DEVICE constexpr bool cold_binary(BinaryOp op) {
  return op >= BinaryOp::kAtan2 && op <= BinaryOp::kLegendreP && op != BinaryOp::kNextafter;
}

OFL_NOINLINE OFL_HOST_DEVICE inline double cold_binary_value(BinaryOp op, double x, double y) {
  using B = BinaryOp;
  switch (op) {
#define OFL_EW_COLD(name) \
  case B::name:           \
    return Binary<B::name, double>{}(x, y);
    OFL_EW_COLD(kAtan2)
    OFL_EW_COLD(kCopysign)
    OFL_EW_COLD(kXlogy)
    OFL_EW_COLD(kXlog1py)
    OFL_EW_COLD(kZeta)
    OFL_EW_COLD(kIgamma)
    OFL_EW_COLD(kIgammac)
    OFL_EW_COLD(kChebyshevT)
    OFL_EW_COLD(kChebyshevU)
    OFL_EW_COLD(kChebyshevV)
    OFL_EW_COLD(kChebyshevW)
    OFL_EW_COLD(kHermiteH)
    OFL_EW_COLD(kHermiteHe)
    OFL_EW_COLD(kLaguerreL)
    OFL_EW_COLD(kLegendreP)
#undef OFL_EW_COLD
    default:
      return NAN;
  }
}

template <class M>
struct ColdBinary {
  BinaryOp op;
  OFL_HOST_DEVICE M operator()(M x, M y) const {
    return M(cold_binary_value(op, double(x), double(y)));
  }
};

template <BinaryOp kOp>
using BinaryTag = std::integral_constant<BinaryOp, kOp>;

// Calls compare(f) for the ops with a bool result, else arith(f), with the function object of
// `op` on M; raises for an op the dtype has no meaning for.
template <class M, class Arith, class Compare>
void visit_binary(BinaryOp op, Arith&& arith, Compare&& compare) {
  using B = BinaryOp;
  switch (op) {
#define OFL_EW_CASE(run, name) \
  case B::name:                \
    return run(Binary<B::name, M>{});
    OFL_EW_CASE(compare, kEq)
    OFL_EW_CASE(compare, kNe)
    OFL_EW_CASE(compare, kLt)
    OFL_EW_CASE(compare, kLe)
    OFL_EW_CASE(compare, kGt)
    OFL_EW_CASE(compare, kGe)
    OFL_EW_CASE(compare, kLogicalAnd)
    OFL_EW_CASE(compare, kLogicalOr)
    OFL_EW_CASE(compare, kLogicalXor)
    OFL_EW_CASE(arith, kAdd)
    OFL_EW_CASE(arith, kMul)
    OFL_EW_CASE(arith, kMaximum)
    OFL_EW_CASE(arith, kMinimum)
    default:
      break;
  }
  if constexpr (std::is_integral_v<M>) {
    switch (op) {
      OFL_EW_CASE(arith, kBitwiseAnd)
      OFL_EW_CASE(arith, kBitwiseOr)
      OFL_EW_CASE(arith, kBitwiseXor)
      default:
        break;
    }
  }
  if constexpr (!std::is_same_v<M, bool>) {
    switch (op) {
      OFL_EW_CASE(arith, kSub)
      OFL_EW_CASE(arith, kFloorDiv)
      OFL_EW_CASE(arith, kRemainder)
      OFL_EW_CASE(arith, kPow)
      OFL_EW_CASE(arith, kFmod)
      OFL_EW_CASE(arith, kFmax)
      OFL_EW_CASE(arith, kFmin)
      default:
        break;
    }
  }
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    switch (op) {
      OFL_EW_CASE(arith, kGcd)
      OFL_EW_CASE(arith, kLcm)
      OFL_EW_CASE(arith, kBitwiseLeftShift)
      OFL_EW_CASE(arith, kBitwiseRightShift)
      default:
        break;
    }
  }
  if constexpr (std::is_floating_point_v<M>) {
    if (cold_binary(op)) return arith(ColdBinary<M>{op});
    switch (op) {
      OFL_EW_CASE(arith, kDiv)
      OFL_EW_CASE(arith, kLogAddExp)
      OFL_EW_CASE(arith, kHypot)
      OFL_EW_CASE(arith, kNextafter)
      OFL_EW_CASE(arith, kGeluGrad)
      OFL_EW_CASE(arith, kGeluTanhGrad)
      OFL_EW_CASE(arith, kSiluGrad)
      OFL_EW_CASE(arith, kSigmoidGradFromOutput)
      OFL_EW_CASE(arith, kTanhGradFromOutput)
      default:
        break;
    }
  }
#undef OFL_EW_CASE
  OFL_CHECK(false, "binary op not supported for this dtype");
}

}  // namespace ofl::internal::ew
