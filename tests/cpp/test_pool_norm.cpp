// max_pool2d, avg_pool2d and batch_norm against direct loops and finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "core/dispatcher.h"
#include "tests/cpp/numeric_check.h"
#include "tests/cpp/test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::numeric_check;

namespace {

// Direct pooling loops in double: kind 0 max (padding is -inf), 1 avg with padding counted,
// 2 avg over the in-image elements only. argmax gets h * W + w per output for max.
std::vector<double> pool_reference(const Tensor& x, int kind, Pair k, Pair s, Pair p,
                                   std::vector<int64_t>* argmax = nullptr) {
  auto xv = values(x);
  const int64_t P = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t Ho = (H + 2 * p[0] - k[0]) / s[0] + 1, Wo = (W + 2 * p[1] - k[1]) / s[1] + 1;
  std::vector<double> y;
  for (int64_t q = 0; q < P; ++q)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        double best = -INFINITY, acc = 0;
        int64_t arg = -1, count = 0;
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j) {
            int64_t ih = oh * s[0] - p[0] + i, iw = ow * s[1] - p[1] + j;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double v = xv[(q * H + ih) * W + iw];
            if (v > best) best = v, arg = ih * W + iw;
            acc += v;
            ++count;
          }
        if (argmax) argmax->push_back(arg);
        y.push_back(kind == 0 ? best : acc / (kind == 1 ? k[0] * k[1] : count));
      }
  return y;
}

}  // namespace

TEST(MaxPool2d, MatchesDirectLoopAndRoutesGradientToTheArgmax) {
  const Pair k{3, 2}, s{2, 1}, p{1, 1};
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = random({2, 3, 7, 6}, dt, 20, true);
    Tensor y = max_pool2d(x, k, s, p);
    std::vector<int64_t> arg;
    auto want = pool_reference(x, 0, k, s, p, &arg);
    EXPECT_EQ(y.shape(), (Shape{2, 3, 4, 7}));
    expect_near(values(y), want, 0);
    Tensor r = random(y.shape(), dt, 21);
    run_backward(sum(mul(y, r)));
    // Overlapping windows: one input collects the gradient of every window it wins.
    std::vector<double> gx(x.numel(), 0.0), rv = values(r);
    const int64_t plane_in = 7 * 6, plane_out = 4 * 7;
    for (size_t o = 0; o < arg.size(); ++o) gx[(o / plane_out) * plane_in + arg[o]] += rv[o];
    expect_near(values(x.grad()), gx, 1e-6);
  }
}

TEST(MaxPool2d, PaddingIsNeverChosenWhenEveryValueIsMinusInfinity) {
  Tensor x = full({1, 1, 2, 2}, -INFINITY);
  x.set_requires_grad(true);
  Tensor y = max_pool2d(x, {2, 2}, {1, 1}, {1, 1});
  for (double v : values(y)) EXPECT_EQ(v, -INFINITY);
  run_backward(sum(y));
  double total = 0;
  for (double v : values(x.grad())) total += v;
  EXPECT_EQ(total, 9.0);  // every one of the 3x3 windows sends its 1 to an in-image element
}

