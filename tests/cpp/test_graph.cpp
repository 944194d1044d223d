// Graph mode without Python or ranks: the IR, the trace through the dispatcher's traced kind, the
// C++ executor, and each pass on small hand-built graphs (global ones laid over 4 ranks).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/primitives.h"
#include "graph/executor.h"
#include "graph/passes/passes.h"
#include "graph/serialize.h"
#include "graph/trace.h"
#include "ops/ops.h"
#include "sbp/global_info.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

// x @ w + b, then gelu: traced with w and b captured from outside.
graph::Graph trace_mlp(const Tensor& example, const Tensor& w, const Tensor& b) {
  graph::Trace trace;
  Tensor x = trace.input(example);
  EXPECT_TRUE(x.is_traced());
  Tensor y = gelu(add(matmul(x, w), b));
  EXPECT_TRUE(y.is_traced());
  EXPECT_EQ(y.shape(), (Shape{example.shape()[0], w.shape()[1]}));
  return trace.finish({y});
}

}  // namespace

TEST(Graph, TraceRecordsNodesAndRunsLikeEager) {
  Tensor w = randn({8, 4}), b = randn({4}), x = randn({3, 8});
  graph::Graph g = trace_mlp(x, w, b);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0].op->name, "matmul");
  EXPECT_EQ(g.variables().size(), 2u);
  const std::string ir = g.str();
  EXPECT_NE(ir.find("= matmul(%0, %1) : (3, 4) float32 cpu"), std::string::npos) << ir;
  EXPECT_NE(ir.find("gelu("), std::string::npos) << ir;

  const Tensor got = graph::run(g, {x})[0];
  const Tensor want = gelu(add(matmul(x, w), b));
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]);

  // Variables are bound by reference: an in-place update of w shows in the next run.
  fill_(w, 0.0);
  const Tensor zero_w = graph::run(g, {x})[0];
  const Tensor want_zero = gelu(add(matmul(x, w), b));
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_EQ(zero_w.data<float>()[i], want_zero.data<float>()[i]);
}

TEST(Graph, AGraphSavedAsJsonLoadsBackAndRunsAlike) {
  Tensor w = randn({8, 4}), b = randn({4}), x = randn({3, 8});
  const graph::Graph g = trace_mlp(x, w, b);
  const std::string text = graph::to_json(g);
  std::map<std::string, Tensor> weights;  // as weights.safetensors would give them, copied
  for (const graph::Variable& v : g.variables())
    weights[graph::variable_name(v)] = contiguous_copy(v.tensor);
  const graph::Graph loaded = graph::from_json(text, weights, "graph.json");
  EXPECT_EQ(graph::to_json(loaded), text);
  const Tensor want = graph::run(g, {x})[0], got = graph::run(loaded, {x})[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]);

  // Foreign or damaged texts raise naming the file and the entry; nothing runs.
  auto error = [&](const std::string& t, const std::map<std::string, Tensor>& ws) {
    return error_of([&] { graph::from_json(t, ws, "dir/graph.json"); });
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_NE(error("{\"values\": [", weights).find("dir/graph.json: not a JSON object"),
            std::string::npos);
  EXPECT_NE(error(replaced("\"format_version\": 1", "\"format_version\": 9"), weights)
                .find("format version 9, this build reads 1"),
            std::string::npos);
  EXPECT_NE(error(replaced("\"op\": \"gelu\"", "\"op\": \"system\""), weights)
                .find("runs 'system', which is not an op of this build"),
            std::string::npos);
  EXPECT_NE(error(text, {}).find("variable v1 is not in the weights"), std::string::npos);
  const std::string out = std::to_string(g.outputs()[0]);  // matmul reading the MLP's output
  EXPECT_NE(error(replaced("\"inputs\": [0, 1]", "\"inputs\": [" + out + ", 1]"), weights)
                .find("node 0 (matmul) reads value " + out + " before any node makes it"),
            std::string::npos);
  std::map<std::string, Tensor> wrong = weights;
  wrong.begin()->second = randn({2});
  EXPECT_NE(error(text, wrong).find("in the weights but (8, 4) float32 in the graph"),
            std::string::npos);
}

