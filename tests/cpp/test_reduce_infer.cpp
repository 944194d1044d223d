// Tier (a): the reduction ops' definitions without data: infer's checks and output metas, the
// same errors on meta and cpu, backward on meta, and the SBP rules read from typed attributes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/autograd/engine.h"
#include "core/dispatcher.h"
#include "core/op_def.h"
#include "ops/ops.h"
#include "sbp/signature.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

using ofl::internal::testing::kMeta;

Tensor meta(const Shape& shape, DType dtype = DType::kFloat32) {
  return Tensor::empty(shape, dtype, kMeta);
}

Attrs over(std::vector<int64_t> axes, bool keepdim = false) {
  return {{"axes", std::move(axes)}, {"keepdim", keepdim}};
}
Attrs along(int64_t axis, bool keepdim = false) {
  return {{"axis", axis}, {"keepdim", keepdim}};
}

std::vector<TensorMeta> infer(const char* op, const Shape& shape, const Attrs& attrs,
                              DType dtype = DType::kFloat32) {
  return infer_metas(op_def(op), {{shape, dtype}}, attrs);
}

// The error f raises on a cpu tensor of `shape`, checked to be the same on a meta tensor.
template <class E = Error, class F>
std::string same_error(const Shape& shape, DType dtype, F&& f) {
  std::string on_cpu = error_of<E>([&] { f(zeros(shape, dtype)); });
  std::string on_meta = error_of<E>([&] { f(meta(shape, dtype)); });
  EXPECT_EQ(on_cpu, on_meta);
  return on_meta;
}

bool has(const std::vector<SbpSignature>& sigs, const std::string& sig) {
  return std::any_of(sigs.begin(), sigs.end(),
                     [&](const SbpSignature& s) { return s.str() == sig; });
}

}  // namespace

TEST(ReduceInfer, OutputShapesAndDtypesFollowAxesKeepdimAndTheOp) {
  Attrs sum_attrs = over({-1, 0}, true);
  sum_attrs.set("dtype", DType::kFloat64);
  auto s = infer("sum", {4, 3, 5}, sum_attrs);
  EXPECT_EQ(s[0].shape, (Shape{1, 3, 1}));
  EXPECT_EQ(s[0].dtype, DType::kFloat64);
  EXPECT_EQ(infer("prod", {4, 3}, over({}), DType::kBool)[0].dtype, DType::kInt64);
  EXPECT_EQ(infer("prod", {4, 3}, over({}))[0].shape, Shape{});
  EXPECT_EQ(infer("amax", {4, 3}, over({1}), DType::kInt32)[0].dtype, DType::kInt32);
  EXPECT_EQ(infer("all", {4, 3}, over({0}))[0].dtype, DType::kBool);
  auto m = infer("max", {4, 3}, along(-1, true), DType::kInt32);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].shape, (Shape{4, 1}));
  EXPECT_EQ(m[0].dtype, DType::kInt32);
  EXPECT_EQ(m[1].dtype, DType::kInt64);
  auto a = infer("argmin", {4, 3}, along(0));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].shape, (Shape{3}));
  EXPECT_EQ(a[0].dtype, DType::kInt64);
  EXPECT_EQ(infer("max", {}, along(0))[0].shape, Shape{});  // a 0-d input takes axis 0 and -1
}

TEST(ReduceInfer, SumOfIntegersAndBoolsAccumulatesInInt64UnlessADtypeIsGiven) {
  EXPECT_EQ(sum(meta({2, 3}, DType::kInt32)).dtype(), DType::kInt64);
  EXPECT_EQ(sum(meta({2, 3}, DType::kBool), {1}).dtype(), DType::kInt64);
  EXPECT_EQ(sum(meta({2, 3}, DType::kInt32), {}, false, DType::kFloat32).dtype(), DType::kFloat32);
}

