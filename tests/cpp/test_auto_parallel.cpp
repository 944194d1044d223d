// The planner without ranks on the problems graphs pose: plans, predictions, pipeline searches
// and their saved inputs (the solver on hand-built problems: test_auto_parallel_solve.cpp).
// Over 600 lines: the planner's tests share the graphs they plan (mlp, the layered models).
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "graph/auto_parallel/layers.h"
#include "graph/auto_parallel/pipeline.h"
#include "graph/auto_parallel/planner.h"
#include "graph/auto_parallel/predict.h"
#include "graph/auto_parallel/presolve.h"
#include "graph/auto_parallel/problem.h"
#include "graph/executor.h"
#include "graph/node_call.h"
#include "graph/passes/passes.h"
#include "ops/ops.h"
#include "sbp/global_info.h"
#include "test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::auto_parallel;
using ofl::internal::testing::error_of;

// --- the planner on graphs, hand-built, without ranks ---

namespace {

struct PlanGraph {
  Placement placement;
  graph::Graph g;
  int input(Shape shape, const char* sbp) {
    return g.add_input({std::move(shape), DType::kFloat32, Device{}, placement, NdSbp::parse(sbp)});
  }
  int variable(Shape shape) {
    Tensor t = zeros(shape);
    NdSbp b(std::vector<Sbp>(size_t(placement.ndim()), Sbp::broadcast()));
    t.impl()->global = std::make_shared<GlobalInfo>(GlobalInfo{shape, placement, b, {}});
    return g.add_variable(t);
  }
  int value(Shape shape) {
    return g.add_value({std::move(shape), DType::kFloat32, Device{}, placement, {}});
  }
  int op(const char* name, std::vector<int> in, Shape out_shape, Attrs attrs = {}) {
    const int out = value(std::move(out_shape));
    g.add_node(graph::op_node(op_def(name), std::move(in), {out}, std::move(attrs)));
    g.nodes().back().layer = layer;
    return out;
  }
  int layer = -1;  // what the nodes added next are tagged with (nn.Graph tags a ModuleList's)
};

// x (rows, 64) @ w1 (64, 64) -> gelu -> @ w2 (64, 64): two parameters, three ops.
PlanGraph mlp(Placement placement, int64_t rows, const char* x_sbp) {
  PlanGraph pg{std::move(placement), {}};
  const int x = pg.input({rows, 64}, x_sbp);
  const int w1 = pg.variable({64, 64}), w2 = pg.variable({64, 64});
  const int h = pg.op("matmul", {x, w1}, {rows, 64});
  const int a = pg.op("gelu", {h}, {rows, 64}, {{"approximate", std::string("none")}});
  const int y = pg.op("matmul", {a, w2}, {rows, 64});
  pg.g.set_outputs({y});
  return pg;
}

}  // namespace

TEST(AutoParallelPlan, IsExactOnSmallGraphsOnOneAndTwoDimensionalMeshes) {
  for (const Placement& p : {Placement(DeviceType::kCPU, {0, 1, 2, 3}, {4}),
                             Placement(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2})}) {
    PlanCache cache(ClusterSpec::default_for(4));
    for (const char* sbp : {"S(0)", "B"}) {
      PlanGraph pg = mlp(p, 256, p.ndim() == 1 ? sbp : (std::string("(") + sbp + ", B)").c_str());
      const auto gp = auto_parallel::build_problem(pg.g, cache, INFINITY);
      const auto want = auto_parallel::brute_force(gp.problem);
      const auto got = auto_parallel::solve(gp.problem);
      EXPECT_NEAR(got.cost, want.cost, 1e-9 + 1e-9 * want.cost) << p.str() << " x " << sbp;
    }
  }
}