TEST(Graph, LyingOrMalformedGraphsRaiseBeforeAnythingRuns) {
  // Values: 0 x (3, 8), 1 w, 2 matmul, 3 b, 4 add, 5 gelu; nodes matmul, add, gelu.
  Tensor w = randn({8, 4}), b = randn({4}), x = randn({3, 8});
  const graph::Graph g = trace_mlp(x, w, b);
  const std::string text = graph::to_json(g);
  std::map<std::string, Tensor> weights;
  for (const graph::Variable& v : g.variables())
    weights[graph::variable_name(v)] = contiguous_copy(v.tensor);
  auto error = [&](const std::string& t) {
    return error_of([&] { graph::from_json(t, weights, "dir/graph.json"); });
  };
  auto replaced = [&](const std::string& from, const std::string& to, bool last = false) {
    std::string t = text;
    const size_t at = last ? t.rfind(from) : t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  auto expect = [&](const std::string& t, const std::string& want) {
    const std::string e = error(t);
    EXPECT_NE(e.find(want), std::string::npos) << e;
  };
  // An absent input where the op needs one, and an output the op does not make.
  expect(replaced("\"inputs\": [0, 1]", "\"inputs\": [-1, 1]"),
         "node 0 (matmul): [matmul] input 0 is required but absent");
  expect(replaced("\"outputs\": [2]", "\"outputs\": [2, 5]"),
         "node 0 (matmul) has 2 outputs where matmul makes 1");
  // The graph's output declared larger than what gelu gives: a reader would run past it.
  expect(replaced("{\"shape\": [3, 4]", "{\"shape\": [3, 400]", true),
         "node 2 (gelu)'s output 0 is declared (3, 400) float32 but gelu of its inputs gives (3, "
         "4) float32");
  // Collectives on local values, or reading no value at all.
  expect(replaced("\"op\": \"gelu\"", "\"op\": \"boxing\", \"kind\": \"boxing\""),
         "collectives make global values");
  std::string reduce =
      replaced("\"inputs\": [4], \"outputs\": [5]", "\"inputs\": [-1], \"outputs\": [5]");
  reduce.replace(reduce.find("\"op\": \"gelu\""), 12,
                 "\"op\": \"reduce\", \"kind\": \"reduce\", \"axes\": [0]");
  expect(reduce, "node 2 (reduce)'s input 0 is no value");
  // A node that says it draws random numbers without being a random op (found by fuzzing: the
  // executor read its missing offset).
  std::string drawing = text;
  drawing.replace(drawing.find("\"random_counters\": 0"), 20, "\"random_counters\": 1");
  expect(drawing, "node 0 (matmul) draws 1 random counters but has no seed and offset");
  // Nested 100,000 deep (a stack overflow in a recursive reader): refused before parsing.
  expect("{\"values\": " + std::string(100000, '[') + std::string(100000, ']') + "}",
         "dir/graph.json: nests deeper than 64 levels");
}

TEST(Graph, InputsThatDoNotMatchTheSignatureRaiseNamingIt) {
  Tensor w = randn({8, 4}), b = randn({4});
  graph::Graph g = trace_mlp(randn({3, 8}), w, b);
  EXPECT_NE(error_of([&] {
              graph::run(g, {});
            }).find("[graph] expects 1 inputs ((3, 8) float32 cpu), got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              graph::run(g, {randn({5, 8})});
            }).find("input 0 is (5, 8) float32, expected (3, 8) float32 cpu"),
            std::string::npos);
}

TEST(Graph, TracedTensorsHaveNoDataAndInPlaceWritesStayInTheGraph) {
  Tensor w = randn({2, 2});
  graph::Trace trace;
  Tensor x = trace.input(randn({2, 2}));
  EXPECT_NE(error_of([&] { sum(x).item<float>(); }).find("data is not available while tracing"),
            std::string::npos);
  Tensor y = mul(x, x);
  add_(w, x);  // a captured tensor's update: a node, written when the graph runs
  EXPECT_FALSE(w.is_traced());
  EXPECT_NE(error_of([&] {
              Tensor row = select(y, 0, 0);
              add_(row, select(x, 0, 0));
            }).find("through a view"),
            std::string::npos);
  add_(y, x);  // SSA: y now stands for the add_ node's output
  graph::Graph g = trace.finish({y});
  const graph::Node& last = g.nodes().back();
  EXPECT_EQ(last.op->name, "add_");
  EXPECT_EQ(g.outputs()[0], last.outputs[0]);

  Tensor in = full({2, 2}, 3.0);
  const float w0 = w.data<float>()[0];
  EXPECT_EQ(graph::run(g, {in})[0].data<float>()[0], 12.0f);  // 3*3 + 3
  EXPECT_EQ(w.data<float>()[0], w0 + 3.0f);
  EXPECT_NE(error_of([&] { mul(y, y); }).find("after its graph's tracing ended"),
            std::string::npos);
}

