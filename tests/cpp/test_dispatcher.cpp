// Tier (a): the dispatcher's routing, op definitions' infer errors and attribute schemas, and the
// meta device (shapes and dtypes without memory, backward included).
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd/engine.h"
#include "core/dispatcher.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

using ofl::internal::testing::kMeta;

Tensor meta(const Shape& shape, DType dtype = DType::kFloat32) {
  return Tensor::empty(shape, dtype, kMeta);
}

}  // namespace

TEST(Dispatcher, MetaInputsGiveMetaOutputsWithoutMemory) {
  Tensor x = meta({4, 3}), b = meta({3}, DType::kFloat64);
  Tensor y = add(exp(x), b);
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(y.storage()->data(), nullptr);
  EXPECT_EQ(kind_of({x, b}), TensorKind::kMeta);
}

TEST(Dispatcher, KindIsLocalForCpuAndMetaWhenAnyInputIsMeta) {
  Tensor c = zeros({2});
  EXPECT_EQ(kind_of({c, Tensor()}), TensorKind::kLocal);
  // A Python scalar (a 0-d cpu wrapped number) joins a meta tensor, as in PyTorch.
  Tensor y = mul(meta({2, 2}), wrap_scalar(3.0, DType::kFloat64));
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.dtype(), DType::kFloat32);
}

TEST(Dispatcher, InferErrorsAreTheSameOnMetaAndCpu) {
  std::string on_cpu = error_of([] { add(zeros({4, 3}), zeros({5, 2})); });
  std::string on_meta = error_of([] { add(meta({4, 3}), meta({5, 2})); });
  EXPECT_NE(on_cpu.find("[add]"), std::string::npos) << on_cpu;
  EXPECT_EQ(on_cpu, on_meta);
  std::string bool_cpu = error_of<TypeError>([] { neg(zeros({2}, DType::kBool)); });
  std::string bool_meta = error_of<TypeError>([] { neg(meta({2}, DType::kBool)); });
  EXPECT_EQ(bool_cpu, bool_meta);
  EXPECT_NE(bool_meta.find("[neg]"), std::string::npos) << bool_meta;
}

TEST(Dispatcher, MixingCpuAndMetaTensorsRaisesNamingBothDevices) {
  std::string e = error_of([] { add(zeros({2, 2}), meta({2, 2})); });
  EXPECT_NE(e.find("different devices: cpu and meta"), std::string::npos) << e;
}

TEST(Dispatcher, AttributesAreCheckedAgainstTheOpsSchema) {
  const OpDef& pow_scalar = op_def("pow_scalar");
  ASSERT_EQ(pow_scalar.attrs.size(), 1u);
  EXPECT_EQ(pow_scalar.attrs[0].type, AttrType::kFloat);
  std::string missing = error_of([&] { dispatch(pow_scalar, {zeros({2})}); });
  EXPECT_NE(missing.find("missing attribute 'exponent' (float)"), std::string::npos) << missing;
  std::string wrong = error_of([&] {
    dispatch(pow_scalar, {zeros({2})}, {{"exponent", int64_t(2)}});
  });
  EXPECT_NE(wrong.find("'exponent' must be of type float"), std::string::npos) << wrong;
  Tensor y = dispatch1(pow_scalar, {full({2}, 3.0)}, {{"exponent", 2.0}});
  EXPECT_EQ(y.data<float>()[0], 9.0f);
}

TEST(Dispatcher, InferRunsAloneOnMetas) {
  const OpDef& where_def = op_def("where");
  std::vector<TensorMeta> in = {
      {{4, 1}, DType::kBool}, {{3}, DType::kInt64}, {{}, DType::kFloat32}};
  std::vector<TensorMeta> out = infer_metas(where_def, in, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{4, 3}));
  EXPECT_EQ(out[0].dtype, DType::kFloat32);  // a 0-d float over int64 dims promotes
  in[0].dtype = DType::kFloat32;
  std::string e = error_of<TypeError>([&] { infer_metas(where_def, in, {}); });
  EXPECT_NE(e.find("[where] condition must be a bool tensor"), std::string::npos) << e;
}

TEST(Dispatcher, BackwardRunsOnMetaAndGivesEveryInputGradientsShape) {
  Tensor x = meta({4, 3}), w = meta({4, 3});
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor y = tanh(mul(x, w));
  autograd::backward({y}, {meta({4, 3})}, false, false);
  ASSERT_TRUE(x.grad().defined() && w.grad().defined());
  EXPECT_TRUE(x.grad().device().is_meta());
  EXPECT_EQ(x.grad().shape(), (Shape{4, 3}));
  EXPECT_EQ(w.grad().shape(), (Shape{4, 3}));
}

TEST(Dispatcher, BackwardIsWrittenInOpsSoSecondOrderGradientsWork) {
  // d2/dx2 exp(x) * x = exp(x) (x + 2)
  Tensor x = full({1}, 0.5, DType::kFloat64);
  x.set_requires_grad(true);
  Tensor y = mul(exp(x), x);
  auto g = autograd::grad({y}, {ones({1}, DType::kFloat64)}, {x}, true, true, false);
  auto gg = autograd::grad({g[0]}, {ones({1}, DType::kFloat64)}, {x}, false, false, false);
  EXPECT_NEAR(gg[0].data<double>()[0], std::exp(0.5) * 2.5, 1e-12);
}

TEST(Dispatcher, EveryDispatchedOpHasACostAndNamesItselfInErrors) {
  int dispatched = 0;
  for (const OpDef& def : registered_ops()) {
    if (!def.dispatched()) continue;
    ++dispatched;
    EXPECT_NE(def.cost, nullptr) << def.name;
    if (def.differentiable) EXPECT_TRUE(def.backward) << def.name;
  }
  EXPECT_GT(dispatched, 40);
}

TEST(Dispatcher, MatmulInfersNumpyShapesAndRaisesAsPyTorchOnMixedDtypes) {
  EXPECT_EQ(matmul(meta({2, 1, 5, 3}), meta({4, 3, 6})).shape(), (Shape{2, 4, 5, 6}));
  EXPECT_EQ(matmul(meta({3}), meta({2, 3, 6})).shape(), (Shape{2, 6}));
  EXPECT_EQ(matmul(meta({3}), meta({3})).shape(), (Shape{}));
  std::string e = error_of<TypeError>([] { matmul(zeros({2, 3}), zeros({3, 2}, DType::kInt64)); });
  EXPECT_NE(e.find("[matmul] expected both operands to have the same dtype"), std::string::npos)
      << e;
  EXPECT_EQ(e, error_of<TypeError>([] { matmul(meta({2, 3}), meta({3, 2}, DType::kInt64)); }));
  e = error_of([] { matmul(meta({2, 3}), meta({4, 2})); });
  EXPECT_NE(e.find("inner dimensions differ (3 vs 4)"), std::string::npos) << e;
  e = error_of([] { matmul(meta({2, 2, 3}), meta({3, 3, 2})); });
  EXPECT_NE(e.find("cannot be broadcast"), std::string::npos) << e;
  e = error_of([] { matmul(meta({}), meta({3})); });
  EXPECT_NE(e.find("at least one dimension"), std::string::npos) << e;
}

TEST(Dispatcher, MatmulBackwardOnMetaGivesVectorOperandsTheirShape) {
  Tensor a = meta({4, 3}), b = meta({3});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  autograd::backward({matmul(a, b)}, {meta({4})}, false, false);
  EXPECT_EQ(a.grad().shape(), (Shape{4, 3}));
  EXPECT_EQ(b.grad().shape(), (Shape{3}));
}