TEST(MaxPool2d, UnbatchedInputAndPaddingLimitError) {
  Tensor x = random({3, 5, 5}, DType::kFloat32, 22);
  EXPECT_EQ(max_pool2d(x, {2, 2}, {2, 2}).shape(), (Shape{3, 2, 2}));
  try {
    max_pool2d(x, {3, 3}, {1, 1}, {2, 2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[max_pool2d] padding (2, 2)"), std::string::npos);
  }
}

TEST(AvgPool2d, MatchesDirectLoopWithAndWithoutCountIncludePad) {
  const Pair k{3, 3}, s{2, 2}, p{1, 1};
  Tensor x = random({2, 2, 7, 8}, DType::kFloat32, 23);
  expect_near(values(avg_pool2d(x, k, s, p, true)), pool_reference(x, 1, k, s, p), 1e-6);
  expect_near(values(avg_pool2d(x, k, s, p, false)), pool_reference(x, 2, k, s, p), 1e-6);
  Tensor x3 = random({2, 7, 8}, DType::kFloat64, 24);
  EXPECT_EQ(avg_pool2d(x3, {2, 2}, {2, 2}).shape(), (Shape{2, 3, 4}));
}

TEST(AvgPool2d, GradientMatchesFiniteDifferences) {
  for (bool cip : {true, false}) {
    Tensor x = random({2, 2, 6, 5}, DType::kFloat64, 25, true);
    auto f = [&] { return avg_pool2d(x, {3, 2}, {2, 1}, {1, 1}, cip); };
    Tensor r = random(f().shape(), DType::kFloat64, 26);
    run_backward(sum(mul(f(), r)));
    expect_near(values(x.grad()), numeric_grad(x, [&] { return weighted_sum(f(), r); }), 1e-7);
  }
}

namespace {

// d/dr of <grad_x <pool(x), r>, s>: the adjoint of pool's backward, applied to s.
std::vector<double> second_order_grad(bool is_max, const Tensor& x, const Tensor& s) {
  auto pool = [&](const Tensor& t) {
    return is_max ? max_pool2d(t, {3, 3}, {2, 2}, {1, 1})
                  : avg_pool2d(t, {3, 3}, {2, 2}, {1, 1}, false);
  };
  Tensor r = random(pool(x).shape(), DType::kFloat64, 29, true);
  auto gx = autograd::grad({sum(mul(pool(x), r))}, {Tensor()}, {x}, true, true, false)[0];
  run_backward(sum(mul(gx, s)));
  return values(r.grad());
}

}  // namespace

TEST(MaxPool2d, SecondOrderGradientGathersAtTheArgmax) {
  Tensor x = random({1, 2, 6, 6}, DType::kFloat64, 27, true);
  Tensor s = random(x.shape(), DType::kFloat64, 28);
  std::vector<int64_t> arg;
  pool_reference(x, 0, {3, 3}, {2, 2}, {1, 1}, &arg);
  std::vector<double> want, sv = values(s);
  for (size_t o = 0; o < arg.size(); ++o) want.push_back(sv[(o / 9) * 36 + arg[o]]);
  expect_near(second_order_grad(true, x, s), want, 1e-12);
}

TEST(AvgPool2d, SecondOrderGradientIsAvgPoolItself) {
  Tensor x = random({1, 2, 6, 6}, DType::kFloat64, 27, true);
  Tensor s = random(x.shape(), DType::kFloat64, 28);
  expect_near(second_order_grad(false, x, s), pool_reference(s, 2, {3, 3}, {2, 2}, {1, 1}), 1e-12);
}

namespace {

// Per-channel mean and biased variance of x (N, C, ...) in double.
void channel_stats(const Tensor& x, std::vector<double>* mean, std::vector<double>* var) {
  auto xv = values(x);
  const int64_t N = x.shape()[0], C = x.shape()[1], S = x.numel() / (N * C);
  mean->assign(C, 0.0);
  var->assign(C, 0.0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) (*mean)[c] += xv[(n * C + c) * S + i];
    (*mean)[c] /= N * S;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        double d = xv[(n * C + c) * S + i] - (*mean)[c];
        (*var)[c] += d * d;
      }
    (*var)[c] /= N * S;
  }
}

std::vector<double> normalize_reference(const Tensor& x, const std::vector<double>& mean,
                                        const std::vector<double>& var, const Tensor& w,
                                        const Tensor& b, double eps) {
  auto xv = values(x), wv = values(w), bv = values(b);
  const int64_t C = x.shape()[1], S = x.numel() / (x.shape()[0] * C);
  std::vector<double> y(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t c = (i / S) % C;
    y[i] = (xv[i] - mean[c]) / std::sqrt(var[c] + eps) * wv[c] + bv[c];
  }
  return y;
}

}  // namespace

