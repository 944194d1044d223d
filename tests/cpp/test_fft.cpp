// Tier (a)/(b): _fft_c2c against a direct DFT for radix-2/3/4/5 lengths, generic small primes
// and Bluestein's lengths, along an inner and an outer axis; the scaled inverse round trip; and
// the op's argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "ops/fft.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

using Z = std::complex<double>;

// A complex128 tensor of `shape` holding deterministic values.
Tensor signal(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kComplex128);
  double* p = t.data<double>();
  for (int64_t i = 0; i < 2 * t.numel(); ++i) p[i] = std::sin(0.7 * double(i) + 0.3) + 0.1 * i;
  return t;
}

Z at(const Tensor& t, int64_t i) {
  const double* p = contiguous(t).data<double>();
  return {p[2 * i], p[2 * i + 1]};
}

}  // namespace

TEST(Fft, MatchesTheDirectDftAlongEitherAxis) {
  for (int64_t n : {1, 6, 7, 12, 16, 30, 37, 97}) {
    for (int64_t axis : {0, 1}) {
      const Shape shape = axis == 0 ? Shape{n, 3} : Shape{3, n};
      const Tensor x = signal(shape);
      const Tensor y = fft_c2c(x, axis, /*forward=*/true, 1.0);
      double worst = 0, scale = 0;
      for (int64_t lane = 0; lane < 3; ++lane)
        for (int64_t k = 0; k < n; ++k) {
          Z want = 0;
          for (int64_t j = 0; j < n; ++j) {
            const double angle = -2.0 * std::numbers::pi * double(j * k % n) / double(n);
            want += at(x, axis == 0 ? j * 3 + lane : lane * n + j) * std::polar(1.0, angle);
          }
          const Z got = at(y, axis == 0 ? k * 3 + lane : lane * n + k);
          worst = std::max(worst, std::abs(got - want));
          scale = std::max(scale, std::abs(want));
        }
      EXPECT_LT(worst, 1e-12 * scale * n) << "n=" << n << " axis=" << axis;
    }
  }
}

TEST(Fft, ScaledInverseUndoesTheForwardInComplex64Too) {
  for (DType dtype : {DType::kComplex128, DType::kComplex64}) {
    const Tensor x = to_dtype(signal({4, 45}), dtype);
    const Tensor back = fft_c2c(fft_c2c(x, 1, true, 1.0), 1, false, 1.0 / 45);
    EXPECT_EQ(back.dtype(), dtype);
    const Tensor a = to_dtype(x, DType::kComplex128), b = to_dtype(back, DType::kComplex128);
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(at(a, i) - at(b, i)));
    EXPECT_LT(worst, dtype == DType::kComplex64 ? 1e-4 : 1e-12);
  }
}

TEST(Fft, RefusesRealInputsEmptyAxesAndBadDims) {
  const Tensor real = Tensor::empty({4}, DType::kFloat32);
  EXPECT_NE(error_of<TypeError>([&] { fft_c2c(real, 0, true, 1.0); }).find("[_fft_c2c]"),
            std::string::npos);
  const std::string empty = error_of([&] { fft_c2c(signal({2, 0}), 1, true, 1.0); });
  EXPECT_NE(empty.find("Invalid number of data points (0)"), std::string::npos) << empty;
  EXPECT_FALSE(error_of<IndexError>([&] { fft_c2c(signal({2, 3}), 2, true, 1.0); }).empty());
}
