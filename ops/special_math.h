// Special functions of the elementwise families (erfinv, digamma, Hurwitz zeta, the modified
// Bessel functions, the normal quantile, the incomplete gamma functions, orthogonal
// polynomials), written once in double for every backend: host-and-device callable under nvcc.
// Float inputs compute in double and round once, so both backends agree with PyTorch's float32.
#pragma once
#include <math.h>

#include <cstdint>

#ifdef __CUDACC__
#define OFL_SPECIAL_FN __host__ __device__ inline
#else
#define OFL_SPECIAL_FN inline
#endif

namespace ofl::internal::special {

inline constexpr double kPi = 3.141592653589793;
inline constexpr double kSqrtPi = 1.7724538509055159;
inline constexpr double kSqrt2 = 1.4142135623730951;
inline constexpr double kSqrt2Pi = 2.5066282746310002;
inline constexpr double kEps = 1.1102230246251565e-16;

// Inverse error function: Giles' single-precision approximation, refined by Newton steps on erf.
OFL_SPECIAL_FN double erfinv(double x) {
  if (!(x >= -1 && x <= 1)) return NAN;
  if (x == 1) return INFINITY;
  if (x == -1) return -INFINITY;
  double w = -::log((1.0 - x) * (1.0 + x)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = ::sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  for (int i = 0; i < 2; ++i) y -= (::erf(y) - x) / (2.0 / kSqrtPi * ::exp(-y * y));
  return y;
}

// psi(x): the reflection formula below 0, the recurrence up to 10, then the asymptotic series.
OFL_SPECIAL_FN double digamma(double x) {
  if (x == 0) return 1 / x < 0 ? INFINITY : -INFINITY;  // PyTorch: -inf at +0
  if (x < 0) {
    if (x == ::floor(x)) return NAN;
    return digamma(1 - x) - kPi / ::tan(kPi * x);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  // Sum of B_2k / (2k z^-k) for k = 1..7.
  const double series =
      z * (1.0 / 12 -
           z * (1.0 / 120 -
                z * (1.0 / 252 -
                     z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return result + ::log(x) - 0.5 / x - series;
}

// Hurwitz zeta(s, q) = sum over k >= 0 of (q + k)^-s, by Euler-Maclaurin summation.
OFL_SPECIAL_FN double zeta(double s, double q) {
  if (s == 1) return INFINITY;
  if (s < 1 || s != s || q != q) return NAN;
  if (q <= 0) {
    if (q == ::floor(q)) return INFINITY;
    if (s != ::floor(s)) return NAN;  // (q + k)^-s is not real
  }
  const double shift = 10 + s;
  double sum = 0, a = q;
  while (a < shift) {
    const double term = ::pow(a, -s);
    sum += term;
    a += 1;
    // A large s makes the terms vanish at once: stop there rather than count up to s + 10
    // (s = 1e17 would loop for years); what is left is below the sum's last bit.
    if (a > 9 && ::fabs(term) <= kEps * ::fabs(sum)) return sum;
  }
  // B_2j / (2j)!, j = 1..12.
  const double b[] = {1.0 / 6 / 2,
                      -1.0 / 30 / 24,
                      1.0 / 42 / 720,
                      -1.0 / 30 / 40320,
                      5.0 / 66 / 3628800,
                      -691.0 / 2730 / 479001600,
                      7.0 / 6 / 87178291200.0,
                      -3617.0 / 510 / 20922789888000.0,
                      43867.0 / 798 / 6402373705728000.0,
                      -174611.0 / 330 / 2432902008176640000.0,
                      854513.0 / 138 / 1.1240007277776077e21,
                      -236364091.0 / 2730 / 6.204484017332394e23};
  sum += ::pow(a, 1 - s) / (s - 1) + 0.5 * ::pow(a, -s);
  double rising = s, power = ::pow(a, -s - 1);  // s (s+1) ... (s+2j-2), a^(-s-2j+1)
  for (int j = 0; j < 12; ++j) {
    const double term = b[j] * rising * power;
    sum += term;
    if (::fabs(term) < kEps * ::fabs(sum)) break;
    rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
    power /= a * a;
  }
  return sum;
}

// The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x).
OFL_SPECIAL_FN double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  double factorial = 1;
  for (int64_t i = 2; i <= n; ++i) factorial *= double(i);
  return ((n % 2) ? 1.0 : -1.0) * factorial * zeta(double(n + 1), x);
}

// I_nu(x) for nu = 0 or 1, times exp(-|x|) when scaled: the power series up to |x| = 20, the
// asymptotic expansion above.
OFL_SPECIAL_FN double bessel_i(int nu, double x, bool scaled) {
  const double ax = ::fabs(x);
  double result;
  if (ax <= 20) {
    const double y = 0.25 * ax * ax;
    double term = nu ? 0.5 * ax : 1.0, sum = term;
    for (int k = 1; k < 200 && term > kEps * 0.1 * sum; ++k) {
      term *= y / (double(k) * double(k + nu));
      sum += term;
    }
    result = scaled ? sum * ::exp(-ax) : sum;
  } else {
    const double mu = 4.0 * nu * nu;
    double term = 1, sum = 1;
    for (int k = 1; k < 40; ++k) {
      term *= -(mu - double(2 * k - 1) * double(2 * k - 1)) / (double(k) * 8 * ax);
      sum += term;
      if (::fabs(term) < kEps * 0.1 * ::fabs(sum)) break;
    }
    result = sum / ::sqrt(2 * kPi * ax);
    if (!scaled) result = ax > 700 ? INFINITY : result * ::exp(ax);
  }
  return (nu == 1 && x < 0) ? -result : result;
}

// exp(x^2) erfc(x), without overflow for large x.
OFL_SPECIAL_FN double erfcx(double x) {
  if (x != x) return x;
  if (x < 26) {
    if (x < -26.7) return INFINITY;
    const double hi = x * x, lo = ::fma(x, x, -hi);  // x^2 exactly, as hi + lo
    return ::exp(hi) * (1 + lo) * ::erfc(x);
  }
  const double z = 1 / (2 * x * x);  // the asymptotic series
  double term = 1, sum = 1;
  for (int k = 1; k < 12; ++k) {
    term *= -double(2 * k - 1) * z;
    sum += term;
  }
  return sum / (x * kSqrtPi);
}

// log of the standard normal CDF, accurate far into both tails.
OFL_SPECIAL_FN double log_ndtr(double x) {
  if (x < 0) return ::log(0.5 * erfcx(-x / kSqrt2)) - 0.5 * x * x;
  return ::log1p(-0.5 * ::erfc(x / kSqrt2));
}

// The standard normal quantile: an Abramowitz-Stegun start refined by Halley steps on
// 0.5 erfc(-x / sqrt 2), which is accurate in the lower tail.
OFL_SPECIAL_FN double ndtri(double p) {
  if (!(p >= 0 && p <= 1)) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  const bool upper = p > 0.5;
  const double q = upper ? 1 - p : p;
  const double t = ::sqrt(-2 * ::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 4; ++i) {
    const double e = 0.5 * ::erfc(-x / kSqrt2) - q;
    if (e == 0) break;
    const double u = e * kSqrt2Pi * ::exp(0.5 * x * x);
    x -= u / (1 + 0.5 * x * u);
  }
  return upper ? -x : x;
}

// The regularized lower (upper = false) or upper incomplete gamma function: the series below
// x = a + 1, Lentz's continued fraction above.
OFL_SPECIAL_FN double incomplete_gamma(double a, double x, bool upper) {
  if (a < 0 || x < 0 || a != a || x != x) return NAN;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : NAN;
  if (x == 0) return upper ? 1.0 : 0.0;
  if (x == INFINITY) return upper ? 0.0 : 1.0;
  if (a == INFINITY) return upper ? 1.0 : 0.0;
  const double log_front = -x + a * ::log(x) - ::lgamma(a);
  if (x < a + 1) {
    double ap = a, term = 1 / a, sum = term;
    for (int i = 0; i < 10000; ++i) {
      ap += 1;
      term *= x / ap;
      sum += term;
      if (::fabs(term) < ::fabs(sum) * kEps) break;
    }
    const double lower = sum * ::exp(log_front);
    return upper ? 1 - lower : lower;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (::fabs(step - 1) < kEps) break;
  }
  const double up = ::exp(log_front) * h;
  return upper ? up : 1 - up;
}

// The orthogonal polynomials of torch.special at degree n, by their three-term recurrences.
enum class Polynomial {
  kChebyshevT,
  kChebyshevU,
  kChebyshevV,
  kChebyshevW,
  kHermiteH,
  kHermiteHe,
  kLaguerreL,
  kLegendreP,
};

// The highest degree evaluated: the recurrences take n steps an element (a degree of 1e17 would
// loop for years); beyond it the result is NaN.
inline constexpr int64_t kMaxPolynomialDegree = int64_t(1) << 20;

OFL_SPECIAL_FN double polynomial(Polynomial kind, double x, double degree) {
  if (x != x || degree != degree) return NAN;
  if (degree <= -1) return 0;  // the degree truncates toward zero: -0.5 is degree 0
  if (degree > double(kMaxPolynomialDegree)) return NAN;
  const int64_t n = int64_t(degree);
  if (n == 0) return 1;
  double p0 = 1, p1;
  switch (kind) {
    case Polynomial::kChebyshevT:
      p1 = x;
      break;
    case Polynomial::kChebyshevU:
      p1 = 2 * x;
      break;
    case Polynomial::kChebyshevV:
      p1 = 2 * x - 1;
      break;
    case Polynomial::kChebyshevW:
      p1 = 2 * x + 1;
      break;
    case Polynomial::kHermiteH:
      p1 = 2 * x;
      break;
    case Polynomial::kHermiteHe:
      p1 = x;
      break;
    case Polynomial::kLaguerreL:
      p1 = 1 - x;
      break;
    default:
      p1 = x;
      break;
  }
  for (int64_t k = 1; k < n && p1 - p1 == 0; ++k) {  // past overflow it stays inf or NaN
    const double kd = double(k);
    double next;
    switch (kind) {
      case Polynomial::kHermiteH:
        next = 2 * x * p1 - 2 * kd * p0;
        break;
      case Polynomial::kHermiteHe:
        next = x * p1 - kd * p0;
        break;
      case Polynomial::kLaguerreL:
        next = ((2 * kd + 1 - x) * p1 - kd * p0) / (kd + 1);
        break;
      case Polynomial::kLegendreP:
        next = ((2 * kd + 1) * x * p1 - kd * p0) / (kd + 1);
        break;
      default:
        next = 2 * x * p1 - p0;
        break;
    }
    p0 = p1;
    p1 = next;
  }
  return p1;
}

}  // namespace ofl::internal::special