TEST(BatchNorm, TrainingUsesBatchStatisticsAndUpdatesRunningStats) {
  Tensor x = add(mul(random({4, 3, 5, 2}, DType::kFloat32, 30), wrap_scalar(2, DType::kFloat64)),
                 wrap_scalar(1, DType::kFloat64));
  Tensor w = random({3}, DType::kFloat32, 31), b = random({3}, DType::kFloat32, 32);
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor y = batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
  std::vector<double> mean, var;
  channel_stats(x, &mean, &var);
  expect_near(values(y), normalize_reference(x, mean, var, w, b, 1e-5), 1e-5);
  const double n = 4 * 5 * 2;
  std::vector<double> want_rm, want_rv;
  for (int c = 0; c < 3; ++c) {
    want_rm.push_back(0.1 * mean[c]);
    want_rv.push_back(0.9 + 0.1 * var[c] * n / (n - 1));
  }
  expect_near(values(rm), want_rm, 1e-6);
  expect_near(values(rv), want_rv, 1e-6);
}

TEST(BatchNorm, EvalUsesRunningStatisticsAndLeavesThemAlone) {
  Tensor x = random({3, 4}, DType::kFloat64, 33);
  Tensor w = random({4}, DType::kFloat64, 34), b = random({4}, DType::kFloat64, 35);
  Tensor rm = random({4}, DType::kFloat64, 36),
         rv = add(abs(rm), wrap_scalar(0.5, DType::kFloat64));
  auto rm0 = values(rm), rv0 = values(rv);
  Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 1e-3);
  expect_near(values(y), normalize_reference(x, rm0, rv0, w, b, 1e-3), 1e-12);
  expect_near(values(rm), rm0, 0);
  expect_near(values(rv), rv0, 0);
  EXPECT_THROW(batch_norm(x, Tensor(), Tensor(), w, b, false, 0.1, 1e-3), Error);
}

TEST(BatchNorm, GradientMatchesFiniteDifferencesInTrainingAndEval) {
  for (bool training : {true, false}) {
    Tensor x = random({3, 2, 3, 2}, DType::kFloat64, 37, true);
    Tensor w = random({2}, DType::kFloat64, 38, true), b = random({2}, DType::kFloat64, 39, true);
    Tensor rm = zeros({2}, DType::kFloat64), rv = ones({2}, DType::kFloat64);
    Tensor r = random(x.shape(), DType::kFloat64, 40);
    // Momentum 0 keeps the running stats fixed while finite differences re-run the op.
    auto f = [&] { return batch_norm(x, rm, rv, w, b, training, 0.0, 1e-5); };
    run_backward(sum(mul(f(), r)));
    auto loss = [&] { return weighted_sum(f(), r); };
    for (const Tensor* t : {&x, &w, &b})
      expect_near(values(t->grad()), numeric_grad(*t, loss), 1e-6);
  }
}

TEST(BatchNorm, OneValuePerChannelInTrainingAndShapeMismatchesAreErrors) {
  EXPECT_THROW(batch_norm(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5),
               Error);
  try {
    batch_norm(zeros({2, 4, 5, 5}), zeros({3}), ones({3}), Tensor(), Tensor(), true, 0.1, 1e-5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[batch_norm] running_mean of shape (3,) does not match the input (2, 4, 5, 5) "
                 "with 4 channels");
  }
}

TEST(BatchNorm, HalfPrecisionInputKeepsItsDtype) {
  Tensor x = to_dtype(random({4, 3, 2, 2}, DType::kFloat32, 41), DType::kBFloat16);
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5);
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  std::vector<double> mean, var;
  channel_stats(x, &mean, &var);
  expect_near(values(y), normalize_reference(x, mean, var, ones({3}), zeros({3}), 1e-5), 2e-2);
}

// Tier (a): the pooling ops' and their backward ops' infer, from metas alone.
namespace {

TensorMeta m(const Shape& s, DType dt = DType::kFloat32) {
  return {s, dt, Device{}};
}

Attrs pool_attrs(Pair k, Pair s, Pair p = {0, 0}) {
  return {{"kernel_size", std::vector<int64_t>{k[0], k[1]}},
          {"stride", std::vector<int64_t>{s[0], s[1]}},
          {"padding", std::vector<int64_t>{p[0], p[1]}}};
}
Attrs avg_attrs(Pair k, Pair s, Pair p = {0, 0}) {
  Attrs a = pool_attrs(k, s, p);
  a.set("count_include_pad", true);
  return a;
}
Attrs input_size(Attrs a, Pair hw) {
  a.set("input_size", std::vector<int64_t>{hw[0], hw[1]});
  return a;
}

std::string infer_error(const char* op, const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return ofl::internal::testing::error_of([&] { infer_metas(op_def(op), in, attrs); });
}

}  // namespace