TEST(AutoParallelPlan, TheUpdateAfterTheBackwardWeighsUpdateWeightTimesAndStaysExact) {
  // One of m micro-batches pays 1/m of the step's update: a pipeline stage's plan weighs it so.
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanCache cache(ClusterSpec::default_for(4));
  PlanGraph pg = mlp(line, 256, "S(0)");
  pg.g.nodes()[2].backward = true;  // as if the second matmul were the backward
  const int y = pg.g.nodes()[2].outputs[0];
  pg.op("gelu", {y}, {256, 64}, {{"approximate", std::string("none")}});  // the "update"
  const auto whole = auto_parallel::build_problem(pg.g, cache, INFINITY);
  const auto quarter = auto_parallel::build_problem(pg.g, cache, INFINITY, {.update_weight = 0.25});
  const size_t last = whole.node.size() - 1;  // the update's group
  ASSERT_EQ(whole.node[last], 3);
  for (size_t b = 0; b < whole.problem.groups[last].cost.size(); ++b)
    EXPECT_DOUBLE_EQ(quarter.problem.groups[last].cost[b],
                     0.25 * whole.problem.groups[last].cost[b]);
  const size_t first = size_t(std::find(whole.node.begin(), whole.node.end(), 0) -
                              whole.node.begin());  // per micro-batch
  ASSERT_LT(first, whole.node.size());
  EXPECT_EQ(quarter.problem.groups[first].cost, whole.problem.groups[first].cost);
  EXPECT_GT(whole.problem.groups[first].cost[0], 0);
  EXPECT_NEAR(auto_parallel::solve(quarter.problem).cost,
              auto_parallel::brute_force(quarter.problem).cost, 1e-12);
}

TEST(AutoParallelPlan, SavedActivationsCountAsManyTimesAsTheMicroBatchesInFlight) {
  // A pipeline stage holds k micro-batches' activations: build_problem counts them k times (0:
  // not at all), the variables once.
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanCache cache(ClusterSpec::default_for(4));
  PlanGraph pg = mlp(line, 256, "S(0)");
  pg.g.nodes()[2].backward = true;  // reads the forward's outputs
  const auto with = [&](double activations) {
    return auto_parallel::build_problem(pg.g, cache, INFINITY, {.activations = activations});
  };
  const auto none = with(0), one = with(1), three = with(3);
  bool any = false;
  for (size_t grp = 0; grp < one.problem.groups.size(); ++grp) {
    const auto &m0 = none.problem.groups[grp].memory, &m1 = one.problem.groups[grp].memory,
               &m3 = three.problem.groups[grp].memory;
    for (size_t b = 0; b < m1.size(); ++b) {
      const double base = m0.empty() ? 0 : m0[b];
      EXPECT_NEAR(m3[b] - base, 3 * (m1[b] - base), 1e-6) << "group " << grp << " choice " << b;
      any = any || m1[b] > base;
    }
  }
  EXPECT_TRUE(any);  // some activation was counted
  EXPECT_NEAR(three.constant_memory - none.constant_memory,
              3 * (one.constant_memory - none.constant_memory), 1e-6);
}

TEST(AutoParallelPlan, TheForwardWeighsForwardWeightTimesWhereTheStageRecomputesIt) {
  // A stage that recomputes runs its forward twice a micro-batch: its plan weighs it so, and
  // leaves the backward and the update as they were.
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanCache cache(ClusterSpec::default_for(4));
  PlanGraph pg = mlp(line, 256, "S(0)");
  pg.g.nodes()[2].backward = true;
  const int y = pg.g.nodes()[2].outputs[0];
  pg.op("gelu", {y}, {256, 64}, {{"approximate", std::string("none")}});  // the "update"
  const auto once = auto_parallel::build_problem(pg.g, cache, INFINITY, {.update_weight = 0.5});
  const auto twice = auto_parallel::build_problem(pg.g, cache, INFINITY,
                                                  {.update_weight = 0.5, .forward_weight = 2.0});
  for (size_t grp = 0; grp < once.node.size(); ++grp) {
    const int node = once.node[grp];
    if (node < 0) continue;
    const double factor = node < 2 ? 2.0 : 1.0;  // nodes 0 and 1 are the forward
    ASSERT_EQ(once.problem.groups[grp].cost.size(), twice.problem.groups[grp].cost.size());
    for (size_t b = 0; b < once.problem.groups[grp].cost.size(); ++b)
      EXPECT_DOUBLE_EQ(twice.problem.groups[grp].cost[b], factor * once.problem.groups[grp].cost[b])
          << "node " << node << " choice " << b;
  }
  EXPECT_NEAR(auto_parallel::solve(twice.problem).cost,
              auto_parallel::brute_force(twice.problem).cost, 1e-12);
}

