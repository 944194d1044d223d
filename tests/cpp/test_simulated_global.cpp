// Meta global tensors on simulated placements: 1024 ranks, or a 128x8 mesh, in a world of one
// rank. Ops pick their signatures and plan their boxing by the cost model as for real tensors,
// every rank's shard shape is known, and nothing communicates: the world here raises (and counts)
// on any collective or sub-group.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "boxing/reshard.h"
#include "core/autograd/engine.h"
#include "core/comm/refusing.h"
#include "global/global_op.h"
#include "graph/trace.h"
#include "ops/ops.h"
#include "sbp/global_info.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

// Rank 0 of a world of one, which refuses to communicate.
std::shared_ptr<comm::RefusingCommunicator> no_comm_world() {
  return std::make_shared<comm::RefusingCommunicator>(0, std::vector<int>{0}, "world", "test world",
                                                      "a simulated placement must not communicate");
}

// The cluster of the 128x8 mesh: 128 nodes of 8 GPUs (mesh axis 1 within a node).
struct Sim {
  std::shared_ptr<comm::RefusingCommunicator> world = no_comm_world();
  std::shared_ptr<BoxingContext> ctx = std::make_shared<BoxingContext>();
  std::vector<PredictedCost> costs;
  std::vector<std::string> log;
  explicit Sim(const ClusterSpec& cluster = ClusterSpec::h100_ib(128, 8)) {
    ctx->world = world;
    ctx->cache = std::make_shared<PlanCache>(cluster);
    ctx->costs = &costs;
    ctx->log = &log;
  }
  const ClusterSpec& cluster() const { return ctx->cache->cluster(); }
  Tensor meta(const Shape& shape, const Placement& p, const std::string& sbp,
              bool requires_grad = false) const {
    Tensor t = as_tensor(meta_global(shape, DType::kFloat32, p, NdSbp::parse(sbp), *ctx), ctx);
    if (requires_grad) t.set_requires_grad(true);
    return t;
  }
  // Nothing ran: no collective, no sub-group, no log line.
  void expect_no_communication() const {
    EXPECT_EQ(world->refused, 0);
    EXPECT_TRUE(log.empty()) << log.front();
  }
  const PredictedCost& last(const std::string& op) const {
    for (auto it = costs.rbegin(); it != costs.rend(); ++it)
      if (it->op == op) return *it;
    ADD_FAILURE() << "no record of " << op;
    static PredictedCost none;
    return none;
  }
};

const GlobalInfo& info(const Tensor& t) {
  return *t.impl()->global;
}
std::string sbp_of(const Tensor& t) {
  return info(t).nd_sbp.str();
}
std::vector<int> iota(int begin, int n) {
  std::vector<int> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) r[size_t(i)] = begin + i;
  return r;
}
Placement line(int n, int first = 0) {
  return Placement(DeviceType::kCUDA, iota(first, n), {n});
}
Placement mesh_128x8() {
  return Placement(DeviceType::kCUDA, iota(0, 1024), {128, 8});
}

}  // namespace

TEST(SimulatedGlobal, MetaShardsHaveEveryRanksShapeAndNoMemory) {
  Sim s;
  Tensor x = s.meta({4100, 512}, line(1024), "S(0)");  // 4100 = 4 * 1024 + 4: uneven
  EXPECT_TRUE(x.device().is_meta());
  EXPECT_EQ(x.shape(), (Shape{5, 512}));  // this process is rank 0
  EXPECT_EQ(x.storage()->data(), nullptr);
  const std::vector<Shape> shapes = local_shapes(x);
  ASSERT_EQ(shapes.size(), 1024u);
  for (int r = 0; r < 1024; ++r) EXPECT_EQ(shapes[size_t(r)], (Shape{r < 4 ? 5 : 4, 512})) << r;
  EXPECT_EQ(info(x).placement.str(), "cuda[0..1023]");
  EXPECT_EQ(mesh_128x8().str(), "cuda[0..1023] as (128, 8)");
}

