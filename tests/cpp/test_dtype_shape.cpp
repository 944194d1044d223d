// Tier (a): dtype promotion, names, 16-bit float conversions, and shape helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

constexpr DType kAll[] = {DType::kBool,    DType::kUInt8,     DType::kInt8,      DType::kInt32,
                          DType::kInt64,   DType::kFloat16,   DType::kBFloat16,  DType::kFloat32,
                          DType::kFloat64, DType::kComplex64, DType::kComplex128};
static_assert(std::size(kAll) == kNumDTypes);

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST(DType, PromotionFollowsPyTorchTable) {
  using D = DType;
  // Rows and columns in enum order: b, u8, i8, i32, i64, f16, bf16, f32, f64. PyTorch's table
  // with int16 removed, so uint8 with int8 widens to int32; complex (checked below) wins.
  const D table[9][9] = {
      {D::kBool, D::kUInt8, D::kInt8, D::kInt32, D::kInt64, D::kFloat16, D::kBFloat16, D::kFloat32,
       D::kFloat64},
      {D::kUInt8, D::kUInt8, D::kInt32, D::kInt32, D::kInt64, D::kFloat16, D::kBFloat16,
       D::kFloat32, D::kFloat64},
      {D::kInt8, D::kInt32, D::kInt8, D::kInt32, D::kInt64, D::kFloat16, D::kBFloat16, D::kFloat32,
       D::kFloat64},
      {D::kInt32, D::kInt32, D::kInt32, D::kInt32, D::kInt64, D::kFloat16, D::kBFloat16,
       D::kFloat32, D::kFloat64},
      {D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kFloat16, D::kBFloat16,
       D::kFloat32, D::kFloat64},
      {D::kFloat16, D::kFloat16, D::kFloat16, D::kFloat16, D::kFloat16, D::kFloat16, D::kFloat32,
       D::kFloat32, D::kFloat64},
      {D::kBFloat16, D::kBFloat16, D::kBFloat16, D::kBFloat16, D::kBFloat16, D::kFloat32,
       D::kBFloat16, D::kFloat32, D::kFloat64},
      {D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat32,
       D::kFloat32, D::kFloat64},
      {D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64,
       D::kFloat64, D::kFloat64},
  };
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 9; ++j)
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), table[i][j])
          << dtype_name(kAll[i]) << " + " << dtype_name(kAll[j]);
}

TEST(DType, ComplexWithFloat64OrComplex128IsComplex128AndOtherwiseComplex64) {
  for (DType t : kAll) {
    const bool wide = t == DType::kFloat64 || t == DType::kComplex128;
    const DType want = wide ? DType::kComplex128 : DType::kComplex64;
    EXPECT_EQ(promote_types(DType::kComplex64, t), want) << dtype_name(t);
    EXPECT_EQ(promote_types(t, DType::kComplex64), want) << dtype_name(t);
    EXPECT_EQ(promote_types(DType::kComplex128, t), DType::kComplex128) << dtype_name(t);
    EXPECT_EQ(promote_types(t, DType::kComplex128), DType::kComplex128) << dtype_name(t);
  }
}

TEST(DType, UInt8WithInt8WidensToInt32AndHalfWithBFloat16ToFloat32) {
  EXPECT_EQ(promote_types(DType::kUInt8, DType::kInt8), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kInt8, DType::kUInt8), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kBFloat16, DType::kFloat16), DType::kFloat32);
}

TEST(DType, NamesRoundTripAndAliasesResolve) {
  for (DType t : kAll) EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  EXPECT_STREQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_from_name("float"), DType::kFloat32);
  EXPECT_EQ(dtype_from_name("double"), DType::kFloat64);
  EXPECT_EQ(dtype_from_name("half"), DType::kFloat16);
  EXPECT_EQ(dtype_from_name("long"), DType::kInt64);
  EXPECT_EQ(dtype_from_name("int"), DType::kInt32);
  EXPECT_EQ(dtype_from_name("cfloat"), DType::kComplex64);
  EXPECT_STREQ(dtype_name(DType::kComplex64), "complex64");
  EXPECT_EQ(dtype_from_name("cdouble"), DType::kComplex128);
  EXPECT_STREQ(dtype_name(DType::kComplex128), "complex128");
}

TEST(DType, UnknownNameIsTypeErrorQuotingTheName) {
  std::string msg = error_of<TypeError>([] { dtype_from_name("int16"); });
  EXPECT_NE(msg.find("[dtype]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'int16'"), std::string::npos) << msg;
}