TEST(AutoParallelPlan, ReplicatesSmallWeightsForABigSplitBatchAndShardsThemUnderABudget) {
  PlanCache cache(ClusterSpec::default_for(4));
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanGraph pg = mlp(line, 4096, "S(0)");
  const int w1 = pg.g.variables()[0].value, w2 = pg.g.variables()[1].value;
  // Data parallel: the weights replicated, nothing communicated.
  auto plan = auto_parallel::plan(pg.g, cache, INFINITY);
  EXPECT_EQ(plan.layout.at(w1).str(), "B");
  EXPECT_EQ(plan.layout.at(w2).str(), "B");
  EXPECT_DOUBLE_EQ(plan.comm_seconds, 0);
  // Room for one replicated weight and one quarter: one weight is sharded.
  const double weight = 64 * 64 * 4;
  plan = auto_parallel::plan(pg.g, cache, weight + weight / 4);
  EXPECT_LE(plan.memory, weight + weight / 4);
  EXPECT_NE(plan.layout.at(w1).str() == "B", plan.layout.at(w2).str() == "B");
  EXPECT_GT(plan.comm_seconds, 0);
  // The applied plan is a laid-out graph the boxing pass can take.
  const graph::Graph laid = graph::insert_boxing(auto_parallel::apply(pg.g, plan));
  for (const graph::Node& n : laid.nodes())
    if (n.kind == graph::NodeKind::kOp)
      for (size_t i = 0; i < n.inputs.size(); ++i)
        EXPECT_EQ(laid.values()[size_t(n.inputs[i])].nd_sbp, n.sig.in[i]) << n.name();
  // w1 kept replicated (a constraint) with room for one weight and an eighth: the two contradict,
  // though a plan with both sharded would fit; the error names the kept weight.
  const std::string kept =
      error_of([&] { auto_parallel::plan(pg.g, cache, weight * 1.125, {w1}); });
  EXPECT_NE(kept.find("the kept layouts contradict the memory budget of 18432 bytes per device: "
                      "the kept variables take 16384 bytes with their gradients (%" +
                      std::to_string(w1) + " at B: 16384 bytes)"),
            std::string::npos)
      << kept;
  // Less than a quarter of each weight: no plan fits.
  EXPECT_NE(error_of([&] {
              auto_parallel::plan(pg.g, cache, weight / 4);
            }).find("the least any plan needs is 8192 bytes"),
            std::string::npos);
  // Nor with w1 kept: the least then is with its layout, and with every layout free.
  const std::string both = error_of([&] { auto_parallel::plan(pg.g, cache, weight / 4, {w1}); });
  EXPECT_NE(both.find("the least any plan needs is 20480 bytes with the kept layouts (8192 bytes "
                      "with every layout free)"),
            std::string::npos)
      << both;
}

TEST(AutoParallelPlan, KeptInPlaceTheWeightsAreReadAsStoredAndThePlanStaysExact) {
  // Megatron's MLP kept: w1 split by output column, w2 by input row; the rows of x split (data
  // parallel). Free, the planner gathers the small weights rather than the many rows; in place,
  // every op reads them as stored: each matmul's weight input is the kept layout (the rows are
  // gathered instead), and the plan is brute force's.
  PlanCache cache(ClusterSpec::default_for(4));
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanGraph pg = mlp(line, 4096, "S(0)");
  const int w1 = pg.g.variables()[0].value, w2 = pg.g.variables()[1].value;
  pg.g.values()[size_t(w1)].nd_sbp = NdSbp::parse("S(1)");
  pg.g.values()[size_t(w2)].nd_sbp = NdSbp::parse("S(0)");
  const auto free = auto_parallel::plan(pg.g, cache, INFINITY, {w1, w2});
  const auto in_place =
      auto_parallel::plan(pg.g, cache, INFINITY, {w1, w2}, nullptr, true, {.fixed_in_place = true});
  int gathered = 0;  // weights the free plan reads otherwise than stored
  for (size_t i = 0; i < pg.g.nodes().size(); ++i) {
    const graph::Node& n = pg.g.nodes()[i];
    if (n.kind != graph::NodeKind::kOp || n.name() != "matmul") continue;
    const NdSbp& kept = pg.g.values()[size_t(n.inputs[1])].nd_sbp;
    EXPECT_EQ(in_place.sig[i].in[1], kept) << i;
    gathered += !(free.sig[i].in[1] == kept);
  }
  EXPECT_GT(gathered, 0);
  EXPECT_LE(free.seconds(), in_place.seconds() * (1 + 1e-12));
  const auto gp = auto_parallel::build_problem(
      pg.g, cache, INFINITY, {.fixed = {w1, w2}, .merge_repeats = false, .fixed_in_place = true});
  EXPECT_NEAR(auto_parallel::solve(gp.problem).cost, auto_parallel::brute_force(gp.problem).cost,
              1e-12);
}

