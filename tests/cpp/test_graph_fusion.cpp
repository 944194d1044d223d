// The elementwise fusion pass (graph/passes/fuse_elementwise.cpp) and the op it makes
// (ops/fused.h): which nodes fuse, which stay apart and why, and that a fused graph computes
// bit for bit what its parts did.
#include <gtest/gtest.h>

#include "core/dispatcher.h"
#include "graph/executor.h"
#include "graph/passes/passes.h"
#include "graph/trace.h"
#include "ops/fused.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

// The graph's nodes but the constants the trace made (full), which the pass may move.
std::vector<std::string> node_names(const graph::Graph& g) {
  std::vector<std::string> out;
  for (const graph::Node& n : g.nodes())
    if (n.name() != "full") out.push_back(n.name());
  return out;
}

const graph::Node& only_fused(const graph::Graph& g) {
  const graph::Node* found = nullptr;
  for (const graph::Node& n : g.nodes())
    if (n.name() == "_fused_elementwise") {
      EXPECT_EQ(found, nullptr);
      found = &n;
    }
  EXPECT_NE(found, nullptr);
  return *found;
}

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const Tensor a = contiguous(got), b = contiguous(want);
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << "element " << i;
}

graph::Value local(const Shape& shape) {
  return {shape, DType::kFloat32, Device{}};
}

}  // namespace

TEST(FuseElementwise, ABiasGeluAndResidualChainIsOneNodeComputingWhatItsPartsDid) {
  // h = gelu(x @ w + b); y = h * 0.5 + x @ w: the bias add, gelu, scaling and residual add fuse
  // behind the matmul, which is no elementwise op. The sum before gelu is read only inside.
  Tensor w = randn({8, 33}), b = randn({33}), x = randn({5, 8});
  graph::Trace trace;
  Tensor tx = trace.input(x);
  Tensor m = matmul(tx, w);
  Tensor y = add(mul(gelu(add(m, b)), full({}, 0.5)), m);
  const graph::Graph traced = trace.finish({y});
  const graph::Graph fused = graph::fuse_elementwise(traced);
  EXPECT_EQ(node_names(fused), (std::vector<std::string>{"matmul", "_fused_elementwise"}));
  const graph::Node& f = only_fused(fused);
  EXPECT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.inputs.size(), 3u);  // m, b and the constant; m is read twice
  EXPECT_NE(fused.str().find("= gelu("), std::string::npos) << fused.str();

  const Tensor want = add(mul(gelu(add(matmul(x, w), b)), full({}, 0.5)), matmul(x, w));
  expect_same(graph::run(fused, {x})[0], want);
  expect_same(graph::run(traced, {x})[0], want);
}

TEST(FuseElementwise, AValueReadOutsideTheChainIsAnOutputOfTheFusedNode) {
  // a = x + 1 is read by the chain and by a reduction after it: the fused node writes it too
  // (exp(a) stays inside).
  Tensor x = randn({4, 17});
  graph::Trace trace;
  Tensor tx = trace.input(x);
  Tensor a = add(tx, full({}, 1.0));
  Tensor e = mul(exp(a), full({}, 2.0));
  Tensor s = sum(a, {1}, false);
  const graph::Graph g = graph::fuse_elementwise(trace.finish({e, s}));
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"_fused_elementwise", "sum"}));
  EXPECT_EQ(only_fused(g).outputs.size(), 2u);
  const std::vector<Tensor> got = graph::run(g, {x});
  expect_same(got[0], mul(exp(add(x, full({}, 1.0))), full({}, 2.0)));
  expect_same(got[1], sum(add(x, full({}, 1.0)), {1}, false));
}

TEST(FuseElementwise, OnTheCpuAChainWhoseEveryValueIsReadOutsideStaysApart) {
  // a = x + 1 read by a reduction, exp(a) returned: fused, nothing would stay out of memory.
  Tensor x = randn({4, 17});
  graph::Trace trace;
  Tensor tx = trace.input(x);
  Tensor a = add(tx, full({}, 1.0));
  const graph::Graph traced = trace.finish({exp(a), sum(a, {1}, false)});
  EXPECT_EQ(node_names(graph::fuse_elementwise(traced)), node_names(traced));
}

TEST(FuseElementwise, ANodeReadingWhatIsComputedAfterTheChainStartsStaysApart) {
  // %2 = neg(x); %3 = matmul(x, w); %4 = mul(%2, %3): the fused node would stand where neg was,
  // before the matmul it needs. Nothing fuses.
  graph::Graph g;
  const int x = g.add_input(local({4, 4}));
  const int w = g.add_variable(randn({4, 4}));
  const int n = g.add_value(local({4, 4})), m = g.add_value(local({4, 4})),
            p = g.add_value(local({4, 4}));
  g.add_node(graph::op_node(op_def("neg"), {x}, {n}));
  g.add_node(graph::op_node(op_def("matmul"), {x, w}, {m}));
  g.add_node(graph::op_node(op_def("mul"), {n, m}, {p}));
  g.set_outputs({p});
  EXPECT_EQ(node_names(graph::fuse_elementwise(g)), node_names(g));
}

