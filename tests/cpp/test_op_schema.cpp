// Tier (a): op signatures (core/op_schema.h): parsing, and the registry's signatures agreeing
// with the ops they call.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "core/dispatcher.h"
#include "ops/op_helpers.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

TEST(OpSchema, ParsesTypesDefaultsKeywordOnlyAndNamedOutputs) {
  Schema s = parse_schema(
      "topk(Tensor input, int k, int dim=-1, bool largest=True, *, dtype? dtype=None, "
      "str mode='a, b', float eps=1e-05, int[]? dims=None) -> (Tensor values, Tensor indices)");
  EXPECT_EQ(s.name, "topk");
  ASSERT_EQ(s.params.size(), 8u);
  EXPECT_EQ(s.params[0].type, ParamType::kTensor);
  EXPECT_FALSE(s.params[1].has_default);
  EXPECT_EQ(std::get<int64_t>(s.params[2].default_value), -1);
  EXPECT_TRUE(std::get<bool>(s.params[3].default_value));
  EXPECT_FALSE(s.params[3].keyword_only);
  EXPECT_TRUE(s.params[4].keyword_only);
  EXPECT_TRUE(s.params[4].optional);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(s.params[4].default_value));
  EXPECT_EQ(std::get<std::string>(s.params[5].default_value), "a, b");
  EXPECT_DOUBLE_EQ(std::get<double>(s.params[6].default_value), 1e-5);
  EXPECT_EQ(s.params[7].type, ParamType::kInts);
  EXPECT_EQ(s.returns, (std::vector<std::string>{"values", "indices"}));
  EXPECT_FALSE(s.returns_list);
}

TEST(OpSchema, NumbersKeepTheirKindAndLayoutParametersDefaultToNone) {
  Schema s = parse_schema(
      "arange(Number start, Number end, Number step=1, Number eps=0.5, Number flag=True, *, "
      "Placement? placement=None, SBP? sbp=None) -> Tensor");
  EXPECT_EQ(s.params[0].type, ParamType::kNumber);
  EXPECT_EQ(std::get<int64_t>(s.params[2].default_value), 1);
  EXPECT_DOUBLE_EQ(std::get<double>(s.params[3].default_value), 0.5);
  EXPECT_TRUE(std::get<bool>(s.params[4].default_value));
  EXPECT_EQ(s.params[5].type, ParamType::kPlacement);
  EXPECT_EQ(s.params[6].type, ParamType::kSbp);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(s.params[6].default_value));
  CallArgs a({int64_t{3}, 2.5, true});
  EXPECT_TRUE(a.integral(0));
  EXPECT_FALSE(a.integral(1));
  EXPECT_TRUE(a.integral(2));  // a bool counts as an integer, as in Python
  EXPECT_DOUBLE_EQ(a.scalar(0), 3.0);
  EXPECT_DOUBLE_EQ(a.scalar(1), 2.5);
  EXPECT_DOUBLE_EQ(a.scalar(2), 1.0);
}

// Every creation signature ends with the parameters the front end places the tensor with.
TEST(OpSchema, EveryCreationSignatureTakesADeviceAndRequiresGrad) {
  int creation = 0;
  for (const OpDef& def : registered_ops())
    for (const Api& api : def.api) {
      if (!(api.bind & kCreation)) continue;
      ++creation;
      std::vector<std::string> names;
      for (const Param& p : api.parsed.params)
        if (p.keyword_only) names.push_back(p.name);
      EXPECT_NE(std::find(names.begin(), names.end(), "device"), names.end()) << api.schema;
      EXPECT_EQ(names.back(), "requires_grad") << api.schema;
      // zeros(size, ...) and input.new_zeros(size, ...) as OneFlow's; zeros_like(input) keeps
      // input's placement.
      const bool like = api.parsed.params[0].type == ParamType::kTensor && !(api.bind & kMethod);
      EXPECT_EQ(std::find(names.begin(), names.end(), "placement") != names.end(), !like)
          << api.schema;
    }
  EXPECT_GE(creation, 20);
}

TEST(OpSchema, VarargsAreTheOnlyPositionalIntListOrATrailingTensorList) {
  EXPECT_EQ(parse_schema("view(Tensor input, int[] shape) -> Tensor").varargs_param(true), 1);
  EXPECT_EQ(parse_schema("zeros(int[] size, *, dtype? dtype=None)").varargs_param(false), 0);
  EXPECT_EQ(
      parse_schema("sum(Tensor input, int[]? dim=None, bool keepdim=False)").varargs_param(true),
      -1);
  EXPECT_EQ(parse_schema("einsum(str equation, Tensor[] operands)").varargs_param(false), 1);
  EXPECT_EQ(parse_schema("cat(Tensor[] tensors, int dim=0)").varargs_param(false), -1);
}