TEST(AutoParallelPlan, PredictsThePeakOfTheStepAsGraphModeCompilesIt) {
  PlanCache cache(ClusterSpec::default_for(4));
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanGraph pg = mlp(line, 4096, "S(0)");
  const double weight = 64 * 64 * 4;
  const auto plan = auto_parallel::plan(pg.g, cache, weight + weight / 4);
  // Variables at their layouts, and the compiled graph's own peak.
  double variables = 0;
  for (const auto& [id, layout] : plan.layout)
    variables += double(graph::bytes_per_rank(pg.g.values()[size_t(id)], layout));
  // Graph mode compiles the applied plan (its variables laid out) with the planner again.
  const graph::Graph compiled =
      graph::compile(auto_parallel::apply(pg.g, plan), std::make_shared<PlanCache>(cache.cluster()),
                     {/*auto_parallel=*/true, weight + weight / 4});
  EXPECT_DOUBLE_EQ(plan.peak, variables + double(graph::peak_bytes(compiled)));
  // Its transients (the split batch's products) are on top of what the budget counts.
  EXPECT_GT(plan.peak, plan.memory);
}

TEST(AutoParallelPlan, RepeatedLayersAreSolvedOnceAndTakeTheSameChoices) {
  PlanCache cache(ClusterSpec::default_for(4));
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  // Three equal layers (matmul by their own weight, gelu), then one of another width.
  auto build = [&](bool tagged) {
    PlanGraph pg{line, {}};
    int x = pg.input({512, 64}, "S(0)");
    for (int k = 0; k < 4; ++k) {
      const int64_t width = k < 3 ? 64 : 32;
      const int w = pg.variable({64, width});
      pg.layer = tagged ? k : -1;
      x = pg.op("matmul", {x, w}, {512, width});
      x = pg.op("gelu", {x}, {512, width}, {{"approximate", std::string("none")}});
    }
    pg.g.set_outputs({x});
    return pg;
  };
  const PlanGraph tagged = build(true), plain = build(false);
  const auto merged = auto_parallel::build_problem(tagged.g, cache, INFINITY);
  const auto full = auto_parallel::build_problem(plain.g, cache, INFINITY);
  EXPECT_EQ(merged.layers, 4);
  EXPECT_EQ(merged.copied_layers, 2);
  EXPECT_EQ(full.problem.groups.size(), 12u);   // per layer: the weight, matmul, gelu
  EXPECT_EQ(merged.problem.groups.size(), 6u);  // the first layer's for three, the last's
  // Exact on the merged problem; its plan gives the copies the first layer's choices.
  const auto got = auto_parallel::solve(merged.problem);
  EXPECT_NEAR(got.cost, auto_parallel::brute_force(merged.problem).cost, 1e-12);
  const auto plan = auto_parallel::plan_of(tagged.g, merged, got.choice);
  const auto& vars = tagged.g.variables();
  EXPECT_EQ(plan.layout.at(vars[1].value), plan.layout.at(vars[0].value));
  EXPECT_EQ(plan.layout.at(vars[2].value), plan.layout.at(vars[0].value));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(plan.sig[2 + i].str(), plan.sig[i].str());
    EXPECT_EQ(plan.sig[4 + i].str(), plan.sig[i].str());
  }
  // Data parallel is best for every layer here, so solving each layer apart gives the same
  // time and memory: the copies' costs are all counted.
  // (a graph this small is planned whole)
  const auto apart = auto_parallel::plan(tagged.g, cache, INFINITY);
  EXPECT_EQ(apart.copied_layers, 0);
  EXPECT_NEAR(plan.seconds(), apart.seconds(), 1e-12);
  EXPECT_NEAR(plan.compute_seconds, apart.compute_seconds, 1e-12);
  EXPECT_DOUBLE_EQ(plan.memory, apart.memory);
}

