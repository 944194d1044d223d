// conv2d against a direct loop and finite differences (first and second order).
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "core/dispatcher.h"
#include "tests/cpp/numeric_check.h"
#include "tests/cpp/test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::numeric_check;

namespace {

struct Conv {
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// Direct 7-loop convolution in double.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& c,
                                   Shape* out_shape) {
  auto xv = values(x), wv = values(w), bv = b.defined() ? values(b) : std::vector<double>();
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t Co = w.shape()[0], Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t Ho = (H + 2 * c.padding[0] - c.dilation[0] * (KH - 1) - 1) / c.stride[0] + 1;
  const int64_t Wo = (W + 2 * c.padding[1] - c.dilation[1] * (KW - 1) - 1) / c.stride[1] + 1;
  *out_shape = {N, Co, Ho, Wo};
  std::vector<double> y(N * Co * Ho * Wo);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < Co; ++co)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double acc = bv.empty() ? 0.0 : bv[co];
          const int64_t g = co / (Co / c.groups);
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                int64_t ih = oh * c.stride[0] - c.padding[0] + i * c.dilation[0];
                int64_t iw = ow * c.stride[1] - c.padding[1] + j * c.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += xv[((n * C + g * Cg + ci) * H + ih) * W + iw] *
                       wv[((co * Cg + ci) * KH + i) * KW + j];
              }
          y[((n * Co + co) * Ho + oh) * Wo + ow] = acc;
        }
  return y;
}

Tensor run_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& c) {
  return conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
}

}  // namespace

TEST(Conv2d, MatchesDirectLoopWithStridePaddingDilationGroups) {
  const Conv c{{2, 1}, {1, 2}, {2, 1}, 2};
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = random({3, 4, 9, 7}, dt, 1), w = random({6, 2, 3, 2}, dt, 2);
    Tensor b = random({6}, dt, 3);
    Tensor y = run_conv(x, w, b, c);
    Shape ys;
    auto want = conv_reference(x, w, b, c, &ys);
    EXPECT_EQ(y.shape(), ys);
    EXPECT_EQ(y.dtype(), dt);
    expect_near(values(y), want, dt == DType::kFloat32 ? 1e-5 : 1e-12);
  }
}

TEST(Conv2d, OneByOneKernelAndDepthwiseMatchDirectLoop) {
  Tensor x = random({2, 6, 5, 4}, DType::kFloat64, 4);
  Shape ys;
  Tensor w1 = random({3, 6, 1, 1}, DType::kFloat64, 5);
  expect_near(values(run_conv(x, w1, Tensor(), {})), conv_reference(x, w1, Tensor(), {}, &ys),
              1e-12);
  const Conv depthwise{{1, 1}, {1, 1}, {1, 1}, 6};
  Tensor w2 = random({6, 1, 3, 3}, DType::kFloat64, 6);
  expect_near(values(run_conv(x, w2, Tensor(), depthwise)),
              conv_reference(x, w2, Tensor(), depthwise, &ys), 1e-12);
}

TEST(Conv2d, BatchedResultsEqualOneImageAtATime) {
  // Small GEMMs run images in parallel; large ones run one image at a time on BLAS threads.
  for (auto [c, co, hw] : {std::array<int64_t, 3>{4, 8, 10}, std::array<int64_t, 3>{16, 32, 18}}) {
    const int64_t N = 6;
    Tensor x = random({N, c, hw, hw}, DType::kFloat32, 50, true);
    Tensor w = random({co, c, 3, 3}, DType::kFloat32, 51, true);
    Tensor y = conv2d(x, w, Tensor());
    Tensor r = random(y.shape(), DType::kFloat32, 52);
    run_backward(sum(mul(y, r)));
    Tensor gw_sum = zeros(w.shape());
    for (int64_t n = 0; n < N; ++n) {
      Tensor xn = contiguous_copy(narrow(detach(x), 0, n, 1));
      Tensor wn = detach(w);
      xn.set_requires_grad(true);
      wn.set_requires_grad(true);
      Tensor yn = conv2d(xn, wn, Tensor());
      EXPECT_EQ(values(yn), values(narrow(y, 0, n, 1)));
      run_backward(sum(mul(yn, narrow(r, 0, n, 1))));
      expect_near(values(xn.grad()), values(narrow(x.grad(), 0, n, 1)), 1e-6);
      gw_sum = add(gw_sum, wn.grad());
    }
    expect_near(values(w.grad()), values(gw_sum), 1e-4);
  }
}