TEST(SimulatedGlobal, MatmulOn1024RanksKeepsTheDataSplitAndPredictsItsCompute) {
  Sim s;
  Tensor x = s.meta({4100, 512}, line(1024), "S(0)");
  Tensor w = s.meta({512, 256}, line(1024), "B");
  Tensor y = matmul(x, w);
  EXPECT_EQ(sbp_of(y), "S(0)");
  EXPECT_EQ(info(y).shape, (Shape{4100, 256}));
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.shape(), (Shape{5, 256}));
  const auto shapes = local_shapes(y);
  EXPECT_EQ(shapes[3], (Shape{5, 256}));
  EXPECT_EQ(shapes[1023], (Shape{4, 256}));
  s.expect_no_communication();
  const PredictedCost& c = s.last("matmul");
  EXPECT_EQ(c.signature, "S(0), B -> S(0)");
  EXPECT_EQ(c.comm_steps, 0);
  EXPECT_EQ(c.comm_bytes, 0);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 5 * 256 * 512);  // the largest shard's
  // One GEMM of the shard's 5 rows, priced by its tiles.
  EXPECT_DOUBLE_EQ(
      c.compute_seconds,
      s.cluster().compute({c.flops, 4.0 * (5 * 512 + 512 * 256 + 5 * 256), {1, 5, 256, 512}},
                          DType::kFloat32));
}

namespace {

// A Megatron MLP pair on 1024 ranks (128 nodes of 8), then its residual add: the row-parallel
// output is P(sum), its 32 KB the whole shape on every rank. Returns the add's cost.
PredictedCost megatron_pair_and_residual(Sim& s) {
  const Placement p = line(1024);
  Tensor x = s.meta({8, 1024}, p, "B");
  Tensor w1 = s.meta({1024, 4096}, p, "S(1)");  // column parallel
  Tensor w2 = s.meta({4096, 1024}, p, "S(0)");  // row parallel
  Tensor h = gelu(matmul(x, w1));
  EXPECT_EQ(sbp_of(h), "S(1)");
  EXPECT_EQ(h.shape(), (Shape{8, 4}));
  Tensor o = matmul(h, w2);
  EXPECT_EQ(sbp_of(o), "P(sum)");
  EXPECT_EQ(o.shape(), (Shape{8, 1024}));  // every rank's partial is the whole shape
  s.expect_no_communication();
  for (const char* op : {"matmul", "gelu"}) EXPECT_EQ(s.last(op).comm_steps, 0) << op;
  Tensor r = add(o, x);
  EXPECT_EQ(sbp_of(r), "S(1)");
  s.expect_no_communication();
  return s.last("add");
}

}  // namespace

TEST(SimulatedGlobal, MegatronPairOn1024RanksOwesOneAllReduce) {
  // With rings only, the model reduce-scatters o and slices x (cheaper than all-reducing o),
  // and the record is the price of those plans.
  ClusterSpec rings = ClusterSpec::h100_ib(128, 8);
  rings.tree_all_reduce = false;
  Sim s(rings);
  const Placement p = line(1024);
  const PredictedCost c = megatron_pair_and_residual(s);
  EXPECT_EQ(c.signature, "S(1), S(1) -> S(1)");
  EXPECT_EQ(c.comm_steps, 1);
  EXPECT_EQ(c.comm_bytes, 8 * 1024 * 4);
  PlanCache& cache = *s.ctx->cache;
  const double want =
      cache.get({8, 1024}, DType::kFloat32, p, NdSbp::parse("P(sum)"), p, NdSbp::parse("S(1)"))
          ->seconds +
      cache.get({8, 1024}, DType::kFloat32, p, NdSbp::parse("B"), p, NdSbp::parse("S(1)"))->seconds;
  EXPECT_DOUBLE_EQ(c.comm_seconds, want);
  EXPECT_NEAR(c.comm_seconds, s.cluster().reduce_scatter(p.ranks(), 8 * 1024 * 4), 1e-6);
  EXPECT_LT(c.comm_seconds, s.cluster().all_reduce(p.ranks(), 8 * 1024 * 4));
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_NE(c.steps[0].find("reduce_scatter(sum) on mesh axis 0 (groups of 1024)"),
            std::string::npos)
      << c.steps[0];
  EXPECT_NE(c.steps[1].find("local_slice"), std::string::npos) << c.steps[1];
}

TEST(SimulatedGlobal, OnATreeTheSmallAllReduceOf1024RanksBeatsTheRingReduceScatter) {
  // The preset's NCCL tree: 32 KB over 128 nodes is latency-bound, and a tree's 2 x (7 + 7)
  // hops beat a ring's 1023, so the add all-reduces o and slices.
  Sim s;
  const Placement p = line(1024);
  const PredictedCost c = megatron_pair_and_residual(s);
  EXPECT_EQ(c.comm_steps, 1);
  EXPECT_LT(c.comm_seconds, s.cluster().reduce_scatter(p.ranks(), 8 * 1024 * 4) / 10);
  EXPECT_NEAR(c.comm_seconds, s.cluster().all_reduce(p.ranks(), 8 * 1024 * 4), 1e-6);
  std::string steps;
  for (const std::string& step : c.steps) steps += step + "\n";
  EXPECT_NE(steps.find("all_reduce(sum) on mesh axis 0 (groups of 1024)"), std::string::npos)
      << steps;
  EXPECT_EQ(steps.find("reduce_scatter"), std::string::npos) << steps;
}