TEST(AutoParallelPredict, AddsTheOpsRooflinesAndTheConversionsPlans) {
  auto shared = std::make_shared<PlanCache>(ClusterSpec::default_for(4));
  PlanCache& cache = *shared;
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  // Data parallel: no conversion, so no communication; the compute is the shards' roofline.
  graph::Graph dp = graph::compile(mlp(line, 4096, "S(0)").g, shared);
  const auto p = auto_parallel::predict(dp, cache);
  EXPECT_GT(p.compute_seconds, 0);
  EXPECT_DOUBLE_EQ(p.comm_seconds, 0);
  // Replicated inputs, a split weight: the graph converts, and the prediction prices it.
  PlanGraph pg = mlp(line, 64, "B");
  graph::Value& w = pg.g.values()[size_t(pg.g.variables()[0].value)];
  w.nd_sbp = NdSbp::parse("S(0)");
  const graph::Graph split = graph::compile(pg.g, shared);
  double boxing = 0;
  for (const graph::Node& n : split.nodes())
    if (n.kind == graph::NodeKind::kBoxing) {
      const graph::Value &a = split.values()[size_t(n.inputs[0])],
                         &b = split.values()[size_t(n.outputs[0])];
      boxing += cache.get(a.shape, a.dtype, line, a.nd_sbp, line, b.nd_sbp)->seconds;
    }
  EXPECT_GT(boxing, 0);
  const auto q = auto_parallel::predict(split, cache);
  EXPECT_DOUBLE_EQ(q.comm_seconds, boxing);
  // The threads overlap: the step is at least each thread's busy time, at most their sum.
  EXPECT_GE(q.step_seconds, std::max(q.compute_seconds, q.comm_seconds));
  EXPECT_LE(q.step_seconds, q.compute_seconds + q.comm_seconds + 1e-12);
}

TEST(AutoParallelPredict, AStreamedInputPaysItsExchangesLatencyBeyondWhatTheComputeHides) {
  // Attention with q, k and v split on the sequence: k and v go around the ring (no boxing
  // node), priced as select_signature prices them: the longer of the kernel and the gathers,
  // plus the latency of a gather of one element a position.
  auto shared = std::make_shared<PlanCache>(ClusterSpec::default_for(4));
  PlanCache& cache = *shared;
  const Placement line(DeviceType::kCPU, {0, 1, 2, 3}, {4});
  PlanGraph pg{line, {}};
  const Shape qkv{1, 16, 8192, 128};
  const int q = pg.input(qkv, "S(2)"), k = pg.input(qkv, "S(2)"), v = pg.input(qkv, "S(2)");
  const int out = pg.value(qkv), lse = pg.value({1, 16, 8192});
  pg.g.add_node(graph::op_node(op_def("flash_attention"), {q, k, v}, {out, lse},
                               {{"scale", 0.1}, {"causal", false}, {"balance", int64_t(0)}}));
  pg.g.set_outputs({out});
  const graph::Graph g = graph::compile(pg.g, shared);
  ASSERT_EQ(g.nodes().size(), 1u);
  const graph::Node& attention = g.nodes()[0];
  EXPECT_EQ(attention.sig.str(), "S(2), B, B -> S(2), S(2)");
  const NdSbp seq = NdSbp::parse("S(2)"), b = NdSbp::parse("B");
  const double gathers = 2 * cache.get(qkv, DType::kFloat32, line, seq, line, b)->seconds;
  const double hops = cache.get({1, 1, 8192, 1}, DType::kFloat32, line, seq, line, b)->seconds;
  graph::NodeCall call(g, attention, line, [&](size_t i) { return &attention.sig.in[i]; });
  const double kernel = compute_seconds(call.call(), attention.sig, cache.cluster());
  EXPECT_GT(hops, 0);
  const auto p = auto_parallel::predict(g, cache);
  EXPECT_DOUBLE_EQ(p.compute_seconds, std::max(kernel, gathers) + hops);
  EXPECT_DOUBLE_EQ(p.comm_seconds, 0);
}

// --- plan_pipeline's search (auto_parallel/pipeline.h) on hand-built stage steps ---