TEST(Graph, RandomOpsInsideATraceDrawAsEagerCallsWould) {
  default_generator().manual_seed(11);
  const Tensor eager_first = randn({4}), eager_second = randn({4});
  const Tensor zero = zeros({4});
  graph::Trace trace;
  Tensor x = trace.input(zero);
  Tensor noise = randn({4});  // a node: drawn anew at each run, not frozen at trace time
  EXPECT_TRUE(noise.is_traced());
  graph::Graph g = trace.finish({add(x, noise)});
  EXPECT_EQ(g.nodes()[0].random_counters, 4u);
  default_generator().manual_seed(11);
  const Tensor a = graph::run(g, {zero})[0], b = graph::run(g, {zero})[0];
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a.data<float>()[i], eager_first.data<float>()[i]);
    EXPECT_EQ(b.data<float>()[i], eager_second.data<float>()[i]);
  }
}

TEST(GraphPasses, DeadCodeDropsUnusedNodesAndKeepsEffects) {
  // Hand-built: %0 input, %1 variable; %2 = neg(%0) (unused), %3 = exp(%0) (returned),
  // %4 = add_(%1, %3) (a variable's update), %5 = randn (unused but draws), %6 = abs(%2) (dead),
  // %7 = mul_(%4, %3) (a second write into the variable's memory, through its new value).
  graph::Graph g;
  const int x = g.add_input({{3}, DType::kFloat32, Device{}});
  const int w = g.add_variable(zeros({3}));
  auto value = [&] { return g.add_value({{3}, DType::kFloat32, Device{}}); };
  const int neg_out = value(), exp_out = value(), upd = value(), noise = value(), dead = value(),
            upd2 = value();
  g.add_node(graph::op_node(op_def("neg"), {x}, {neg_out}));
  g.add_node(graph::op_node(op_def("exp"), {x}, {exp_out}));
  g.add_node(graph::op_node(op_def("add_"), {w, exp_out}, {upd}));
  graph::Node draw = graph::op_node(op_def("randn"), {}, {noise},
                                    {{"shape", Shape{3}},
                                     {"dtype", DType::kFloat32},
                                     {"device", std::string("cpu")},
                                     {"seed", int64_t{0}},
                                     {"offset", int64_t{0}}});
  draw.random_counters = 3;
  g.add_node(draw);
  g.add_node(graph::op_node(op_def("abs"), {neg_out}, {dead}));
  g.add_node(graph::op_node(op_def("mul_"), {upd, exp_out}, {upd2}));
  g.set_outputs({exp_out});

  const graph::Graph out = graph::dead_code(g);
  std::vector<std::string> kept;
  for (const graph::Node& n : out.nodes()) kept.push_back(n.op->name);
  EXPECT_EQ(kept, (std::vector<std::string>{"exp", "add_", "randn", "mul_"}));
  EXPECT_EQ(out.values().size(), g.values().size());  // ids stay valid
  EXPECT_EQ(out.outputs(), g.outputs());

  // Running the pruned graph updates the variable as the whole one would.
  const Tensor in = full({3}, 1.0);
  graph::run(out, {in});
  EXPECT_FLOAT_EQ(out.variables()[0].tensor.data<float>()[0], std::exp(1.0f) * std::exp(1.0f));
}

TEST(GraphMemory, PeakBytesFollowLivenessAndViewsShareMemory) {
  // a = exp(x); b = neg(a); c = mul(a, b); v = view of c; d = abs(v): a and b die at c.
  graph::Graph g;
  const int x = g.add_input({{3}, DType::kFloat32, Device{}});
  auto value = [&](Shape s) { return g.add_value({std::move(s), DType::kFloat32, Device{}}); };
  const int a = value({3}), b = value({3}), c = value({3}), v = value({1, 3}), d = value({1, 3});
  g.add_node(graph::op_node(op_def("exp"), {x}, {a}));
  g.add_node(graph::op_node(op_def("neg"), {a}, {b}));
  g.add_node(graph::op_node(op_def("mul"), {a, b}, {c}));
  g.add_node(graph::op_node(op_def("unsqueeze"), {c}, {v}, {{"dim", int64_t{0}}}));
  g.add_node(graph::op_node(op_def("abs"), {v}, {d}));
  g.set_outputs({d});
  EXPECT_EQ(graph::peak_bytes(g), 3 * 12);  // a, b and c at the mul; c (via v) and d after
  EXPECT_EQ(graph::run(g, {full({3}, 1.0)})[0].shape(), (Shape{1, 3}));
}