TEST(ReduceInfer, OutOfRangeAndRepeatedAxesNameTheOp) {
  Attrs sum_attrs = over({2});
  sum_attrs.set("dtype", DType::kFloat32);
  std::string e = error_of<IndexError>([&] { infer("sum", {2, 3}, sum_attrs); });
  EXPECT_NE(e.find("[sum] dimension 2 is out of range"), std::string::npos) << e;
  e = error_of<IndexError>([] { infer("argmax", {2, 3}, along(-3)); });
  EXPECT_NE(e.find("[argmax] dimension -3 is out of range"), std::string::npos) << e;
  e = error_of([] { infer("amin", {2, 3}, over({1, -1})); });
  EXPECT_NE(e.find("[amin] dimension 1 appears more than once"), std::string::npos) << e;
  EXPECT_NE(e.find("(1, -1)"), std::string::npos) << e;
}

TEST(ReduceInfer, MaxAndMinNeedANonEmptySliceSumDoesNot) {
  for (const char* op : {"amax", "amin"}) {
    std::string e = error_of([&] { infer(op, {0, 3}, over({0})); });
    EXPECT_NE(e.find(std::string("[") + op + "] cannot reduce over a zero-size dimension"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("(0, 3)"), std::string::npos) << e;
    EXPECT_EQ(infer(op, {0, 3}, over({1}))[0].shape, (Shape{0}));  // nothing to reduce
  }
  for (const char* op : {"max", "min", "argmax", "argmin"}) {
    std::string e = error_of([&] { infer(op, {3, 0}, along(1)); });
    EXPECT_NE(e.find(std::string("[") + op + "] cannot reduce over a zero-size"), std::string::npos)
        << e;
  }
  EXPECT_EQ(infer("prod", {0, 3}, over({0}))[0].shape, (Shape{3}));
}

TEST(ReduceInfer, MaxWithIndicesRejectsBoolsAmaxAndAllTakeThem) {
  for (const char* op : {"max", "min", "argmax", "argmin"}) {
    std::string e = error_of<TypeError>([&] { infer(op, {2, 3}, along(0), DType::kBool); });
    EXPECT_NE(
        e.find(std::string("[") + op + "] is not supported for bool tensors; got shape (2, 3)"),
        std::string::npos)
        << e;
  }
  EXPECT_EQ(infer("amax", {2, 3}, over({0}), DType::kBool)[0].dtype, DType::kBool);
  EXPECT_EQ(infer("any", {2, 3}, over({0}), DType::kFloat32)[0].dtype, DType::kBool);
}

TEST(ReduceInfer, AttributesAreTyped) {
  std::string e = error_of([] {
    infer("amax", {2, 3}, {{"axes", int64_t(0)}, {"keepdim", false}});
  });
  EXPECT_NE(e.find("'axes' must be of type ints"), std::string::npos) << e;
  e = error_of([] { infer("max", {2, 3}, over({0})); });
  EXPECT_NE(e.find("missing attribute 'axis' (int)"), std::string::npos) << e;
}

TEST(ReduceInfer, MetaRaisesTheSameErrorsAsCpu) {
  std::string e = same_error<IndexError>({2, 3}, DType::kFloat32, [](Tensor x) { sum(x, {2}); });
  EXPECT_NE(e.find("[sum]"), std::string::npos) << e;
  same_error({2, 3}, DType::kFloat32, [](Tensor x) { prod(x, {0, -2}); });
  same_error({0, 3}, DType::kFloat32, [](Tensor x) { amax(x, {0}); });
  same_error({0, 3}, DType::kFloat32, [](Tensor x) { min_dim(x, 0); });
  same_error({0}, DType::kFloat32, [](Tensor x) { argmax(x); });
  same_error<TypeError>({2}, DType::kBool, [](Tensor x) { max_dim(x, 0); });
  e = same_error<TypeError>({2}, DType::kInt64, [](Tensor x) { mean(x); });
  EXPECT_NE(e.find("[mean] expects a floating-point tensor"), std::string::npos) << e;
  same_error<TypeError>({2}, DType::kInt64, [](Tensor x) { var(x); });
  same_error<TypeError>({2}, DType::kInt64, [](Tensor x) { logsumexp(x, {0}); });
  e = same_error<TypeError>({2}, DType::kInt64, [](Tensor x) { ofl::internal::std(x); });
  EXPECT_NE(e.find("[std]"), std::string::npos) << e;
  e = same_error<IndexError>({2, 3}, DType::kFloat32, [](Tensor x) { logsumexp(x, {2}); });
  EXPECT_NE(e.find("[logsumexp]"), std::string::npos) << e;
  e = same_error<IndexError>({2, 3}, DType::kFloat32,
                             [](Tensor x) { ofl::internal::std(x, {-3}); });
  EXPECT_NE(e.find("[std]"), std::string::npos) << e;
}

TEST(ReduceInfer, BackwardOnMetaGivesTheInputsShape) {
  using Fn = Tensor (*)(const Tensor&);
  for (Fn f : std::initializer_list<Fn>{
           [](const Tensor& x) {
             return sum(x, {0, 2});
           },
           [](const Tensor& x) { return prod(x, {1}, true); },
           [](const Tensor& x) { return amax(x, {-1}); },
           [](const Tensor& x) { return amin(x); },
           [](const Tensor& x) { return mean(x, {1}); },
           [](const Tensor& x) {
             return var(x, {0, 1});
           },
           [](const Tensor& x) { return logsumexp(x, {2}); },
       }) {
    Tensor x = meta({4, 3, 5});
    x.set_requires_grad(true);
    Tensor y = f(x);
    EXPECT_TRUE(y.device().is_meta());
    auto g = autograd::grad({y}, {meta(y.shape())}, {x}, false, false, false);
    EXPECT_TRUE(g[0].device().is_meta());
    EXPECT_EQ(g[0].shape(), (Shape{4, 3, 5}));
    EXPECT_EQ(g[0].dtype(), DType::kFloat32);
  }
}

TEST(ReduceSbp, RulesReadTheTypedAttributes) {
  Attrs sum_attrs = over({1});
  sum_attrs.set("dtype", DType::kFloat32);
  SbpQuery q{.in = {{4, 6}}, .out = {{4}}, .typed = &sum_attrs, .parallel_num = 2};
  auto sigs = op_def("sum").sbp->signatures(q);
  EXPECT_TRUE(has(sigs, "S(0) -> S(0)"));
  EXPECT_TRUE(has(sigs, "S(1) -> P(sum)"));
  EXPECT_TRUE(has(sigs, "P(sum) -> P(sum)"));

  // amax over an axis of 2 on 3 ranks: a shard would be empty, so no S(1) -> P(max).
  Attrs amax_attrs = over({-1}, true);
  SbpQuery m{.in = {{4, 2}}, .out = {{4, 1}}, .typed = &amax_attrs, .parallel_num = 3};
  sigs = op_def("amax").sbp->signatures(m);
  EXPECT_TRUE(has(sigs, "S(0) -> S(0)"));
  EXPECT_FALSE(has(sigs, "S(1) -> P(max)"));
  EXPECT_TRUE(has(sigs, "P(max) -> P(max)"));
  m.parallel_num = 2;
  EXPECT_TRUE(has(op_def("amax").sbp->signatures(m), "S(1) -> P(max)"));

  // max with indices along axis 0, keepdim: splits of the other axis only, on both outputs.
  Attrs max_attrs = along(0, false);
  SbpQuery e{.in = {{4, 6, 2}}, .out = {{6, 2}, {6, 2}}, .typed = &max_attrs, .parallel_num = 2};
  sigs = op_def("max").sbp->signatures(e);
  ASSERT_EQ(sigs.size(), 2u);
  EXPECT_EQ(sigs[0].str(), "S(1) -> S(0), S(0)");
  EXPECT_EQ(sigs[1].str(), "S(2) -> S(1), S(1)");
}