TEST(OpSchema, MalformedSchemasAreInternalErrorsNamingTheText) {
  EXPECT_NE(
      error_of<std::logic_error>([] { parse_schema("f(Tensor input"); }).find("f(Tensor input"),
      std::string::npos);
  EXPECT_NE(
      error_of<std::logic_error>([] { parse_schema("f(Tensr input)"); }).find("unknown type Tensr"),
      std::string::npos);
  EXPECT_NE(error_of<std::logic_error>([] { parse_schema("f(int x=None)"); }).find("not optional"),
            std::string::npos);
  EXPECT_NE(error_of<std::logic_error>([] {
              parse_schema("f(Tensor x) -> Tensor[2]");
            }).find("bad return"),
            std::string::npos);
}

// A signature without a call runs its op: tensors as inputs, the rest as attributes by name.
TEST(OpSchema, EverySignatureWithoutACallNamesOnlyTheOpsAttributes) {
  int checked = 0;
  for (const OpDef& def : registered_ops())
    for (const Api& api : def.api) {
      EXPECT_FALSE(api.parsed.name.empty()) << def.name;
      if (api.call) continue;
      EXPECT_TRUE(def.dispatched()) << api.schema;
      for (const Param& p : api.parsed.params) {
        if (p.type == ParamType::kTensor || p.type == ParamType::kOperand ||
            p.type == ParamType::kTensors)
          continue;
        bool found = false;
        for (const AttrDef& a : def.attrs) found |= p.name == a.name;
        EXPECT_TRUE(found) << api.schema << ": no attribute " << p.name;
      }
      ++checked;
    }
  EXPECT_GT(checked, 10);
}

TEST(OpSchema, CallApiRunsTheOpWithDefaultsFilledIn) {
  const OpDef& tril = op_def("tril");
  ASSERT_EQ(tril.api.size(), 1u);
  Tensor x = full({3, 3}, 1.0);
  CallResult r = call_api(tril, tril.api[0], CallArgs({x, int64_t{-1}}));
  Tensor y = std::get<Tensor>(r);
  EXPECT_EQ(sum(y).item<float>(), 3.0f);  // the three elements below the diagonal
  EXPECT_EQ(y.data<float>()[3], 1.0f);
  EXPECT_EQ(y.data<float>()[0], 0.0f);
}

namespace {

Tensor scaled_sum(const Tensor& x, std::optional<int64_t> dim, double scale) {
  return mul(dim ? sum(x, {*dim}) : sum(x), full({}, scale));
}
std::tuple<Tensor, Tensor> halves(const Tensor& x, int64_t dim) {
  std::vector<Tensor> parts = chunk(x, 2, dim);
  return {parts[0], parts[1]};
}

}  // namespace

TEST(OpSchema, AFrontFunctionReadsTheArgumentsByPositionAsItsTypes) {
  ApiCall call = call_front<scaled_sum>();
  const Schema schema = parse_schema("f(Tensor input, int? dim=None, Number scale=1) -> Tensor");
  EXPECT_EQ(call.mismatch(schema), "");
  Tensor x = full({2, 3}, 1.0);
  // A Number given as an int still reaches the double parameter; None as nullopt.
  EXPECT_EQ(std::get<Tensor>(call(CallArgs({x, std::monostate{}, int64_t{2}}))).item<float>(),
            12.0f);
  EXPECT_EQ(std::get<Tensor>(call(CallArgs({x, int64_t{1}, 0.5}))).shape(), (Shape{2}));
  // A tuple of tensors comes back as the named tuple's fields, in order.
  CallResult both = call_front<halves>()(CallArgs({full({4}, 2.0), int64_t{0}}));
  ASSERT_EQ(std::get<std::vector<Tensor>>(both).size(), 2u);
}

TEST(OpSchema, AFrontFunctionThatDoesNotFitItsSchemaSaysWhere) {
  ApiCall call = call_front<scaled_sum>();
  EXPECT_EQ(call.mismatch(parse_schema("f(Tensor input, int? dim=None) -> Tensor")),
            "it takes 3 arguments and the schema 2");
  EXPECT_EQ(call.mismatch(parse_schema("f(Tensor input, float? dim, float scale) -> Tensor")),
            "its parameter for 'dim' cannot take a float?");
  EXPECT_EQ(call.mismatch(parse_schema("f(Tensor input, int? dim, float? scale) -> Tensor")),
            "its parameter for 'scale' cannot take a float?");
  // Registered rows were checked when the library loaded; count those that use one.
  int derived = 0;
  for (const OpDef& def : registered_ops())
    for (const Api& api : def.api)
      if (api.call.mismatch) {
        EXPECT_EQ(api.call.mismatch(api.parsed), "") << api.schema;
        ++derived;
      }
  EXPECT_GT(derived, 90);
}
