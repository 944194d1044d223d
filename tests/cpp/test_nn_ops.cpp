// Tier (a) for the nn ops (ops/nn.cpp, ops/loss.cpp): infer errors the same on meta and cpu,
// output metas, nll_loss's target check in its kernel, dropout drawing by logical index, and
// their SBP rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/dispatcher.h"
#include "core/op_def.h"
#include "ops/elementwise_math.h"
#include "ops/kernels.h"
#include "ops/ops.h"
#include "sbp/signature.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

using ofl::internal::testing::kMeta;
using Ints = std::vector<int64_t>;

// zeros of `shape` on cpu or meta.
Tensor on(bool meta, const Shape& shape, DType dtype = DType::kFloat32) {
  return meta ? Tensor::empty(shape, dtype, kMeta) : zeros(shape, dtype);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The error of `call(meta)` on cpu, checked to be the same on meta and to contain `parts`.
template <class E = Error, class F>
std::string same_error(F call, std::initializer_list<const char*> parts) {
  std::string cpu = error_of<E>([&] { call(false); });
  std::string meta = error_of<E>([&] { call(true); });
  EXPECT_EQ(cpu, meta);
  for (const char* p : parts) EXPECT_TRUE(contains(cpu, p)) << cpu << " lacks " << p;
  return cpu;
}

}  // namespace

TEST(NnOps, SoftmaxAndNormInferErrorsAreTheSameOnMetaAndCpu) {
  same_error<IndexError>([](bool m) { softmax(on(m, {2, 3}), 2); }, {"[softmax]", "dimension 2"});
  same_error<IndexError>([](bool m) { log_softmax(on(m, {}), -2); }, {"[log_softmax]"});
  same_error(
      [](bool m) {
        layer_norm(on(m, {2, 4}), {3}, Tensor(), Tensor());
      },
      {"[layer_norm]", "(3,)", "(2, 4)"});
  same_error(
      [](bool m) {
        layer_norm(on(m, {2, 4}), {4}, on(m, {5}), Tensor());
      },
      {"[layer_norm]", "weight of shape (5,)"});
  same_error(
      [](bool m) {
        layer_norm(on(m, {2, 4}), {4}, Tensor(), on(m, {2}));
      },
      {"[layer_norm]", "bias of shape (2,)"});
  same_error<TypeError>(
      [](bool m) {
        layer_norm(on(m, {2, 4}, DType::kInt64), {4}, Tensor(), Tensor());
      },
      {"[layer_norm]", "int64"});
  same_error([](bool m) { rms_norm(on(m, {2, 4}), {5}, Tensor()); }, {"[rms_norm]", "(5,)"});
}

TEST(NnOps, BackwardOpsCheckTheirOperands) {
  const OpDef& sb = op_def("softmax_backward");
  same_error(
      [&](bool m) {
        dispatch(sb, {on(m, {2, 3}), on(m, {3, 2})}, {{"axis", int64_t(1)}});
      },
      {"[softmax_backward]", "grad of shape (2, 3)", "(3, 2)"});
  const OpDef& lb = op_def("layer_norm_backward");
  same_error(
      [&](bool m) {
        dispatch(lb, {on(m, {2, 4}), on(m, {2, 4}), Tensor(), on(m, {3}), on(m, {2})},
                 {{"normalized_shape", Ints{4}}});
      },
      {"[layer_norm_backward]", "statistics (3,) float32", "expected shape (2,)"});
  const OpDef& nb = op_def("nll_loss_backward");
  same_error(
      [&](bool m) {
        dispatch(nb, {on(m, {3}), on(m, {2}, DType::kInt64)},
                 {{"ignore_index", int64_t(-100)}, {"classes", int64_t(4)}});
      },
      {"[nll_loss_backward]", "grad of shape (3,)", "(2,)"});
}

TEST(NnOps, LossAndDropoutErrorsAreTheSameOnMetaAndCpu) {
  same_error<TypeError>(
      [](bool m) {
        nll_loss(on(m, {2, 3}), on(m, {2}));
      },
      {"[nll_loss]", "integer", "float32"});
  same_error(
      [](bool m) {
        nll_loss(on(m, {3, 4}), on(m, {2}, DType::kInt64));
      },
      {"[nll_loss]", "(3, 4)", "expects target of shape (3,), got (2,)"});
  same_error([](bool m) { nll_loss(on(m, {5}), on(m, {1}, DType::kInt64)); },
             {"[nll_loss]", "0-d target"});
  same_error(
      [](bool m) {
        cross_entropy(on(m, {2, 3}), on(m, {2, 3}), -100, "mean", 2.0);
      },
      {"[cross_entropy]", "label_smoothing"});
  same_error([](bool m) { mse_loss(on(m, {2, 3}), on(m, {3, 2})); }, {"[mse_loss]", "(2, 3)"});
  same_error([](bool m) { dropout(on(m, {2}), 1.5, true); }, {"[dropout]", "1.5"});
  same_error([](bool m) { dropout(on(m, {2}), -0.5, false); }, {"[dropout]"});
}