// --- passes on global graphs, hand-built, without ranks ---

namespace {

const Placement kLine{DeviceType::kCPU, {0, 1, 2, 3}, {4}};

struct GlobalGraph {
  graph::Graph g;
  int value(Shape shape, const char* sbp = nullptr) {
    graph::Value v{std::move(shape), DType::kFloat32, Device{}, kLine, {}};
    if (sbp) v.nd_sbp = NdSbp::parse(sbp);
    return g.add_value(std::move(v));
  }
  int input(Shape shape, const char* sbp) {
    graph::Value v{std::move(shape), DType::kFloat32, Device{}, kLine, NdSbp::parse(sbp)};
    return g.add_input(std::move(v));
  }
  // A parameter: a tensor carrying a layout (no communicator: nothing runs it here).
  int variable(Shape shape, const char* sbp) {
    Tensor t = zeros(shape);
    t.impl()->global =
        std::make_shared<GlobalInfo>(GlobalInfo{std::move(shape), kLine, NdSbp::parse(sbp), {}});
    return g.add_variable(t);
  }
  std::string sbp(int id) const { return g.values()[id].nd_sbp.str(); }
};

std::vector<std::string> names(const graph::Graph& g) {
  std::vector<std::string> out;
  for (const graph::Node& n : g.nodes()) out.push_back(n.name());
  return out;
}

}  // namespace

TEST(GraphPasses, AssignSbpTakesTheEagerRuleGivenTheInputsLayouts) {
  PlanCache cache(ClusterSpec::default_for(4));
  GlobalGraph gg;
  // Data parallel: x split by rows, w replicated -> the product is split by rows. Column
  // parallel: w split by columns -> the product is split by columns.
  const int x = gg.input({8, 16}, "S(0)"), w = gg.variable({16, 4}, "B");
  const int xb = gg.input({8, 16}, "B"), wc = gg.variable({16, 4}, "S(1)");
  const int y = gg.value({8, 4}), z = gg.value({8, 4});
  gg.g.add_node(graph::op_node(op_def("matmul"), {x, w}, {y}));
  gg.g.add_node(graph::op_node(op_def("matmul"), {xb, wc}, {z}));
  gg.g.set_outputs({y, z});
  const graph::Graph out = graph::assign_sbp(gg.g, cache);
  EXPECT_EQ(GlobalGraph{out}.sbp(y), "S(0)");
  EXPECT_EQ(GlobalGraph{out}.sbp(z), "S(1)");
  EXPECT_EQ(out.nodes()[0].sig.str(), "S(0), B -> S(0)");
  // Printing shows every value's layout.
  EXPECT_NE(out.str().find("(8, 4) float32 cpu S(1) on cpu[0, 1, 2, 3]"), std::string::npos)
      << out.str();
}

TEST(GraphPasses, InsertBoxingConvertsInputsToTheSignatureAndDropsNoOps) {
  PlanCache cache(ClusterSpec::default_for(4));
  GlobalGraph gg;
  // add(S(0), S(1)) read by exp: one input must be converted. A boxing node from B to B
  // converts nothing.
  const int a = gg.input({8, 8}, "S(0)"), b = gg.input({8, 8}, "S(1)");
  const int c = gg.value({8, 8}), e = gg.value({8, 8}), same = gg.value({8, 8}, "B");
  const int d = gg.value({8, 8}), bb = gg.input({8, 8}, "B");
  gg.g.add_node(graph::op_node(op_def("add"), {a, b}, {c}));
  gg.g.add_node(graph::op_node(op_def("exp"), {c}, {e}));
  gg.g.add_node(graph::boxing_node(bb, same));
  gg.g.add_node(graph::op_node(op_def("mul"), {same, same}, {d}));
  gg.g.set_outputs({e, d});
  const graph::Graph out = graph::insert_boxing(graph::assign_sbp(gg.g, cache));
  EXPECT_EQ(names(out), (std::vector<std::string>{"boxing", "add", "exp", "mul"})) << out.str();
  for (const graph::Node& n : out.nodes()) {
    if (n.kind != graph::NodeKind::kOp) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      EXPECT_EQ(out.values()[n.inputs[i]].nd_sbp, n.sig.in[i]) << n.name() << " input " << i;
  }
  EXPECT_EQ(out.nodes()[3].inputs, (std::vector<int>{bb, bb}));  // the no-op boxing is gone
}

