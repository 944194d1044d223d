// The strided loop planner (tier a: the LoopPlan itself) and the counter-based Philox
// generator behind every random op.
#include <gtest/gtest.h>

#include "test_util.h"

#include <atomic>
#include <cmath>
#include <set>

#include "core/loop.h"
#include "core/random.h"
#include "ops/ops.h"

using namespace ofl::internal;

namespace {

std::vector<float> floats(const Tensor& t) {
  Tensor c = contiguous(to_dtype(t, DType::kFloat32));
  return {c.data<float>(), c.data<float>() + c.numel()};
}

}  // namespace

TEST(Loop, ContiguousOperandsCoalesceIntoOneDimension) {
  Tensor out = zeros({2, 3, 4}), in = zeros({2, 3, 4});
  auto plan = make_loop<2>(out.shape(), {&out, &in});
  EXPECT_EQ(plan.shape, (Shape{24}));
  EXPECT_EQ(plan.strides[0], (std::vector<int64_t>{4}));
  EXPECT_EQ(plan.strides[1], (std::vector<int64_t>{4}));
  EXPECT_EQ(plan.base[0], out.raw_data());
  EXPECT_EQ(plan.base[1], in.raw_data());
}

TEST(Loop, StridesAreInBytesOfEachOperandsDtype) {
  Tensor out = zeros({2, 3}, DType::kFloat64), in = zeros({2, 3}, DType::kInt8);
  auto plan = make_loop<2>(out.shape(), {&out, &in});
  EXPECT_EQ(plan.shape, (Shape{6}));
  EXPECT_EQ(plan.strides[0], (std::vector<int64_t>{8}));
  EXPECT_EQ(plan.strides[1], (std::vector<int64_t>{1}));
}