TEST(NnOps, NormsGiveStatisticsOfTheLeadingShape) {
  std::vector<TensorMeta> in = {{{2, 3, 4}, DType::kFloat64}, {{4}}, {{4}}};
  auto out = infer_metas(op_def("layer_norm"), in, {{"normalized_shape", Ints{4}}, {"eps", 1e-5}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape, (Shape{2, 3, 4}));
  EXPECT_EQ(out[1].shape, (Shape{2, 3}));
  EXPECT_EQ(out[2].dtype, DType::kFloat64);
  in = {{{2, 3, 4}, DType::kFloat16}, {{3, 4}}};
  out = infer_metas(op_def("rms_norm"), in, {{"normalized_shape", Ints{3, 4}}, {"eps", 1e-5}});
  ASSERT_EQ(out.size(), 2u);  // (y, rstd): rms_norm has no mean
  EXPECT_EQ(out[1].shape, (Shape{2}));
  EXPECT_EQ(out[1].dtype, DType::kFloat32);
}

TEST(NnOps, NllLossKernelNamesTheBadTargetAndMetaNeverReadsIt) {
  Tensor target = full({2}, 7.0, DType::kInt64);
  std::string e = error_of<IndexError>([&] { nll_loss(zeros({2, 5}), target); });
  EXPECT_TRUE(contains(e, "[nll_loss] target 7 is out of bounds for 5 classes")) << e;
  // The ignored value passes; a negative one is named.
  Tensor ignored = full({2}, -100.0, DType::kInt64);
  EXPECT_EQ(nll_loss(zeros({2, 5}), ignored, -100, "sum").item<float>(), 0.0f);
  target.data<int64_t>()[1] = -3;
  target.data<int64_t>()[0] = 1;
  e = error_of<IndexError>([&] { nll_loss(zeros({2, 5}), target, -100, "none"); });
  EXPECT_TRUE(contains(e, "target -3 is out of bounds")) << e;
  // Meta tensors have no targets to read: shapes only.
  Tensor y = nll_loss(on(true, {2, 5, 3}), on(true, {2, 3}, DType::kInt64), -100, "none");
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
}

TEST(NnOps, DropoutOnMetaDrawsNothingAndGivesTheShape) {
  Generator gen(3);
  Tensor y = dropout(on(true, {4, 5}, DType::kFloat16), 0.3, true, &gen);
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.shape(), (Shape{4, 5}));
  EXPECT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(gen.offset(), 0u);
  dropout(ones({4, 5}), 0.3, true, &gen);
  EXPECT_EQ(gen.offset(), 20u);  // one counter per logical element
}

TEST(NnOps, RandomBlockDrawsTheLogicalTensorsValuesAtItsPlace) {
  const Shape logical{5, 4, 3};
  Tensor whole = Tensor::empty(logical, DType::kFloat64);
  random_kernel().get(DeviceType::kCPU)(whole, 0, 0.0, 1.0, 11, 100, {});
  const std::vector<int64_t> start{2, 1, 0};
  Tensor block = Tensor::empty({2, 3, 3}, DType::kFloat64);
  random_kernel().get(DeviceType::kCPU)(block, 0, 0.0, 1.0, 11, 100, {logical, start});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(block.data<double>()[(i * 3 + j) * 3 + k],
                  whole.data<double>()[((i + 2) * 4 + j + 1) * 3 + k]);
}