namespace {

// A stage's step on `devices` devices: `layers` tagged layers of x @ w -> gelu between an
// untagged projection before them and one after, the batch split over the stage.
StageStep stage_step(const ClusterSpec& cluster, int devices, int micro_batches, int layers,
                     int64_t width = 64) {
  PlanGraph pg{stage_placement(DeviceType::kCPU, devices, cluster), {}};
  const int64_t rows = 4096 / micro_batches;
  int x = pg.input({rows, width}, "S(0)");
  x = pg.op("matmul", {x, pg.variable({width, width})}, {rows, width});
  for (int k = 0; k < layers; ++k) {
    pg.layer = k;
    x = pg.op("matmul", {x, pg.variable({width, width})}, {rows, width});
    x = pg.op("gelu", {x}, {rows, width}, {{"approximate", std::string("none")}});
  }
  pg.layer = -1;
  x = pg.op("matmul", {x, pg.variable({width, width})}, {rows, width});
  pg.g.set_outputs({x});
  return {devices, micro_batches, std::make_shared<const graph::Graph>(std::move(pg.g)), {}, {}};
}

std::vector<StageOption> costs_of(const PipelineSearch& found) {
  std::vector<StageOption> out;
  for (const StagePlan& o : found.options) out.push_back(o.costs);
  return out;
}

}  // namespace

TEST(PipelineSearch, AStageIsALineWithinANodeAndAMeshOverWholeNodes) {
  const ClusterSpec cluster = ClusterSpec::a100_nvlink(4, 4);
  EXPECT_EQ(stage_placement(DeviceType::kCUDA, 4, cluster, 4),
            Placement(DeviceType::kCUDA, {4, 5, 6, 7}, {4}));
  EXPECT_EQ(stage_placement(DeviceType::kCPU, 8, cluster, 8),
            Placement(DeviceType::kCPU, {8, 9, 10, 11, 12, 13, 14, 15}, {2, 4}));
  EXPECT_EQ(stage_placement(DeviceType::kCPU, 6, cluster).mesh(), Shape{6});  // not whole nodes
}

TEST(PipelineSearch, PricesEveryStepPerLayerAndChoosesAsPlanStagesOverItsOptions) {
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  PlanCache cache(cluster);
  std::vector<StageStep> steps;
  for (int d : {1, 2, 4})
    for (int m : {1, 2}) steps.push_back(stage_step(cluster, d, m, 3));
  const PipelineSearch found = search_pipeline(steps, 8, 4, INFINITY, cache);
  // No budget: each step's fastest layouts only (with the forward weighed once, and twice as a
  // recomputing stage runs it where that lays the step out differently), each priced for the
  // model's 8 layers, in the steps' order.
  ASSERT_GE(found.options.size(), steps.size());
  ASSERT_LE(found.options.size(), 2 * steps.size());
  std::vector<int> seen(steps.size());
  for (const StagePlan& o : found.options) {
    const StageStep& step = steps[size_t(o.step)];
    EXPECT_TRUE(o.step == 0 || seen[size_t(o.step) - 1] > 0) << o.step;
    ++seen[size_t(o.step)];
    EXPECT_EQ(o.budget, INFINITY);
    EXPECT_EQ(o.costs.devices_per_stage, step.devices_per_stage);
    EXPECT_EQ(o.costs.micro_batches, step.micro_batches);
    ASSERT_EQ(o.costs.layers.size(), 10u);  // before, 8 layers, after
    EXPECT_GT(o.costs.layers[1].forward, 0);
    EXPECT_EQ(o.costs.layers[1].forward, o.costs.layers[8].forward);  // one layer's mean, 8 times
    // Stages of 4 devices are the whole machine: nothing to send.
    EXPECT_EQ(o.costs.send_seconds > 0, step.devices_per_stage < 4);
  }
  for (int n : seen) EXPECT_GE(n, 1);
  const PipelineChoice want = plan_stages(costs_of(found), 4, INFINITY);
  EXPECT_EQ(found.choice.option, want.option);
  EXPECT_DOUBLE_EQ(found.choice.seconds, want.seconds);
  // Every option reports the step it predicts alone; the chosen one's is the choice's.
  for (const StagePlan& o : found.options) {
    EXPECT_DOUBLE_EQ(o.seconds, plan_stages({o.costs}, 4, INFINITY).seconds);
    EXPECT_GE(o.seconds, found.choice.seconds);
  }
  EXPECT_DOUBLE_EQ(found.options[size_t(found.choice.option)].seconds, found.choice.seconds);
}

