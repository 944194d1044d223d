// Tier (a): op signatures (core/op_schema.h): parsing, and the registry's signatures agreeing
// with the ops they call.
#include <gtest/gtest.h>

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