TEST(Conv2d, UnbatchedInputGivesUnbatchedOutput) {
  Tensor x = random({2, 5, 5}, DType::kFloat32, 7), w = random({3, 2, 3, 3}, DType::kFloat32, 8);
  Tensor y = conv2d(x, w, Tensor(), {1, 1}, {1, 1});
  EXPECT_EQ(y.shape(), (Shape{3, 5, 5}));
  expect_near(values(y), values(conv2d(unsqueeze(x, 0), w, Tensor(), {1, 1}, {1, 1})), 0);
}

TEST(Conv2d, StridedViewsGiveTheSameResultAsContiguousCopies) {
  Tensor x = permute(random({2, 6, 6, 3}, DType::kFloat64, 60), {0, 3, 1, 2});  // channels-last
  Tensor w = transpose(random({4, 3, 2, 2}, DType::kFloat64, 61), 2, 3);
  ASSERT_FALSE(x.is_contiguous());
  expect_near(values(conv2d(x, w, Tensor(), {1, 1}, {1, 1})),
              values(conv2d(contiguous(x), contiguous(w), Tensor(), {1, 1}, {1, 1})), 0);
}

TEST(Conv2d, HalfPrecisionComputesThroughFloat32) {
  Tensor x = random({2, 3, 6, 6}, DType::kFloat32, 9),
         w = random({4, 3, 3, 3}, DType::kFloat32, 10);
  Tensor xh = to_dtype(x, DType::kFloat16), wh = to_dtype(w, DType::kFloat16);
  Tensor y = conv2d(xh, wh, Tensor(), {1, 1}, {1, 1});
  EXPECT_EQ(y.dtype(), DType::kFloat16);
  Shape ys;
  Conv c{{1, 1}, {1, 1}, {1, 1}, 1};
  expect_near(values(y), conv_reference(xh, wh, Tensor(), c, &ys), 2e-3);
}

TEST(Conv2d, GradientMatchesFiniteDifferences) {
  const Conv c{{2, 1}, {1, 1}, {1, 2}, 2};
  Tensor x = random({2, 4, 6, 7}, DType::kFloat64, 11, true);
  Tensor w = random({4, 2, 3, 2}, DType::kFloat64, 12, true);
  Tensor b = random({4}, DType::kFloat64, 13, true);
  Tensor r = random(run_conv(x, w, b, c).shape(), DType::kFloat64, 14);
  run_backward(sum(mul(run_conv(x, w, b, c), r)));
  auto loss = [&] { return weighted_sum(run_conv(x, w, b, c), r); };
  for (const Tensor* t : {&x, &w, &b}) expect_near(values(t->grad()), numeric_grad(*t, loss), 1e-6);
}

TEST(Conv2d, SecondOrderGradientMatchesFiniteDifferences) {
  const Conv c{{1, 2}, {1, 0}, {1, 1}, 1};
  Tensor x = random({2, 2, 5, 5}, DType::kFloat64, 15, true);
  Tensor w = random({3, 2, 2, 3}, DType::kFloat64, 16, true);
  Tensor r = random({2, 3, 6, 2}, DType::kFloat64, 17, true);
  // The squared norms of the first-order gradients, differentiated again.
  auto grad_norms = [&](bool create_graph) {
    Tensor y = run_conv(x, w, Tensor(), c);
    auto g =
        autograd::grad({sum(mul(y, r))}, {Tensor()}, {x, w}, create_graph, create_graph, false);
    return add(sum(mul(g[0], g[0])), sum(mul(g[1], g[1])));
  };
  run_backward(grad_norms(true));
  auto loss = [&] { return grad_norms(false).item<double>(); };
  for (const Tensor* t : {&x, &w, &r}) expect_near(values(t->grad()), numeric_grad(*t, loss), 1e-5);
}