TEST(Loop, BroadcastInnerOperandKeepsZeroStrideAndSplitsOnlyWhereNeeded) {
  // b (4,) under (2, 3, 4): the two outer dims are broadcast for b and merge with each other.
  Tensor out = zeros({2, 3, 4}), b = zeros({4});
  auto plan = make_loop<2>(out.shape(), {&out, &b});
  EXPECT_EQ(plan.shape, (Shape{6, 4}));
  EXPECT_EQ(plan.strides[0], (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(plan.strides[1], (std::vector<int64_t>{0, 4}));
}

TEST(Loop, BroadcastOuterOperandMergesItsTrailingBroadcastDims) {
  Tensor out = zeros({2, 3, 4}), b = zeros({2, 1, 1});
  auto plan = make_loop<2>(out.shape(), {&out, &b});
  EXPECT_EQ(plan.shape, (Shape{2, 12}));
  EXPECT_EQ(plan.strides[0], (std::vector<int64_t>{48, 4}));
  EXPECT_EQ(plan.strides[1], (std::vector<int64_t>{4, 0}));
}

TEST(Loop, TransposedOperandIsNotCoalesced) {
  Tensor out = zeros({3, 2});
  Tensor t = transpose(zeros({2, 3}), 0, 1);  // element strides (1, 3)
  auto plan = make_loop<2>(out.shape(), {&out, &t});
  EXPECT_EQ(plan.shape, (Shape{3, 2}));
  EXPECT_EQ(plan.strides[0], (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(plan.strides[1], (std::vector<int64_t>{4, 12}));
}

TEST(Loop, SizeOneDimsAreDroppedAndZeroDimIsOneElement) {
  Tensor out = zeros({1, 5, 1}), in = zeros({1, 5, 1});
  auto plan = make_loop<2>(out.shape(), {&out, &in});
  EXPECT_EQ(plan.shape, (Shape{5}));

  Tensor s = zeros({}), r = zeros({});
  auto scalar = make_loop<2>(s.shape(), {&s, &r});
  EXPECT_EQ(scalar.shape, (Shape{1}));
  EXPECT_EQ(scalar.strides[0], (std::vector<int64_t>{0}));
}

TEST(Loop, RunLoopVisitsEveryElementOnceThroughStridedViews) {
  // Copies a transposed view through run_loop and checks every element landed once.
  const int64_t R = 37, C = 300;  // large enough to be split across threads
  Tensor src = arange(0, R * C, 1, DType::kFloat32);
  Tensor t = transpose(view(src, {R, C}), 0, 1);
  Tensor out = full({C, R}, -1.0);
  auto plan = make_loop<2>(out.shape(), {&out, &t});
  std::atomic<int64_t> visited{0};
  run_loop<2>(plan, [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<float*>(p[0] + i * s[0]) = *reinterpret_cast<float*>(p[1] + i * s[1]);
    visited += n;
  });
  EXPECT_EQ(visited.load(), R * C);
  const float* o = out.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < R; ++r) ASSERT_EQ(o[c * R + r], static_cast<float>(r * C + c));
}

TEST(Philox, MatchesRandom123KnownAnswer) {
  // Random123's kat_vectors: philox4x32_10, counter {0,0,0,0}, key {0,0}.
  auto r = philox4x32(0, 0);
  EXPECT_EQ(r, (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, SameSeedAndCounterGiveSameNumbersOthersDiffer) {
  EXPECT_EQ(philox4x32(42, 7), philox4x32(42, 7));
  EXPECT_EQ(philox_uniform(42, 7), philox_uniform(42, 7));
  EXPECT_EQ(philox_normal(42, 7), philox_normal(42, 7));
  EXPECT_NE(philox4x32(42, 7), philox4x32(43, 7));
  EXPECT_NE(philox4x32(42, 7), philox4x32(42, 8));
  // The high half of the counter and of the seed matter too.
  EXPECT_NE(philox4x32(1, 7), philox4x32(1 + (1ull << 32), 7));
  EXPECT_NE(philox4x32(1, 7), philox4x32(1, 7 + (1ull << 32)));
  std::set<double> distinct;
  for (uint64_t c = 0; c < 1000; ++c) distinct.insert(philox_uniform(c, 3));
  EXPECT_EQ(distinct.size(), 1000u);
}

TEST(Philox, UniformIsInUnitIntervalWithMeanHalf) {
  const int n = 100000;
  double sum = 0, lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    double u = philox_uniform(static_cast<uint64_t>(i), 1234);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);  // sd of the mean is 0.0009
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
}

TEST(Philox, NormalHasMeanZeroAndUnitStd) {
  const int n = 100000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    double z = philox_normal(static_cast<uint64_t>(i), 99);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sq += z * z;
  }
  double m = sum / n, sd = std::sqrt(sq / n - m * m);
  EXPECT_NEAR(m, 0.0, 0.015);  // sd of the mean is 0.003
  EXPECT_NEAR(sd, 1.0, 0.015);
}

TEST(Random, RandnTensorHasMeanZeroAndUnitStd) {
  Generator gen(5);
  Tensor z = randn({100000}, DType::kFloat32, &gen);
  EXPECT_NEAR(mean(z).item<double>(), 0.0, 0.015);
  EXPECT_NEAR(ofl::internal::std(z).item<double>(), 1.0, 0.015);
}

TEST(Random, DrawIsASliceOfALargerDrawAtTheSameOffset) {
  // Counter-based: element i of a draw uses counter offset + i, whatever the tensor's shape.
  Generator big_gen(2024);
  Tensor big = rand({4, 5}, DType::kFloat32, &big_gen);
  EXPECT_EQ(big_gen.offset(), 20u);

  Generator part_gen(2024);
  part_gen.set_offset(7);
  Tensor part = rand({2, 3}, DType::kFloat32, &part_gen);
  EXPECT_EQ(part_gen.offset(), 13u);
  auto b = floats(big), p = floats(part);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p[i], b[7 + i]) << "element " << i;

  // The next draw continues where the last one stopped.
  Generator cont_gen(2024);
  rand({7}, DType::kFloat32, &cont_gen);
  auto rest = floats(rand({13}, DType::kFloat32, &cont_gen));
  for (int i = 0; i < 13; ++i) EXPECT_EQ(rest[i], b[7 + i]) << "element " << i;
}

TEST(Random, ManualSeedReproducesTheDefaultGeneratorsStream) {
  default_generator().manual_seed(123);
  auto a1 = floats(randn({8}));
  auto a2 = floats(rand({8}));
  default_generator().manual_seed(123);
  EXPECT_EQ(default_generator().offset(), 0u);
  EXPECT_EQ(floats(randn({8})), a1);
  EXPECT_EQ(floats(rand({8})), a2);
  default_generator().manual_seed(124);
  EXPECT_NE(floats(randn({8})), a1);
}

TEST(Random, RandStaysBelowOneInEveryFloatDtype) {
  // Rounding a double in [0, 1) to a narrow float can reach 1.0 (1 - 2^-12 -> 1 in float16).
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    Generator gen(11);
    Tensor u = rand({200000}, dt, &gen);
    EXPECT_LT(amax(u).item<double>(), 1.0) << dtype_name(dt);
    EXPECT_GE(amin(u).item<double>(), 0.0) << dtype_name(dt);
  }
}

TEST(Random, Float32RandAtACounterWhoseDoubleRoundsUpToOneStaysBelowOne) {
  // philox_uniform(14886640, 0) = 0.99999998433..., which rounds to 1.0f.
  ASSERT_GE(static_cast<float>(philox_uniform(14886640, 0)), 1.0f);
  Generator gen(0);
  gen.set_offset(14886640);
  float u = rand({1}, DType::kFloat32, &gen).item<float>();
  EXPECT_LT(u, 1.0f);
  EXPECT_EQ(u, 1.0f - 0x1p-24f);
}

TEST(Random, RandintStaysInHalfOpenRangeAndHitsBothEnds) {
  Generator gen(3);
  Tensor r = randint(-2, 3, {10000}, DType::kInt64, &gen);
  const int64_t* p = r.data<int64_t>();
  std::set<int64_t> seen(p, p + r.numel());
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 0, 1, 2}));
}

TEST(Loop, MoreDimensionsThanALoopHoldsRaiseClearly) {
  // Even filling such a tensor runs a loop.
  EXPECT_NE(ofl::internal::testing::error_of([] {
              zeros(Shape(kMaxLoopDims + 1, 1));
            }).find("[elementwise] tensors of more than 64 dimensions are not supported, got 65"),
            std::string::npos);
  Tensor most = zeros(Shape(kMaxLoopDims, 1)), other = zeros(Shape(kMaxLoopDims, 1));
  EXPECT_EQ(make_loop<2>(most.shape(), {&most, &other}).shape, (Shape{1}));
}