TEST(PoolInfer, OpsAndTheirBackwardGiveShapesAndDtypes) {
  const Attrs a = pool_attrs({3, 2}, {2, 1}, {1, 1});
  const auto max = infer_metas(op_def("max_pool2d"), {m({2, 3, 7, 6}, DType::kFloat16)}, a);
  ASSERT_EQ(max.size(), 1u);
  EXPECT_EQ(max[0].shape, (Shape{2, 3, 4, 7}));
  EXPECT_EQ(max[0].dtype, DType::kFloat16);
  const auto indices = infer_metas(op_def("max_pool2d_indices"), {m({2, 3, 7, 6})}, a);
  EXPECT_EQ(indices.at(0).shape, (Shape{2, 3, 4, 7}));
  EXPECT_EQ(indices.at(0).dtype, DType::kInt64);
  const auto gx =
      infer_metas(op_def("max_pool2d_backward"), {m({2, 3, 4, 7}), m({2, 3, 4, 7}, DType::kInt64)},
                  input_size({}, {7, 6}));
  EXPECT_EQ(gx.at(0).shape, (Shape{2, 3, 7, 6}));
  const Attrs avg = avg_attrs({2, 2}, {2, 2});
  EXPECT_EQ(infer_metas(op_def("avg_pool2d"), {m({3, 7, 8})}, avg).at(0).shape, (Shape{3, 3, 4}));
  EXPECT_EQ(infer_metas(op_def("avg_pool2d_backward"), {m({3, 3, 4})}, input_size(avg, {7, 8}))
                .at(0)
                .shape,
            (Shape{3, 7, 8}));
}

TEST(PoolInfer, WrongRanksKernelsAndPaddingNameTheOpAndShapes) {
  EXPECT_EQ(infer_error("max_pool2d", {m({5, 5})}, pool_attrs({2, 2}, {2, 2})),
            "[max_pool2d] expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got (5, 5)");
  EXPECT_EQ(infer_error("avg_pool2d", {m({1, 1, 2, 5, 5})}, avg_attrs({2, 2}, {2, 2})),
            "[avg_pool2d] expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got (1, 1, 2, 5, 5)");
  EXPECT_EQ(infer_error("avg_pool2d", {m({1, 1, 2, 2})}, avg_attrs({3, 3}, {1, 1})),
            "[avg_pool2d] input (1, 1, 2, 2) padded by (0, 0) is smaller than kernel (3, 3)");
  EXPECT_EQ(infer_error("max_pool2d", {m({1, 1, 2, 5})}, pool_attrs({6, 2}, {1, 1}, {1, 0})),
            "[max_pool2d] input (1, 1, 2, 5) padded by (1, 0) is smaller than kernel (6, 2)");
  EXPECT_EQ(infer_error("max_pool2d", {m({3, 5, 5})}, pool_attrs({3, 3}, {1, 1}, {2, 2})),
            "[max_pool2d] padding (2, 2) must be non-negative and at most half of kernel (3, 3)");
  EXPECT_EQ(infer_error("max_pool2d", {m({3, 5, 5})}, pool_attrs({0, 3}, {1, 1})),
            "[max_pool2d] kernel size must be positive, got (0, 3)");
  EXPECT_EQ(infer_error("avg_pool2d", {m({3, 5, 5})}, avg_attrs({2, 2}, {1, 0})),
            "[avg_pool2d] stride must be positive, got (1, 0)");
  EXPECT_EQ(ofl::internal::testing::error_of<TypeError>([] {
              infer_metas(op_def("max_pool2d"), {m({3, 5, 5}, DType::kInt32)},
                          pool_attrs({2, 2}, {2, 2}));
            }),
            "[max_pool2d] expects a floating-point input, got (3, 5, 5) int32");
}