TEST(Conv2d, ChannelMismatchNamesOpAndShapes) {
  try {
    conv2d(zeros({2, 3, 8, 8}), zeros({4, 5, 3, 3}), Tensor());
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[conv2d] input (2, 3, 8, 8) has 3 channels but weight (4, 5, 3, 3) expects 5 "
                 "(groups=1)");
  }
  EXPECT_THROW(
      conv2d(zeros({1, 4, 8, 8}), zeros({6, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 4), Error);
  EXPECT_THROW(conv2d(zeros({1, 1, 2, 2}), zeros({1, 1, 3, 3}), Tensor()), Error);
  EXPECT_THROW(conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), zeros({2})), Error);
  EXPECT_THROW(conv2d(zeros({4, 4}), zeros({1, 1, 3, 3}), Tensor()), Error);
  EXPECT_THROW(conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}, DType::kFloat64), Tensor()),
               TypeError);
}

// Tier (a): conv2d's and its gradients' infer, from metas alone.
namespace {

TensorMeta m(const Shape& s, DType dt = DType::kFloat32) {
  return {s, dt, Device{}};
}
const TensorMeta kNoBias{{}, DType::kFloat32, Device{}, false};

Attrs conv_attrs(Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1},
                 int64_t groups = 1) {
  return {{"stride", std::vector<int64_t>{stride[0], stride[1]}},
          {"padding", std::vector<int64_t>{padding[0], padding[1]}},
          {"dilation", std::vector<int64_t>{dilation[0], dilation[1]}},
          {"groups", groups}};
}
Attrs with(Attrs a, const char* name, Pair value) {
  a.set(name, std::vector<int64_t>{value[0], value[1]});
  return a;
}

Shape infer1(const char* op, const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return infer_metas(op_def(op), in, attrs).at(0).shape;
}
std::string infer_error(const char* op, const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return ofl::internal::testing::error_of([&] { infer_metas(op_def(op), in, attrs); });
}

}  // namespace

TEST(Conv2dInfer, OpAndGradientShapesWithStridePaddingDilationGroups) {
  const Attrs a = conv_attrs({2, 1}, {1, 2}, {2, 1}, 2);
  const Shape ys = infer1("conv2d", {m({2, 4, 9, 7}), m({6, 2, 3, 2}), m({6})}, a);
  EXPECT_EQ(ys, (Shape{2, 6, 4, 10}));
  EXPECT_EQ(infer1("conv2d", {m({4, 9, 7}), m({6, 2, 3, 2}), kNoBias}, a), (Shape{6, 4, 10}));
  EXPECT_EQ(infer1("conv2d_input_grad", {m(ys), m({6, 2, 3, 2})}, with(a, "input_size", {9, 7})),
            (Shape{2, 4, 9, 7}));
  EXPECT_EQ(infer1("conv2d_weight_grad", {m(ys), m({2, 4, 9, 7})}, with(a, "kernel_size", {3, 2})),
            (Shape{6, 2, 3, 2}));
  const auto y16 =
      infer_metas(op_def("conv2d"),
                  {m({1, 4, 9, 7}, DType::kFloat16), m({6, 2, 3, 2}, DType::kFloat16), kNoBias}, a);
  EXPECT_EQ(y16.at(0).dtype, DType::kFloat16);
}

