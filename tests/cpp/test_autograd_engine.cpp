// The autograd engine: accumulation, graph lifetime, saved-tensor versioning, grad mode,
// autograd::grad, and the checks on the roots of a backward call.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd/node.h"
#include "tests/cpp/numeric_check.h"
#include "tests/cpp/test_util.h"

using namespace ofl::internal;
using numeric_check::values;
using ofl::internal::testing::error_of;

namespace {

Tensor leaf(const Shape& shape, double start = 1.0) {
  Tensor t = reshape(
      arange(start, start + static_cast<double>(numel_of(shape)), 1, DType::kFloat64), shape);
  t.set_requires_grad(true);
  return t;
}

Tensor scalar(double v) {
  return full({}, v, DType::kFloat64);
}

void backward(const Tensor& loss, bool retain_graph = false) {
  autograd::backward({loss}, {Tensor()}, retain_graph, false);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(AutogradEngine, DiamondThroughSharedIntermediateAccumulatesBothPaths) {
  // h = 2x feeds sin and cos; d/dx sum(sin h + cos h) = 2 (cos h - sin h).
  Tensor x = leaf({4});
  Tensor h = mul(x, scalar(2.0));
  backward(sum(add(sin(h), cos(h))));
  auto xv = values(x), g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(g[i], 2 * (std::cos(2 * xv[i]) - std::sin(2 * xv[i])), 1e-12);
}

TEST(AutogradEngine, LeafUsedTwiceInOneOpAndAcrossOpsAccumulates) {
  Tensor x = leaf({3});
  backward(sum(add(mul(x, x), exp(x))));  // d/dx = 2x + e^x
  auto xv = values(x), g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(g[i], 2 * xv[i] + std::exp(xv[i]), 1e-12);
}

TEST(AutogradEngine, TwoBackwardCallsAccumulateIntoGrad) {
  Tensor x = leaf({3});
  Tensor loss = sum(mul(x, x));
  backward(loss, /*retain_graph=*/true);
  backward(loss);
  auto xv = values(x), g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(g[i], 4 * xv[i]);
  // A fresh graph adds on top again.
  backward(sum(x));
  g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(g[i], 4 * xv[i] + 1);
}

TEST(AutogradEngine, SecondBackwardWithoutRetainGraphThrowsNamingTheOp) {
  Tensor x = leaf({3});
  Tensor loss = sum(mul(x, x));
  backward(loss);
  std::string msg = error_of([&] { backward(loss); });
  EXPECT_TRUE(contains(msg, "second time")) << msg;
  EXPECT_TRUE(contains(msg, "retain_graph")) << msg;
  EXPECT_EQ(msg.rfind("[", 0), 0u) << msg;
}

TEST(AutogradEngine, InPlaceChangeOfSavedNonLeafFailsBackwardNamingTheOp) {
  Tensor a = leaf({3});
  Tensor h = mul(a, scalar(2.0));  // non-leaf
  Tensor y = mul(h, h);            // saves h
  add_(h, ones({3}, DType::kFloat64));
  std::string msg = error_of([&] { backward(sum(y)); });
  EXPECT_EQ(msg.rfind("[mul] ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "in-place")) << msg;
  EXPECT_TRUE(contains(msg, "(3,)")) << msg;
}

TEST(AutogradEngine, InPlaceChangeOfSavedLeafUnderNoGradFailsBackward) {
  Tensor w = leaf({2});
  Tensor y = mul(w, w);
  {
    autograd::NoGradGuard no_grad;
    add_(w, ones({2}, DType::kFloat64));
  }
  std::string msg = error_of([&] { backward(sum(y)); });
  EXPECT_EQ(msg.rfind("[mul] ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "modified by an in-place operation")) << msg;
}

TEST(AutogradEngine, InPlaceOnLeafThatRequiresGradIsRejected) {
  Tensor w = leaf({2});
  std::string msg = error_of([&] { add_(w, ones({2}, DType::kFloat64)); });
  EXPECT_EQ(msg.rfind("[add_] ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "leaf")) << msg;
}

TEST(AutogradEngine, InPlaceOnNonLeafIsDifferentiated) {
  // y = (2a + 1) * 3 with add_ and mul_ in place on the non-leaf: dy/da = 6.
  Tensor a = leaf({3});
  Tensor h = mul(a, scalar(2.0));
  add_(h, ones({3}, DType::kFloat64));
  mul_(h, scalar(3.0));
  backward(sum(h));
  for (double g : values(a.grad())) EXPECT_DOUBLE_EQ(g, 6.0);
}

TEST(AutogradEngine, NoGradRecordsNothingAndRestoresTheMode) {
  Tensor x = leaf({3});
  EXPECT_TRUE(autograd::grad_enabled());
  {
    autograd::NoGradGuard no_grad;
    EXPECT_FALSE(autograd::grad_enabled());
    Tensor y = exp(mul(x, x));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_TRUE(y.is_leaf());
    {
      autograd::GradModeGuard enable(true);
      Tensor z = mul(x, x);
      EXPECT_TRUE(z.requires_grad());
      EXPECT_NE(z.grad_fn(), nullptr);
    }
    EXPECT_FALSE(autograd::grad_enabled());
  }
  EXPECT_TRUE(autograd::grad_enabled());
  Tensor y = mul(x, x);
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "mul");
}

TEST(AutogradEngine, GradReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = leaf({3}), w = leaf({3}, 5.0);
  Tensor h = mul(x, w);
  Tensor loss = sum(mul(h, h));
  auto gs = autograd::grad({loss}, {Tensor()}, {x, h}, /*retain_graph=*/false,
                           /*create_graph=*/false, /*allow_unused=*/false);
  ASSERT_EQ(gs.size(), 2u);
  auto xv = values(x), wv = values(w), gx = values(gs[0]), gh = values(gs[1]);
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_DOUBLE_EQ(gx[i], 2 * xv[i] * wv[i] * wv[i]);
    EXPECT_DOUBLE_EQ(gh[i], 2 * xv[i] * wv[i]);
  }
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(h.grad().defined());
}

TEST(AutogradEngine, GradThrowsForUnusedInputUnlessAllowUnused) {
  Tensor x = leaf({3}), unused = leaf({2});
  Tensor loss = sum(mul(x, x));
  std::string msg = error_of([&] {
    autograd::grad({loss}, {Tensor()}, {x, unused}, /*retain_graph=*/true, false, false);
  });
  EXPECT_EQ(msg.rfind("[autograd.grad] ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "input 1")) << msg;
  EXPECT_TRUE(contains(msg, "allow_unused")) << msg;

  auto gs = autograd::grad({loss}, {Tensor()}, {x, unused}, false, false, /*allow_unused=*/true);
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_TRUE(gs[0].defined());
  EXPECT_FALSE(gs[1].defined());
  EXPECT_FALSE(unused.grad().defined());
}

TEST(AutogradEngine, GradRejectsAnInputThatDoesNotRequireGrad) {
  Tensor x = leaf({3});
  Tensor c = ones({3}, DType::kFloat64);
  std::string msg =
      error_of([&] { autograd::grad({sum(mul(x, c))}, {Tensor()}, {c}, false, false, false); });
  EXPECT_TRUE(contains(msg, "does not require grad")) << msg;
}

TEST(AutogradEngine, BackwardOnNonScalarNeedsAGradientOfTheOutputsShape) {
  Tensor x = leaf({2, 3});
  Tensor y = mul(x, x);
  std::string msg = error_of([&] { backward(y, true); });
  EXPECT_EQ(msg.rfind("[backward] ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "scalar")) << msg;
  EXPECT_TRUE(contains(msg, "(2, 3)")) << msg;

  msg = error_of([&] { autograd::backward({y}, {ones({3, 2}, DType::kFloat64)}, true, false); });
  EXPECT_TRUE(contains(msg, "(3, 2)")) << msg;
  EXPECT_TRUE(contains(msg, "(2, 3)")) << msg;

  Tensor gy = full({2, 3}, 0.5, DType::kFloat64);
  autograd::backward({y}, {gy}, false, false);
  auto xv = values(x), g = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(g[i], xv[i]);
  EXPECT_EQ(values(gy), std::vector<double>(6, 0.5)) << "the caller's gradient was modified";
}

TEST(AutogradEngine, BackwardFromATensorWithoutHistoryThrows) {
  Tensor c = ones({}, DType::kFloat64);
  std::string msg = error_of([&] { backward(c); });
  EXPECT_TRUE(contains(msg, "does not require grad")) << msg;
}

TEST(AutogradEngine, BroadcastingAddSumsGradientBackToEachInputShape) {
  Tensor a = leaf({2, 3}), b = leaf({3}), p = leaf({2, 1}), q = leaf({1, 3}), s = leaf({});
  backward(sum(add(add(add(a, b), s), add(p, q))));
  EXPECT_EQ(a.grad().shape(), (Shape{2, 3}));
  EXPECT_EQ(b.grad().shape(), (Shape{3}));
  EXPECT_EQ(p.grad().shape(), (Shape{2, 1}));
  EXPECT_EQ(q.grad().shape(), (Shape{1, 3}));
  EXPECT_EQ(s.grad().shape(), (Shape{}));
  EXPECT_EQ(values(a.grad()), std::vector<double>(6, 1.0));
  EXPECT_EQ(values(b.grad()), std::vector<double>(3, 2.0));
  EXPECT_EQ(values(p.grad()), std::vector<double>(2, 3.0));
  EXPECT_EQ(values(q.grad()), std::vector<double>(3, 2.0));
  EXPECT_EQ(values(s.grad()), std::vector<double>(1, 6.0));
}

TEST(AutogradEngine, RetainGradKeepsTheGradientOfANonLeaf) {
  Tensor x = leaf({3});
  Tensor h = mul(x, scalar(3.0));
  h.retain_grad();
  Tensor other = mul(x, scalar(2.0));  // no retain_grad: stays empty
  backward(sum(add(mul(h, h), other)));
  ASSERT_TRUE(h.grad().defined());
  auto hv = values(h), gh = values(h.grad());
  for (size_t i = 0; i < hv.size(); ++i) EXPECT_DOUBLE_EQ(gh[i], 2 * hv[i]);
  EXPECT_FALSE(other.grad().defined());
}