TEST(PipelineSearch, EveryCopyOfAStagesLayerTakesTheLayoutOfTheFirst) {
  // The pipeline prices one traced layer for each of the model's: the plan a stage's step gets
  // lays out its repeated layers alike, with or without a budget.
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  PlanCache cache(cluster);
  const std::vector<StageStep> steps{stage_step(cluster, 4, 1, 3, 1024),
                                     stage_step(cluster, 2, 1, 3, 1024)};
  const PipelineSearch fastest = search_pipeline(steps, 4, 4, INFINITY, cache);
  const double replicated = fastest.choice.stage_bytes[0];
  for (double budget : {double(INFINITY), replicated / 3, replicated / 2, replicated / 1.5}) {
    const PipelineSearch found = search_pipeline(steps, 4, 4, budget, cache);
    // The tightest budget adds layouts within a stage's share (some replicated, some sharded
    // where each layer is planned apart).
    if (budget == replicated / 3) EXPECT_GT(found.options.size(), fastest.options.size());
    for (const StagePlan& o : found.options) {
      const auto repeats = auto_parallel::find_repeats(*steps[size_t(o.step)].traced);
      ASSERT_EQ(repeats.copied_layers, 2);
      for (size_t i = 0; i < repeats.node_rep.size(); ++i)
        EXPECT_EQ(o.plan.sig[i].str(), o.plan.sig[size_t(repeats.node_rep[i])].str()) << i;
      for (const auto& [value, layout] : o.plan.layout)
        EXPECT_EQ(layout.str(), o.plan.layout.at(repeats.value_rep[size_t(value)]).str()) << value;
    }
  }
}

TEST(PipelineSearch, ABudgetAddsLayoutsWithinTheStagesShareAndTheChoiceFitsIt) {
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  PlanCache cache(cluster);
  // Wide layers: replicated weights (the fastest layout) are what overruns a stage's share.
  std::vector<StageStep> steps{stage_step(cluster, 4, 1, 2, 1024),
                               stage_step(cluster, 2, 1, 2, 1024)};
  const PipelineSearch fastest = search_pipeline(steps, 4, 4, INFINITY, cache);
  const double replicated = fastest.choice.stage_bytes[0];
  const double budget = replicated / 3;
  const PipelineSearch found = search_pipeline(steps, 4, 4, budget, cache);
  // Layouts within a share were added, after the fastest ones.
  EXPECT_GT(found.options.size(), fastest.options.size());
  for (size_t i = 0; i < found.options.size(); ++i)
    EXPECT_EQ(found.options[i].budget < INFINITY, i >= fastest.options.size()) << i;
  for (double bytes : found.choice.stage_bytes) EXPECT_LE(bytes, budget);
  EXPECT_GE(found.choice.seconds, fastest.choice.seconds);
}

TEST(PipelineSearch, AStepWithoutRepeatedLayersRaisesNamingIt) {
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  PlanCache cache(cluster);
  EXPECT_NE(error_of([&] {
              search_pipeline({stage_step(cluster, 4, 1, 0)}, 4, 4, INFINITY, cache);
            }).find("has no repeated layers"),
            std::string::npos);
  EXPECT_NE(error_of([&] { search_pipeline({}, 4, 4, INFINITY, cache); }).find("no stage size"),
            std::string::npos);
}

// --- plan_pipeline's inputs saved and loaded (what the C++ API's ofl::plan_pipeline reads) ---

namespace {

std::string rewrite(const std::filesystem::path& file, const std::string& from,
                    const std::string& to) {
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  std::string s = text.str();
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  std::ofstream(file) << s;
  return s;
}

}  // namespace