TEST(Conv2dInfer, BadChannelCountsAndGroupsNameTheOpAndShapes) {
  EXPECT_EQ(infer_error("conv2d", {m({2, 3, 8, 8}), m({4, 5, 3, 3}), kNoBias}, conv_attrs()),
            "[conv2d] input (2, 3, 8, 8) has 3 channels but weight (4, 5, 3, 3) expects 5 "
            "(groups=1)");
  const Attrs g4 = conv_attrs({1, 1}, {0, 0}, {1, 1}, 4);
  EXPECT_EQ(infer_error("conv2d", {m({1, 4, 8, 8}), m({6, 1, 3, 3}), kNoBias}, g4),
            "[conv2d] weight (6, 1, 3, 3) has 6 output channels, which groups=4 does not divide");
  EXPECT_EQ(infer_error("conv2d", {m({1, 6, 8, 8}), m({8, 1, 3, 3}), kNoBias}, g4),
            "[conv2d] input (1, 6, 8, 8) has 6 channels but weight (8, 1, 3, 3) expects 4 "
            "(groups=4)");
  EXPECT_EQ(infer_error("conv2d", {m({1, 4, 8, 8}), m({4, 4, 3, 3}), kNoBias},
                        conv_attrs({1, 1}, {0, 0}, {1, 1}, 0)),
            "[conv2d] groups must be positive, got 0");
  EXPECT_EQ(infer_error("conv2d", {m({1, 4, 8, 8}), m({6, 4, 3, 3}), m({4})}, conv_attrs()),
            "[conv2d] bias of shape (4,) does not match the weight (6, 4, 3, 3) with 6 output "
            "channels");
}

TEST(Conv2dInfer, WrongRanksDtypesAndAttributesNameTheOp) {
  EXPECT_EQ(infer_error("conv2d", {m({4, 4}), m({1, 1, 3, 3}), kNoBias}, conv_attrs()),
            "[conv2d] expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got (4, 4)");
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 4, 4}), m({1, 3, 3}), kNoBias}, conv_attrs()),
            "[conv2d] weight must be 4-d (out_channels, in_channels / groups, kH, kW), got (1, 3, "
            "3)");
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 4, 4}), m({1, 1, 3, 3}), m({1, 1})}, conv_attrs()),
            "[conv2d] bias of shape (1, 1) does not match the weight (1, 1, 3, 3) with 1 output "
            "channels");
  EXPECT_EQ(ofl::internal::testing::error_of<TypeError>([&] {
              infer_metas(op_def("conv2d"),
                          {m({1, 1, 4, 4}), m({1, 1, 3, 3}, DType::kFloat64), kNoBias},
                          conv_attrs());
            }),
            "[conv2d] input (1, 1, 4, 4) float32, weight (1, 1, 3, 3) float64: dtypes must be the "
            "same");
  EXPECT_EQ(ofl::internal::testing::error_of<TypeError>([&] {
              infer_metas(op_def("conv2d"),
                          {m({1, 1, 4, 4}, DType::kInt64), m({1, 1, 3, 3}), kNoBias}, conv_attrs());
            }),
            "[conv2d] expects a floating-point input, got (1, 1, 4, 4) int64");
  Attrs three = conv_attrs();
  three.set("stride", std::vector<int64_t>{1, 1, 1});
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 4, 4}), m({1, 1, 3, 3}), kNoBias}, three),
            "[conv2d] stride must hold 2 values (H, W), got 3");
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 4, 4}), m({1, 1, 3, 3}), kNoBias}, conv_attrs({0, 1})),
            "[conv2d] stride must be positive, got (0, 1)");
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 4, 4}), m({1, 1, 3, 3}), kNoBias},
                        conv_attrs({1, 1}, {-1, 0})),
            "[conv2d] padding must be non-negative, got (-1, 0)");
}