TEST(FuseElementwise, AnInPlaceWriteBetweenKeepsItsReaderOutOfTheChain) {
  // %2 = neg(x); %3 = add_(v, x) writes the variable; %4 = mul(%2, %3) must read v written,
  // which a fused node standing where neg is would not.
  graph::Graph g;
  const int x = g.add_input(local({3}));
  const int v = g.add_variable(zeros({3}));
  const int n = g.add_value(local({3})), u = g.add_value(local({3})), p = g.add_value(local({3}));
  g.add_node(graph::op_node(op_def("neg"), {x}, {n}));
  g.add_node(graph::op_node(op_def("add_"), {v, x}, {u}));
  g.add_node(graph::op_node(op_def("mul"), {n, u}, {p}));
  g.set_outputs({p});
  const graph::Graph out = graph::fuse_elementwise(g);
  EXPECT_EQ(node_names(out), node_names(g));
  const Tensor in = full({3}, 2.0);
  EXPECT_EQ(graph::run(out, {in})[0].data<float>()[0], -4.0f);
}

TEST(FuseElementwise, AMembersOutputWrittenInPlaceIsReadAsWritten) {
  // %2 = neg(x); %3 = add_(%2, x) writes it; %4 = mul(%2, x) reads the written memory: a fused
  // neg and mul would read neg's value as it was.
  graph::Graph g;
  const int x = g.add_input(local({3}));
  const int n = g.add_value(local({3})), u = g.add_value(local({3})), p = g.add_value(local({3}));
  g.add_node(graph::op_node(op_def("neg"), {x}, {n}));
  g.add_node(graph::op_node(op_def("add_"), {n, x}, {u}));
  g.add_node(graph::op_node(op_def("mul"), {n, x}, {p}));
  g.set_outputs({p});
  const graph::Graph out = graph::fuse_elementwise(g);
  EXPECT_EQ(node_names(out), node_names(g));
  EXPECT_EQ(graph::run(out, {full({3}, 2.0)})[0].data<float>()[0], 0.0f);  // (-2 + 2) * 2
}

TEST(FuseElementwise, ALongChainSplitsWithinTheRegisterLimitAndStaysExact) {
  // 50 alternating ops on one value: more steps than a program holds registers.
  Tensor x = randn({3, 70});
  graph::Trace trace;
  Tensor t = trace.input(x);
  for (int i = 0; i < 50; ++i) t = i % 2 ? tanh(t) : mul(t, full({}, 1.5));
  const graph::Graph g = graph::fuse_elementwise(trace.finish({t}));
  Tensor want = x;
  for (int i = 0; i < 50; ++i) want = i % 2 ? tanh(want) : mul(want, full({}, 1.5));
  EXPECT_EQ(node_names(g).size(), 3u) << g.str();  // 10 constants and 20 steps a program
  for (const graph::Node& n : g.nodes()) {
    if (n.name() == "full") continue;
    ASSERT_EQ(n.name(), "_fused_elementwise");
    EXPECT_LE(FusedProgram::from(n.attrs, "test").registers(), kMaxFusedRegisters);
  }
  expect_same(graph::run(g, {x})[0], want);
}

TEST(FuseElementwise, OpsOfAnotherShapeOrDtypeOrNoElementwiseStepStayApart) {
  // x (4, 5) + row (5): fused with its relu; their sum over a broadcast (3, 4, 5) is another
  // shape; a comparison has a bool output; an in-place op writes its input.
  Tensor x = randn({4, 5}), row = randn({5});
  graph::Trace trace;
  Tensor tx = trace.input(x);
  Tensor a = relu(add(tx, row));
  Tensor b = add(a, zeros({3, 4, 5}));
  Tensor c = gt(b, full({}, 0.0));
  const graph::Graph g = graph::fuse_elementwise(trace.finish({b, c}));
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"_fused_elementwise", "add", "gt"}));
}

TEST(FusedElementwise, AMalformedProgramRaisesNamingWhatIsWrong) {
  const OpDef& op = op_def("_fused_elementwise");
  FusedProgram p;
  p.inputs = 1;
  p.shape = {3};
  p.steps = {{{ElementwiseStep::kUnary, int32_t(UnaryOp::kExp)}, 0, 0, 0}};
  p.outputs = {1};
  Attrs good = p.attrs();
  good.set("parts", std::string("exp"));
  const Tensor x = randn({3});
  expect_same(dispatch(op, {x}, good)[0], exp(x));

  Attrs reads_later = good;
  reads_later.set("program", std::vector<int64_t>{0, int64_t(UnaryOp::kExp), 1, 0, 0});
  EXPECT_NE(error_of([&] { dispatch(op, {x}, reads_later); }).find("reads register 1"),
            std::string::npos);
  Attrs no_output = good;
  no_output.set("outputs", std::vector<int64_t>{7});
  EXPECT_NE(error_of([&] { dispatch(op, {x}, no_output); }).find("output register 7"),
            std::string::npos);
  Attrs integers = good;
  integers.set("dtype", DType::kInt64);
  EXPECT_NE(error_of<TypeError>([&] { dispatch(op, {x}, integers); }).find("floating"),
            std::string::npos);
  EXPECT_NE(error_of([&] { dispatch(op, {randn({2})}, good); }).find("cannot be broadcast"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              dispatch(op, {x, x}, good);
            }).find("reads 1 inputs, got 2"),
            std::string::npos);
}