TEST(PipelineInputs, SavedAndLoadedTheyPlanTheSamePipelineAsTheTracedSteps) {
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  std::vector<StageStep> steps{stage_step(cluster, 4, 1, 2, 1024),
                               stage_step(cluster, 2, 1, 2, 1024),
                               stage_step(cluster, 2, 2, 2, 1024)};
  PlanCache cache(cluster);
  // A budget that takes layouts within each stage's share: the budget's path is saved too.
  const double budget = search_pipeline(steps, 4, 4, INFINITY, cache).choice.stage_bytes[0] / 3;
  const PipelineSearch want = search_pipeline(steps, 4, 4, budget, cache);
  const std::string dir = (std::filesystem::temp_directory_path() / "ofl_pipeline_inputs").string();
  std::filesystem::remove_all(dir);
  save_pipeline_inputs(dir, {steps, 4, 4, budget, cluster});

  const PipelineInputs in = load_pipeline_inputs(dir);
  EXPECT_EQ(in.layers, 4);
  EXPECT_EQ(in.total_devices, 4);
  EXPECT_EQ(in.budget, budget);
  EXPECT_EQ(in.cluster.to_json(), cluster.to_json());
  ASSERT_EQ(in.steps.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(in.steps[i].devices_per_stage, steps[i].devices_per_stage);
    EXPECT_EQ(in.steps[i].micro_batches, steps[i].micro_batches);
    const auto& a = steps[i].traced->nodes();
    const auto& b = in.steps[i].traced->nodes();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].layer, b[k].layer);  // the layer marks
    for (const graph::Variable& v : in.steps[i].traced->variables())
      EXPECT_TRUE(v.tensor.device().is_meta());  // no data
  }
  PlanCache fresh(in.cluster);
  const PipelineSearch got =
      search_pipeline(in.steps, in.layers, in.total_devices, in.budget, fresh);
  EXPECT_EQ(got.choice.str(), want.choice.str());
  EXPECT_EQ(got.choice.option, want.choice.option);
  EXPECT_EQ(got.choice.first_layer, want.choice.first_layer);
  EXPECT_DOUBLE_EQ(got.choice.seconds, want.choice.seconds);
  ASSERT_EQ(got.options.size(), want.options.size());
  EXPECT_EQ(got.options[size_t(got.choice.option)].plan.layout,
            want.options[size_t(want.choice.option)].plan.layout);
  // The schedules to weigh (chunks a device) and the recomputation are saved too.
  save_pipeline_inputs(dir, {steps, 4, 4, budget, cluster, Recompute::kAlways, {1, 2}});
  const PipelineInputs again = load_pipeline_inputs(dir);
  EXPECT_EQ(again.chunks, (std::vector<int>{1, 2}));
  EXPECT_EQ(again.recompute, Recompute::kAlways);
}

TEST(PipelineInputs, AMissingDamagedOrForeignFolderRaisesNamingTheFileAndTheEntry) {
  namespace fs = std::filesystem;
  const ClusterSpec cluster = ClusterSpec::default_for(4);
  const fs::path dir = fs::temp_directory_path() / "ofl_pipeline_inputs_damaged";
  const fs::path index = dir / "pipeline.json";
  const auto fresh = [&] {
    fs::remove_all(dir);
    save_pipeline_inputs(dir.string(), {{stage_step(cluster, 4, 1, 2)}, 4, 4, INFINITY, cluster});
  };
  const auto error = [&] { return error_of([&] { load_pipeline_inputs(dir.string()); }); };
  const auto expect = [&](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  fs::remove_all(dir);
  expect(error_of<NotFoundError>([&] { load_pipeline_inputs(dir.string()); }),
         "cannot open " + index.string() + " (not a folder plan_pipeline(save=...) wrote?)");
  fresh();
  std::ofstream(index) << "{\"format\": \"oneflowlike-pipeline-in";
  expect(error(), index.string() + ": is not JSON (a syntax error at byte");
  std::ofstream(index) << std::string(100000, '[') << std::string(100000, ']');
  expect(error(), "nests deeper than 16 levels");
  fresh();
  rewrite(index, "oneflowlike-pipeline-inputs", "oneflowlike-checkpoint");
  expect(error(), "is not a oneflowlike-pipeline-inputs file");
  fresh();
  rewrite(index, "\"layers\": 4", "\"layers\": -4");
  expect(error(), "the file's layers -4 is not an integer from 1 to 2^30");
  fresh();
  rewrite(index, "\"budget\": null", "\"budget\": \"lots\"");
  expect(error(), "the budget \"lots\" is not a positive number of bytes");
  fresh();
  rewrite(index, "\"chunks\": [", "\"chunks\": [0, ");
  expect(error(), "chunks is [0,1], not a list of counts of at least 1");
  fresh();
  rewrite(index, "\"micro_batches\": 1", "\"micro_batches\": 0");
  expect(error(), "step 0's micro_batches 0 is not an integer from 1");
  fresh();
  rewrite(index, "\"value\": 1\n", "\"value\": 0\n");  // value 0 is the input, not a variable
  expect(error(), "step 0 names value 0, not a variable of");
  fresh();
  fs::remove(dir / "step0.json");
  expect(error(), "cannot open " + (dir / "step0.json").string());
  fresh();
  rewrite(dir / "step0.json", "\"op\": \"matmul\"", "\"op\": \"system\"");
  expect(error(), "runs 'system', which is not an op of this build");
  fresh();
  rewrite(dir / "step0.json", "\"layer\": 0", "\"layer\": -3");
  expect(error(), "'s layer -3 is not an index below");
  fs::remove_all(dir);
}