TEST(SimulatedGlobal, MegatronOnA128x8MeshSplitsDataAndModel) {
  Sim s;
  const Placement m = mesh_128x8();
  Tensor x = s.meta({4099, 1024}, m, "(S(0), B)");   // 4099 = 32 * 128 + 3
  Tensor w1 = s.meta({1024, 4100}, m, "(B, S(1))");  // 4100 = 512 * 8 + 4
  Tensor w2 = s.meta({4100, 1024}, m, "(B, S(0))");
  Tensor h = gelu(matmul(x, w1));
  EXPECT_EQ(sbp_of(h), "(S(0), S(1))");
  Tensor o = matmul(h, w2);
  EXPECT_EQ(sbp_of(o), "(S(0), P(sum))");
  s.expect_no_communication();
  const auto hs = local_shapes(h);
  EXPECT_EQ(hs[0], (Shape{33, 513}));          // coords (0, 0)
  EXPECT_EQ(hs[3 * 8 + 4], (Shape{32, 512}));  // coords (3, 4)
  EXPECT_EQ(hs[2 * 8 + 3], (Shape{33, 513}));  // coords (2, 3)
  EXPECT_EQ(hs[1023], (Shape{32, 512}));       // coords (127, 7)
  EXPECT_EQ(h.shape(), (Shape{33, 513}));      // rank 0's shard
  EXPECT_EQ(o.shape(), (Shape{33, 1024}));

  // The residual add reduce-scatters o within each node (mesh axis 1: NVLink, not InfiniBand).
  Tensor r = add(o, x);
  EXPECT_EQ(sbp_of(r), "(S(0), S(1))");
  const PredictedCost& c = s.last("add");
  EXPECT_EQ(c.comm_steps, 1);
  EXPECT_EQ(c.comm_bytes, 33 * 1024 * 4);
  ASSERT_FALSE(c.steps.empty());
  EXPECT_NE(c.steps[0].find("reduce_scatter(sum) on mesh axis 1 (groups of 8)"), std::string::npos)
      << c.steps[0];
  EXPECT_NEAR(c.comm_seconds, s.cluster().reduce_scatter(m.axis_group(0, 1), 33 * 1024 * 4), 1e-6);
  EXPECT_LT(s.cluster().all_reduce(m.axis_group(0, 1), 1e6),
            s.cluster().all_reduce(m.axis_group(0, 0), 1e6));
  s.expect_no_communication();
}

TEST(SimulatedGlobal, BackwardOnMetaGivesTheLeavesLayoutsAndPricesTheGradientReduction) {
  Sim s;
  const Placement p = line(1024);
  Tensor x = s.meta({2048, 256}, p, "S(0)");
  Tensor w = s.meta({256, 512}, p, "B", /*requires_grad=*/true);
  Tensor loss = sum(gelu(matmul(x, w)), {});
  EXPECT_EQ(sbp_of(loss), "P(sum)");
  autograd::backward({loss}, {Tensor()}, /*retain_graph=*/false, /*create_graph=*/false);
  Tensor g = w.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_TRUE(g.device().is_meta());
  EXPECT_EQ(sbp_of(g), "B");  // data parallel: the gradient's all-reduce, planned not run
  EXPECT_EQ(info(g).shape, (Shape{256, 512}));
  s.expect_no_communication();
  const PredictedCost& c = s.last("reduce_fused");
  EXPECT_EQ(c.comm_steps, 1);
  EXPECT_EQ(c.comm_bytes, 256 * 512 * 4);
  EXPECT_DOUBLE_EQ(c.comm_seconds, s.cluster().all_reduce(p.ranks(), 256 * 512 * 4));
}

TEST(SimulatedGlobal, ReshardOfAMetaTensorOnlyPlans) {
  Sim s;
  Tensor x = s.meta({4096, 1024}, mesh_128x8(), "(S(0), S(1))");
  GlobalTensor b = reshard(as_global(x, "test"), mesh_128x8(), NdSbp::parse("(S(0), B)"), *s.ctx);
  EXPECT_TRUE(b.local.device().is_meta());
  EXPECT_EQ(b.local.shape(), (Shape{32, 1024}));
  s.expect_no_communication();
  ASSERT_FALSE(s.costs.empty());
  EXPECT_EQ(s.costs.back().op, "reshard");
  EXPECT_EQ(s.costs.back().comm_steps, 1);
  EXPECT_NE(s.costs.back().steps[0].find("all_gather on mesh axis 1"), std::string::npos)
      << s.costs.back().steps[0];
  // Onto another simulated placement: a planned send_recv.
  GlobalTensor moved = reshard(b, line(512, 512), NdSbp::parse("S(0)"), *s.ctx);
  EXPECT_EQ(moved.local.shape(), (Shape{0, 0}));  // rank 0 is outside ranks 512..1023
  s.expect_no_communication();
}