TEST(DType, ItemsizeAndKindPredicates) {
  const size_t sizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8, 8, 16};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(itemsize(kAll[i]), sizes[i]) << dtype_name(kAll[i]);
    EXPECT_EQ(is_floating(kAll[i]) + is_integral(kAll[i]) + is_complex(kAll[i]), 1)
        << dtype_name(kAll[i]);
  }
  EXPECT_TRUE(is_differentiable(DType::kComplex64) && is_differentiable(DType::kFloat16));
  EXPECT_FALSE(is_differentiable(DType::kInt64));
  EXPECT_TRUE(is_integral(DType::kBool));
  EXPECT_EQ(sum_dtype(DType::kBool), DType::kInt64);
  EXPECT_EQ(sum_dtype(DType::kInt8), DType::kInt64);
  EXPECT_EQ(sum_dtype(DType::kBFloat16), DType::kBFloat16);
}

TEST(Half, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);  // largest finite
  // Spacing above 1 is 2^-10: a tie rounds to the even mantissa.
  EXPECT_EQ(Half(1.0f + 0x1p-11f).bits, 0x3c00);             // tie, down to even
  EXPECT_EQ(Half(1.0f + 3 * 0x1p-11f).bits, 0x3c02);         // tie, up to even
  EXPECT_EQ(Half(1.0f + 0x1p-11f + 0x1p-20f).bits, 0x3c01);  // above the tie
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);                    // rounds past max to inf
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(Half(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(Half(0x1p-24f)), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(Half(0.1f)), 0.0999755859375f);
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-1.0f).bits, 0xbf80);
  // Spacing above 1 is 2^-7: ties go to the even mantissa.
  EXPECT_EQ(BFloat16(from_bits(0x3f808000)).bits, 0x3f80);              // tie, down to even
  EXPECT_EQ(BFloat16(from_bits(0x3f818000)).bits, 0x3f82);              // tie, up to even
  EXPECT_EQ(BFloat16(from_bits(0x3f808001)).bits, 0x3f81);              // above the tie
  EXPECT_EQ(BFloat16(from_bits(0x3f807fff)).bits, 0x3f80);              // below the tie
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds to inf
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(BFloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  // A NaN whose payload sits only in the low bits must not collapse to inf.
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(from_bits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(from_bits(0xffffffff)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
}

TEST(Shape, BroadcastAlignsTrailingDimensions) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}, "add"), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {5}, "add"), (Shape{5}));
  EXPECT_EQ(broadcast_shapes({3}, {}, "add"), (Shape{3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 7}, "add"), (Shape{0, 7}));
  EXPECT_EQ(broadcast_shapes({1}, {0}, "add"), (Shape{0}));
}

TEST(Shape, BroadcastFailureNamesOpAndBothShapes) {
  std::string msg = error_of<Error>([] { broadcast_shapes({2, 3}, {4}, "mul"); });
  EXPECT_EQ(msg.rfind("[mul] ", 0), 0u) << msg;
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
}

TEST(Shape, NormalizeAxisWrapsNegativesAndRaisesIndexError) {
  EXPECT_EQ(normalize_axis(-1, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(0, 3, "sum"), 0);
  EXPECT_EQ(normalize_axis(-3, 3, "sum"), 0);
  EXPECT_EQ(normalize_axis(-1, 0, "sum"), 0);  // 0-d accepts 0 and -1
  EXPECT_EQ(normalize_axis(0, 0, "sum"), 0);
  EXPECT_THROW(normalize_axis(3, 3, "sum"), IndexError);
  EXPECT_THROW(normalize_axis(-4, 3, "sum"), IndexError);
  EXPECT_THROW(normalize_axis(1, 0, "sum"), IndexError);
  std::string msg = error_of<IndexError>([] { normalize_axis(5, 2, "softmax"); });
  EXPECT_EQ(msg.rfind("[softmax] ", 0), 0u) << msg;
  EXPECT_NE(msg.find("[-2, 1]"), std::string::npos) << msg;
}

TEST(Shape, ContiguousStridesAreRowMajorInElements) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({5}), (Shape{1}));
  EXPECT_EQ(contiguous_strides({}), (Shape{}));
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Shape{3, 3, 1}));  // zero-size dims count as 1
  EXPECT_EQ(numel_of({2, 3, 4}), 24);
  EXPECT_EQ(numel_of({}), 1);
  EXPECT_EQ(numel_of({2, 0}), 0);
}

TEST(Shape, StrFormatsLikePythonTuples) {
  EXPECT_EQ(shape_str({}), "()");
  EXPECT_EQ(shape_str({3}), "(3,)");
  EXPECT_EQ(shape_str({2, 3}), "(2, 3)");
  EXPECT_EQ(shape_str({1, 0, 7}), "(1, 0, 7)");
}