TEST(GraphPasses, AssignSbpLeavesPartialSumsForTheGradientBucketAndGraphOutputs) {
  PlanCache cache(ClusterSpec::default_for(4));
  GlobalGraph gg;
  // A data-parallel weight gradient: x^T (S(1) after the transpose of a batch-split x) times the
  // batch-split output gradient gives P(sum) without communication; its reduction belongs to
  // the gradient bucket (the param_grad boxing), so nothing is converted before it.
  const int xt = gg.input({16, 64}, "S(1)"), dy = gg.input({64, 8}, "S(0)");
  const int grad = gg.value({16, 8}), reduced = gg.value({16, 8}, "B");
  gg.g.add_node(graph::op_node(op_def("matmul"), {xt, dy}, {grad}));
  gg.g.add_node(graph::boxing_node(grad, reduced, /*param_grad=*/true));
  gg.g.set_outputs({reduced});
  const graph::Graph out = graph::insert_boxing(graph::assign_sbp(gg.g, cache));
  EXPECT_EQ(names(out), (std::vector<std::string>{"matmul", "boxing"}));
  EXPECT_EQ(GlobalGraph{out}.sbp(grad), "P(sum)");
}

TEST(GraphPasses, ShareConversionsReducesOnceWhenCollectivesCostMostlyLatency) {
  // A P(sum) value one reader wants as S(0) and another as S(1): two reduce-scatters, or one
  // all-reduce and two local slices. The cost model decides.
  GlobalGraph gg;
  const int p = gg.input({64, 64}, "P");
  const int rows = gg.value({64, 64}, "S(0)"), cols = gg.value({64, 64}, "S(1)");
  gg.g.add_node(graph::boxing_node(p, rows));
  gg.g.add_node(graph::boxing_node(p, cols));
  gg.g.set_outputs({rows, cols});

  ClusterSpec slow_start = ClusterSpec::default_for(4);
  slow_start.collective_overhead = 5e-3;  // latency-bound collectives, milliseconds each
  PlanCache latency_bound(slow_start);
  graph::Graph out = graph::share_conversions(gg.g, latency_bound);
  ASSERT_EQ(names(out), (std::vector<std::string>{"boxing", "boxing", "boxing"}));
  const int whole = out.nodes()[0].outputs[0];
  EXPECT_EQ(GlobalGraph{out}.sbp(whole), "B");
  EXPECT_EQ(out.nodes()[1].inputs[0], whole);
  EXPECT_EQ(out.nodes()[2].inputs[0], whole);

  ClusterSpec fast_start = slow_start;
  fast_start.collective_overhead = 0;
  PlanCache bandwidth_bound(fast_start);
  out = graph::share_conversions(gg.g, bandwidth_bound);
  EXPECT_EQ(names(out), (std::vector<std::string>{"boxing", "boxing"}));
}

TEST(GraphPasses, HoistCollectivesIssuesASmallReductionBeforeTheComputeItDoesNotNeed) {
  // loss-like: a big product first, then a count of the targets (P(sum) over a split batch)
  // reduced to B. The count's nodes and its reduction move ahead of the product.
  GlobalGraph gg;
  const int x = gg.input({64, 64}, "S(0)"), w = gg.input({64, 64}, "B");
  const int targets = gg.input({64}, "S(0)");
  const int y = gg.value({64, 64}, "S(0)"), count = gg.value({}, "P"), whole = gg.value({}, "B");
  const int z = gg.value({64, 64}, "S(0)");
  gg.g.add_node(graph::op_node(op_def("matmul"), {x, w}, {y}));
  gg.g.add_node(graph::op_node(
      op_def("sum"), {targets}, {count},
      {{"axes", std::vector<int64_t>{}}, {"keepdim", false}, {"dtype", DType::kFloat32}}));
  gg.g.add_node(graph::boxing_node(count, whole));
  gg.g.add_node(graph::op_node(op_def("div"), {y, whole}, {z}));
  gg.g.set_outputs({z});
  graph::Graph out = graph::hoist_collectives(gg.g);
  EXPECT_EQ(names(out), (std::vector<std::string>{"sum", "boxing", "matmul", "div"}));
  // A value over the size limit stays where it is.
  out = graph::hoist_collectives(gg.g, /*max_bytes=*/2);
  EXPECT_EQ(names(out), (std::vector<std::string>{"matmul", "sum", "boxing", "div"}));
}