TEST(SimulatedGlobal, ARankOutsideTheMetaPlacementStillPlansTheCall) {
  Sim s;
  const Placement stage = line(512, 512);  // a pipeline stage on ranks 512..1023
  Tensor x = s.meta({1024, 64}, stage, "S(0)");
  Tensor w = s.meta({64, 64}, stage, "B");
  EXPECT_EQ(x.shape(), (Shape{0, 0}));  // empty, with the logical number of dimensions
  Tensor y = matmul(x, w);
  EXPECT_EQ(sbp_of(y), "S(0)");
  EXPECT_EQ(info(y).shape, (Shape{1024, 64}));
  EXPECT_EQ(y.shape(), (Shape{0, 0}));
  EXPECT_EQ(s.last("matmul").signature, "S(0), B -> S(0)");
  s.expect_no_communication();
}

TEST(SimulatedGlobal, RealTensorsOnAPlacementLargerThanTheWorldRaise) {
  Sim s;
  Tensor local = Tensor::empty({4, 8}, DType::kFloat32);
  const std::string e = error_of([&] {
    make_global(local, Placement::all(DeviceType::kCPU, 1024), NdSbp::parse("S(0)"), *s.ctx, false);
  });
  EXPECT_NE(e.find("[to_global]"), std::string::npos) << e;
  EXPECT_NE(e.find("not in the world of 1 ranks"), std::string::npos) << e;
  EXPECT_NE(e.find("only meta tensors"), std::string::npos) << e;
  // The same tensor on the meta device is a simulated global tensor of 1024 shards of (4, 8).
  GlobalTensor g =
      make_global(Tensor::empty({4, 8}, DType::kFloat32, Device{DeviceType::kMeta}),
                  Placement::all(DeviceType::kCPU, 1024), NdSbp::parse("S(0)"), *s.ctx, false);
  EXPECT_EQ(g.shape, (Shape{4096, 8}));
  s.expect_no_communication();
}

TEST(SimulatedGlobal, MixingMetaAndRealGlobalTensorsRaises) {
  Sim s;
  const Placement one = Placement::all(DeviceType::kCPU, 1);
  Tensor real =
      as_tensor({Tensor::empty({4, 8}, DType::kFloat32), {4, 8}, one, NdSbp::parse("B")}, s.ctx);
  Tensor meta = s.meta({4, 8}, one, "B");
  const std::string e = error_of([&] { add(real, meta); });
  EXPECT_NE(e.find("[add]"), std::string::npos) << e;
  EXPECT_NE(e.find("meta"), std::string::npos) << e;
}

TEST(SimulatedGlobal, ATraceFindsWhereEachInputIsReadWhenThatIsElsewhere) {
  // A pipeline's inputs given on all 4 ranks: the batch is read on the first stage; the targets
  // are negated where given, then read on the last stage (their cone moves with them); a third
  // input is read on the last stage too, but a result of the step is computed from it where it is
  // given: it stays.
  Sim s;
  const Placement all = Placement::all(DeviceType::kCPU, 4);
  const Placement first{DeviceType::kCPU, {0, 1}, {2}}, last{DeviceType::kCPU, {2, 3}, {2}};
  graph::Trace trace;
  const Tensor x = trace.input(s.meta({8, 4}, all, "S(0)"));
  const Tensor y = trace.input(s.meta({8, 4}, all, "S(0)"));
  const Tensor z = trace.input(s.meta({8, 4}, all, "S(0)"));
  exp(trace.box("to_global", x, first, NdSbp()));
  exp(trace.box("to_global", neg(y), last, NdSbp()));
  exp(trace.box("to_global", z, last, NdSbp()));
  const Tensor result = exp(z);
  const std::vector<std::optional<Placement>> moves = trace.input_moves({result});
  trace.close();
  ASSERT_EQ(moves.size(), 3u);
  EXPECT_EQ(moves[0], first);
  EXPECT_EQ(moves[1], last);
  EXPECT_FALSE(moves[2].has_value());
  s.expect_no_communication();
}