TEST(PoolInfer, BackwardOpsCheckGradAgainstIndicesAndInputSize) {
  EXPECT_EQ(infer_error("max_pool2d_backward", {m({2, 3, 4, 7}), m({2, 3, 4, 6}, DType::kInt64)},
                        input_size({}, {7, 6})),
            "[max_pool2d_backward] grad (2, 3, 4, 7) float32 and indices (2, 3, 4, 6) int64 must "
            "have the same shape");
  EXPECT_EQ(ofl::internal::testing::error_of<TypeError>([] {
              infer_metas(op_def("max_pool2d_backward"), {m({3, 4, 7}), m({3, 4, 7})},
                          input_size({}, {7, 6}));
            }),
            "[max_pool2d_backward] indices must be int64, got (3, 4, 7) float32");
  EXPECT_EQ(infer_error("avg_pool2d_backward", {m({2, 3, 3})},
                        input_size(avg_attrs({2, 2}, {2, 2}), {7, 8})),
            "[avg_pool2d_backward] grad (2, 3, 3) is not the output shape (2, 3, 4) of input (2, "
            "7, 8)");
  EXPECT_EQ(infer_error("avg_pool2d_backward", {m({2, 3, 3})},
                        input_size(avg_attrs({2, 2}, {2, 2}), {0, 8})),
            "[avg_pool2d_backward] input_size must be positive, got (0, 8)");
}

TEST(MaxPool2d, BackwardRefusesIndicesOutsideThePlane) {
  Tensor g = ones({1, 1, 2, 2}), idx = Tensor::empty({1, 1, 2, 2}, DType::kInt64);
  for (int64_t i = 0; i < 4; ++i) idx.data<int64_t>()[i] = i == 2 ? 16 : i;
  std::string e = ofl::internal::testing::error_of([&] {
    dispatch(op_def("max_pool2d_backward"), {g, idx}, {{"input_size", std::vector<int64_t>{4, 4}}});
  });
  EXPECT_EQ(e, "[max_pool2d_backward] indices must lie in [0, 16) for an input of (1, 1, 4, 4)");
}

TEST(PoolInfer, MetaTensorsGiveShapesAndTheSameErrorsAsCpu) {
  const Device meta{DeviceType::kMeta};
  auto on = [](Device d) {
    return ofl::internal::testing::error_of([&] {
      max_pool2d(Tensor::empty({1, 1, 2, 2}, DType::kFloat32, d), {3, 3}, {1, 1});
    });
  };
  EXPECT_EQ(on(meta), on(Device{}));
  Tensor x = Tensor::empty({2, 3, 8, 8}, DType::kFloat32, meta);
  x.set_requires_grad(true);
  auto [y, idx] = max_pool2d_with_indices(x, {2, 2}, {2, 2});
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(idx.dtype(), DType::kInt64);
  Tensor z = avg_pool2d(y, {2, 2}, {1, 1}, {1, 1});
  EXPECT_EQ(z.shape(), (Shape{2, 3, 5, 5}));
  autograd::backward({z}, {Tensor::empty(z.shape(), DType::kFloat32, meta)}, false, false);
  EXPECT_TRUE(x.grad().device().is_meta());
  EXPECT_EQ(x.grad().shape(), x.shape());
}

TEST(MaxPool2d, OutputChangedInPlaceStillHasAGradient) {
  // The backward recomputes the argmax from the saved input, as PyTorch's saves input and indices.
  Tensor x = random({1, 2, 4, 4}, DType::kFloat64, 30, true);
  auto [y, idx] = max_pool2d_with_indices(x, {2, 2}, {2, 2});
  add_(y, wrap_scalar(1.0, DType::kFloat64));
  run_backward(sum(y));
  std::vector<double> want(x.numel(), 0.0);
  std::vector<double> iv = values(idx);
  for (size_t o = 0; o < iv.size(); ++o) want[(o / 4) * 16 + static_cast<size_t>(iv[o])] = 1.0;
  expect_near(values(x.grad()), want, 0);
}