TEST(Conv2dInfer, KernelLargerThanThePaddedInputIsAnError) {
  EXPECT_EQ(infer_error("conv2d", {m({1, 1, 2, 2}), m({1, 1, 3, 3}), kNoBias}, conv_attrs()),
            "[conv2d] input (1, 1, 2, 2) padded by (0, 0) is smaller than the weight (1, 1, 3, "
            "3)'s kernel dilated by (1, 1)");
  // Dilated to 5 x 5: too large for 4 x 4 unless padded.
  const std::vector<TensorMeta> in{m({1, 1, 4, 4}), m({1, 1, 3, 3}), kNoBias};
  EXPECT_NE(infer_error("conv2d", in, conv_attrs({1, 1}, {0, 0}, {2, 2})).find("dilated by (2, 2)"),
            std::string::npos);
  EXPECT_EQ(infer1("conv2d", in, conv_attrs({1, 1}, {1, 1}, {2, 2})), (Shape{1, 1, 2, 2}));
}

TEST(Conv2dInfer, GradientOpsCheckTheirOperandsAgainstEachOther) {
  const Attrs a = conv_attrs({2, 2}, {1, 1});
  // y of x (2, 4, 7, 7) and w (6, 4, 3, 3) is (2, 6, 4, 4).
  EXPECT_EQ(
      infer_error("conv2d_input_grad", {m({2, 5, 4, 4}), m({6, 4, 3, 3})},
                  with(a, "input_size", {7, 7})),
      "[conv2d_input_grad] grad (2, 5, 4, 4) has 5 channels but weight (6, 4, 3, 3) has 6 output "
      "channels (groups=1)");
  EXPECT_EQ(
      infer_error("conv2d_input_grad", {m({2, 6, 4, 4}), m({6, 4, 3, 3})},
                  with(a, "input_size", {9, 7})),
      "[conv2d_input_grad] grad (2, 6, 4, 4) is not the output shape (2, 6, 5, 4) of input (2, 4, "
      "9, 7) and weight (6, 4, 3, 3)");
  EXPECT_NE(
      infer_error("conv2d_input_grad", {m({6, 4, 4}), m({6, 4, 3})}, with(a, "input_size", {7, 7}))
          .find("[conv2d_input_grad] weight must be 4-d"),
      std::string::npos);
  EXPECT_EQ(
      infer_error("conv2d_weight_grad", {m({3, 6, 4, 4}), m({2, 4, 7, 7})},
                  with(a, "kernel_size", {3, 3})),
      "[conv2d_weight_grad] grad (3, 6, 4, 4) is not the output shape (2, 6, 4, 4) of input (2, 4, "
      "7, 7) and weight (6, 4, 3, 3)");
  const Attrs g2 = with(conv_attrs({2, 2}, {1, 1}, {1, 1}, 2), "kernel_size", {3, 3});
  EXPECT_EQ(infer_error("conv2d_weight_grad", {m({2, 6, 4, 4}), m({2, 3, 7, 7})}, g2),
            "[conv2d_weight_grad] grad (2, 6, 4, 4) and input (2, 3, 7, 7) must have the same rank "
            "and channel counts that groups=2 divides");
  EXPECT_NE(infer_error("conv2d_weight_grad", {m({2, 6, 4, 4}), m({2, 4, 7, 7})},
                        with(a, "kernel_size", {10, 3}))
                .find("is smaller than the weight (6, 4, 10, 3)"),
            std::string::npos);
}

TEST(Conv2dInfer, MetaTensorsRaiseTheSameErrorsAsCpu) {
  auto on = [](Device d) {
    return ofl::internal::testing::error_of([&] {
      conv2d(Tensor::empty({2, 3, 8, 8}, DType::kFloat32, d),
             Tensor::empty({4, 5, 3, 3}, DType::kFloat32, d), Tensor());
    });
  };
  EXPECT_EQ(on(Device{DeviceType::kMeta}), on(Device{}));
  Tensor y = conv2d(Tensor::empty({2, 3, 8, 8}, DType::kFloat32, Device{DeviceType::kMeta}),
                    Tensor::empty({4, 3, 3, 3}, DType::kFloat32, Device{DeviceType::kMeta}),
                    Tensor(), {2, 2}, {1, 1});
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.shape(), (Shape{2, 4, 4, 4}));
}