TEST(GraphPasses, HoistCollectivesKeepsTheInputsMovesToTheirStagesFirst) {
  // A pipeline's inputs given on every rank: the batch goes to the first stage, the targets to
  // the last, where their count is reduced. The count's cone (with the targets' move) goes
  // ahead of the compute, but not ahead of the batch's move, which the first stage waits for.
  GlobalGraph gg;
  const Placement first{DeviceType::kCPU, {0, 1}, {2}}, last{DeviceType::kCPU, {2, 3}, {2}};
  auto on = [&](const Placement& p, Shape shape, const char* sbp) {
    return gg.g.add_value({std::move(shape), DType::kFloat32, Device{}, p, NdSbp::parse(sbp)});
  };
  const int x = gg.input({64, 64}, "S(0)"), targets = gg.input({64}, "S(0)");
  const int x0 = on(first, {64, 64}, "S(0)"), t1 = on(last, {64}, "S(0)");
  const int y = on(first, {64, 64}, "S(0)"), count = on(last, {}, "P"), whole = on(last, {}, "B");
  gg.g.add_node(graph::boxing_node(x, x0));
  gg.g.add_node(graph::boxing_node(targets, t1));
  gg.g.add_node(graph::op_node(op_def("exp"), {x0}, {y}));
  gg.g.add_node(graph::op_node(
      op_def("sum"), {t1}, {count},
      {{"axes", std::vector<int64_t>{}}, {"keepdim", false}, {"dtype", DType::kFloat32}}));
  gg.g.add_node(graph::boxing_node(count, whole));
  gg.g.set_outputs({y, whole});
  const graph::Graph out = graph::hoist_collectives(gg.g);
  EXPECT_EQ(names(out), (std::vector<std::string>{"boxing", "boxing", "sum", "boxing", "exp"}));
  EXPECT_EQ(out.nodes()[0].outputs[0], x0);
}

TEST(GraphPasses, BucketGradsFusesGradientReductionsUpToTheBucketSize) {
  GlobalGraph gg;
  // Three parameters' gradients, P(sum) -> B (data parallel), 64 floats each; a fourth to S(0)
  // (ZeRO: a reduce-scatter, another bucket).
  std::vector<int> partial, reduced;
  for (int k = 0; k < 4; ++k) {
    partial.push_back(gg.input({8, 8}, "P"));
    reduced.push_back(gg.value({8, 8}, k == 3 ? "S(0)" : "B"));
  }
  for (int k = 0; k < 4; ++k)
    gg.g.add_node(graph::boxing_node(partial[k], reduced[k], /*param_grad=*/true));
  gg.g.set_outputs(reduced);
  graph::Graph out = graph::bucket_grads(gg.g);
  ASSERT_EQ(names(out), (std::vector<std::string>{"reduce", "reduce"}));
  EXPECT_EQ(out.nodes()[0].inputs, (std::vector<int>{partial[0], partial[1], partial[2]}));
  EXPECT_EQ(out.nodes()[0].outputs, (std::vector<int>{reduced[0], reduced[1], reduced[2]}));
  EXPECT_EQ(out.nodes()[0].axes, (std::vector<int64_t>{0}));
  EXPECT_EQ(out.nodes()[1].inputs, (std::vector<int>{partial[3]}));
  // Buckets of two gradients' bytes.
  out = graph::bucket_grads(gg.g, 2 * 64 * 4);
  EXPECT_EQ(names(out), (std::vector<std::string>{"reduce", "reduce", "reduce"}));
  EXPECT_EQ(out.nodes()[0].inputs.size(), 2u);
}

