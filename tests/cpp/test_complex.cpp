// Tier (a)/(b): complex64 and complex128 views, the dispatcher's refusal of complex tensors
// for other ops, casts into and out of complex, and complex multiplication as float ops.
#include <gtest/gtest.h>

#include <string>

#include "core/primitives.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

Tensor floats(const Shape& shape, std::initializer_list<float> values) {
  Tensor t = Tensor::empty(shape, DType::kFloat32);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

}  // namespace

TEST(Complex, ViewAsComplexAndViewAsRealShareMemory) {
  Tensor x = floats({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor z = view_as_complex(x);
  EXPECT_EQ(z.dtype(), DType::kComplex64);
  EXPECT_EQ(z.shape(), Shape({3}));
  EXPECT_EQ(z.storage(), x.storage());
  Tensor r = view_as_real(z);
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_EQ(r.shape(), Shape({3, 2}));
  EXPECT_EQ(r.raw_data(), x.raw_data());
}

TEST(Complex, ViewAsComplexNeedsAUnitLastStrideAndEvenOthers) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  EXPECT_NE(error_of([&] { view_as_complex(transpose(x, 0, 1)); }).find("stride 1"),
            std::string::npos);
  EXPECT_NE(error_of<TypeError>([&] {
              view_as_complex(to_dtype(x, DType::kFloat16));
            }).find("[view_as_complex]"),
            std::string::npos);
}

TEST(Complex, OtherOpsRaiseNamingTheOpAndComplex64) {
  Tensor z = view_as_complex(floats({2, 2}, {1, 2, 3, 4}));
  const std::string msg = error_of<TypeError>([&] { exp(z); });
  EXPECT_NE(msg.find("[exp] is not supported for complex64"), std::string::npos) << msg;
  EXPECT_NE(error_of<TypeError>([&] { sum(z, {0}, false); }).find("[sum]"), std::string::npos);
}

TEST(Complex, CastsZeroTheImaginaryPartAndDropIt) {
  Tensor z = to_dtype(floats({2}, {1.5f, -2}), DType::kComplex64);
  const float* p = z.data<float>();
  EXPECT_EQ(p[0], 1.5f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_EQ(p[2], -2.0f);
  EXPECT_EQ(p[3], 0.0f);
  Tensor back = to_dtype(view_as_complex(floats({1, 2}, {7, 8})), DType::kFloat64);
  EXPECT_EQ(back.data<double>()[0], 7.0);
}

TEST(Complex, MulIsComplexMultiplicationWithBroadcasting) {
  // (1 + 2i)(3 - i) = 5 + 5i and (1 + 2i) * 2 = 2 + 4i
  Tensor a = view_as_complex(floats({1, 2}, {1, 2}));
  Tensor b = view_as_complex(floats({2, 2}, {3, -1, 2, 0}));
  Tensor r = contiguous(view_as_real(mul(a, b)));
  const float* p = r.data<float>();
  EXPECT_FLOAT_EQ(p[0], 5);
  EXPECT_FLOAT_EQ(p[1], 5);
  EXPECT_FLOAT_EQ(p[2], 2);
  EXPECT_FLOAT_EQ(p[3], 4);
}

TEST(Complex, Complex128IsFloat64PairsAndCastsToAndFromComplex64) {
  Tensor x = to_dtype(floats({2, 2}, {1, 2, 3, 4}), DType::kFloat64);
  Tensor z = view_as_complex(x);
  EXPECT_EQ(z.dtype(), DType::kComplex128);
  EXPECT_EQ(z.storage(), x.storage());
  EXPECT_EQ(view_as_real(z).dtype(), DType::kFloat64);
  Tensor narrow = to_dtype(z, DType::kComplex64);
  EXPECT_EQ(narrow.data<float>()[3], 4.0f);
  Tensor wide = to_dtype(floats({1}, {2.5f}), DType::kComplex128);
  EXPECT_EQ(wide.data<double>()[0], 2.5);
  EXPECT_EQ(wide.data<double>()[1], 0.0);
}

TEST(Complex, Complex64TimesFloat64IsComplex128) {
  // (1 + 2i) * 3 = 3 + 6i, computed in float64 as PyTorch's promotion says
  Tensor a = view_as_complex(floats({1, 2}, {1, 2}));
  Tensor b = to_dtype(floats({1}, {3}), DType::kFloat64);
  Tensor r = mul(a, b);
  EXPECT_EQ(r.dtype(), DType::kComplex128);
  Tensor p = contiguous(view_as_real(r));
  EXPECT_EQ(p.data<double>()[0], 3.0);
  EXPECT_EQ(p.data<double>()[1], 6.0);
}
