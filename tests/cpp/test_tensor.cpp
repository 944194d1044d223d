#include <gtest/gtest.h>

#include "core/autograd/engine.h"
#include "core/stream.h"
#include "ops/ops.h"

using namespace ofl::internal;

TEST(Tensor, ViewSharesStorageAndTransposeIsNotContiguous) {
  Tensor x = arange(0, 6, 1, DType::kFloat32);
  Tensor v = view(x, {2, 3});
  Tensor t = transpose(v, 0, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage(), x.storage());
  Tensor c = contiguous(t);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FLOAT_EQ(c.data<float>()[1], 3.0f);
}

TEST(Autograd, MulAndSumGiveTheOtherFactorAsGradient) {
  Tensor a = arange(1, 4, 1, DType::kFloat32);
  Tensor b = full({3}, 2.0);
  a.set_requires_grad(true);
  Tensor loss = sum(mul(a, b));
  autograd::backward({loss}, {Tensor()}, false, false);
  ASSERT_TRUE(a.grad().defined());
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(a.grad().data<float>()[i], 2.0f);
}

TEST(Errors, MatmulInnerMismatchNamesOpAndShapes) {
  Tensor a = zeros({4, 3}), b = zeros({5, 2});
  try {
    matmul(a, b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] a is (4, 3), b is (5, 2)"), std::string::npos);
  }
}

TEST(Stream, GuardSetsAndRestoresTheCurrentStreamPerDevice) {
  Device cuda{DeviceType::kCUDA, 1};
  int dummy = 0;
  EXPECT_EQ(current_stream(cuda).handle, nullptr);
  {
    StreamGuard guard(Stream{cuda, &dummy});
    EXPECT_EQ(current_stream(cuda).handle, &dummy);
    EXPECT_EQ(current_stream(Device{DeviceType::kCUDA, 0}).handle, nullptr);
  }
  EXPECT_EQ(current_stream(cuda).handle, nullptr);
}

TEST(CpuAllocator, ReusesFreedLargeBlocksAndReleasesThemOnRequest) {
  release_cached_cpu_memory();
  void* first;
  {
    Tensor big = Tensor::empty({1 << 20}, DType::kFloat32);
    first = big.raw_data();
  }
  EXPECT_GE(cached_cpu_bytes(), size_t{4} << 20);
  Tensor again = Tensor::empty({1 << 20}, DType::kFloat32);
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(cached_cpu_bytes(), 0u);
  release_cached_cpu_memory();
}