TEST(GraphPasses, BucketGradsClosesABucketBeforeANodeReadsItsMember) {
  GlobalGraph gg;
  const int p0 = gg.input({4}, "P"), p1 = gg.input({4}, "P");
  const int r0 = gg.value({4}, "B"), r1 = gg.value({4}, "B"), use = gg.value({4}, "B");
  gg.g.add_node(graph::boxing_node(p0, r0, true));
  gg.g.add_node(graph::op_node(op_def("neg"), {r0}, {use}));  // reads the first gradient
  gg.g.add_node(graph::boxing_node(p1, r1, true));
  gg.g.set_outputs({use, r1});
  const graph::Graph out = graph::bucket_grads(gg.g);
  EXPECT_EQ(names(out), (std::vector<std::string>{"reduce", "neg", "reduce"}));
}

TEST(GraphPasses, GatherParamsFusesParameterGathersAndIssuesEachBucketAhead) {
  GlobalGraph gg;
  // ZeRO-3-like: three split weights gathered to B for three layers (a product, then a gelu),
  // 256 B each.
  const int x = gg.input({4, 8}, "B");
  std::vector<int> w, full, h, a;
  for (int k = 0; k < 3; ++k) {
    w.push_back(gg.variable({8, 8}, "S(0)"));
    full.push_back(gg.value({8, 8}, "B"));
    h.push_back(gg.value({4, 8}, "B"));
    a.push_back(gg.value({4, 8}, "B"));
  }
  for (int k = 0; k < 3; ++k) {
    gg.g.add_node(graph::boxing_node(w[k], full[k]));
    gg.g.add_node(graph::op_node(op_def("matmul"), {k ? a[k - 1] : x, full[k]}, {h[k]}));
    gg.g.add_node(
        graph::op_node(op_def("gelu"), {h[k]}, {a[k]}, {{"approximate", std::string("none")}}));
  }
  gg.g.set_outputs({a[2]});
  // One bucket for all: a single gather before the first product.
  graph::Graph out = graph::gather_params(gg.g);
  ASSERT_EQ(names(out), (std::vector<std::string>{"gather", "matmul", "gelu", "matmul", "gelu",
                                                  "matmul", "gelu"}));
  EXPECT_EQ(out.nodes()[0].inputs, w);
  EXPECT_EQ(out.nodes()[0].outputs, full);
  EXPECT_EQ(out.nodes()[0].axes, (std::vector<int64_t>{0}));
  // Buckets of one weight: each goes out as soon as the previous weight's last reader is done,
  // overlapping the gelu in between; one gathered weight is held at a time.
  out = graph::gather_params(gg.g, 8 * 8 * 4);
  EXPECT_EQ(names(out), (std::vector<std::string>{"gather", "matmul", "gather", "gelu", "matmul",
                                                  "gather", "gelu", "matmul", "gelu"}));
  EXPECT_EQ(out.nodes()[2].inputs, (std::vector<int>{w[1]}));
  EXPECT_EQ(out.nodes()[5].inputs, (std::vector<int>{w[2]}));
}

TEST(GraphPasses, DropIdentityViewsLeavesOnlyViewsThatChangeSomething) {
  // A slice of everything, a reshape to its own shape and an identity permutation go; the
  // transpose of a square matrix (same shape, other strides) and a real slice stay.
  Tensor x = randn({4, 4});
  graph::Trace trace;
  Tensor t = trace.input(x);
  Tensor a = slice(t, 0, 0, std::nullopt, 1);
  Tensor b = reshape(a, {4, 4});
  Tensor c = permute(b, {0, 1});
  Tensor d = permute(c, {1, 0});
  Tensor e = slice(d, 1, 1, std::nullopt, 1);
  Tensor y = mul(e, full({}, 2.0));
  const graph::Graph g = graph::drop_identity_views(trace.finish({y, c}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"permute", "slice", "full", "mul"})) << g.str();
  EXPECT_EQ(g.outputs()[1], g.inputs()[0]);  // c is the input itself
  const std::vector<Tensor> got = graph::run(g, {x});
  const Tensor want = mul(slice(permute(x, {1, 0}), 1, 1, std::nullopt, 1), full({}, 2.0));
  const Tensor gc = contiguous(got[0]), wc = contiguous(want);
  for (int64_t i = 0; i < wc.numel(); ++i) EXPECT_EQ(gc.data<float>()[i], wc.data<float>()[i]);
}