TEST(NnOps, SbpRulesSplitAroundTheReducedAxes) {
  auto has = [](const std::vector<SbpSignature>& sigs, const std::string& s) {
    return std::any_of(sigs.begin(), sigs.end(), [&](const auto& x) { return x.str() == s; });
  };
  Attrs axis{{"axis", int64_t(-1)}};
  SbpQuery soft{{{4, 6}}, {{4, 6}}, &axis, 2};
  auto sigs = op_def("softmax").sbp->signatures(soft);
  EXPECT_TRUE(has(sigs, "S(0) -> S(0)"));
  EXPECT_FALSE(has(sigs, "S(1) -> S(1)"));
  // The norms' backward: split rows give partial weight and bias gradients.
  Attrs ns{{"normalized_shape", Ints{6}}};
  SbpQuery norm{{{4, 6}, {4, 6}, {6}, {4}, {4}}, {{4, 6}, {6}, {6}}, &ns, 2};
  sigs = op_def("layer_norm_backward").sbp->signatures(norm);
  EXPECT_TRUE(has(sigs, "S(0), S(0), B, S(0), S(0) -> S(0), P(sum), P(sum)")) << sigs[0].str();
  EXPECT_TRUE(has(sigs, "P(sum), B, B, B, B -> P(sum), P(sum), P(sum)"));
  EXPECT_FALSE(has(sigs, "S(1), S(1), B, S(1), S(1) -> S(1), P(sum), P(sum)"));
  // nll_loss: the class axis only with the target replicated, giving partial sums (each shard
  // picks its own classes' targets); its backward gives the gradient split by class.
  SbpQuery nll{{{4, 5, 3}, {4, 3}}, {{4, 3}}, nullptr, 2};
  sigs = op_def("nll_loss").sbp->signatures(nll);
  EXPECT_TRUE(has(sigs, "S(0), S(0) -> S(0)"));
  EXPECT_TRUE(has(sigs, "S(2), S(1) -> S(1)"));
  EXPECT_TRUE(has(sigs, "S(1), B -> P(sum)"));
  EXPECT_FALSE(has(sigs, "S(1), B -> S(1)"));
  SbpQuery nll_grad{{{4, 3}, {4, 3}}, {{4, 5, 3}}, nullptr, 2};
  EXPECT_TRUE(has(op_def("nll_loss_backward").sbp->signatures(nll_grad), "B, B -> S(1)"));
}

TEST(NnOps, NllLossOnAShardOfTheClassesPicksOnlyItsOwn) {
  // Logits (2, 5) split by class: this shard holds classes [2, 4). Target 3 is its second
  // column; target 0 is another shard's (0 here); ignore_index gives 0 everywhere.
  Tensor x = Tensor::empty({2, 2}, DType::kFloat32);
  float* xp = x.data<float>();
  for (int i = 0; i < 4; ++i) xp[i] = static_cast<float>(i + 1);  // [[1, 2], [3, 4]]
  Tensor target = full({2}, 3.0, DType::kInt64);
  target.data<int64_t>()[1] = 0;
  const ClassView shard{2, 2, 1, 2, 5};
  Tensor out = Tensor::empty({2}, DType::kFloat32);
  nll_loss_kernel().get(DeviceType::kCPU)(x, target, shard, -100, out);
  EXPECT_EQ(out.data<float>()[0], -2.0f);
  EXPECT_EQ(out.data<float>()[1], 0.0f);
  Tensor gx = Tensor::empty({2, 2}, DType::kFloat32);
  nll_loss_backward_kernel().get(DeviceType::kCPU)(ones({2}), target, shard, -100, gx);
  EXPECT_EQ(gx.data<float>()[0], 0.0f);
  EXPECT_EQ(gx.data<float>()[1], -1.0f);
  EXPECT_EQ(gx.data<float>()[2], 0.0f);
  EXPECT_EQ(gx.data<float>()[3], 0.0f);
  // A target outside all the classes is named, whichever shard sees it.
  target.data<int64_t>()[1] = 5;
  std::string e = error_of<IndexError>(
      [&] { nll_loss_kernel().get(DeviceType::kCPU)(x, target, shard, -100, out); });
  EXPECT_TRUE(contains(e, "target 5 is out of bounds for 5 classes")) << e;
}

// GELU's exp on the CPU (ops/elementwise_math.h): within one ulp of exp on [-87.3, 0] (a grid of
// 200001 points, and -2^-k near 0), 0 below, 1 at 0.
TEST(ElementwiseMath, ExpOfANonPositiveFloatIsWithinOneUlp) {
  auto expect_close = [](float y) {
    const double want = std::exp(double(y));
    const double ulp = double(std::nextafter(float(want), INFINITY)) - double(float(want));
    ASSERT_LE(std::fabs(double(ew::exp_nonpositive(y)) - want), ulp) << y;
  };
  for (int k = 0; k <= 200000; ++k) expect_close(-87.3f * float(k) / 200000.0f);
  for (int k = 1; k < 40; ++k) expect_close(-std::ldexp(1.0f, -k));
  EXPECT_EQ(ew::exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(ew::exp_nonpositive(-87.4f), 0.0f);
  EXPECT_EQ(ew::exp_nonpositive(-INFINITY), 0.0f);
}
