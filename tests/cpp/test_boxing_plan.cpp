// Tier (a): boxing plans and the cost model as data, no sockets.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "boxing/search.h"
#include "sbp/cluster_spec.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

const ClusterSpec kCpu4 = ClusterSpec::cpu_loopback(4);

Placement line(int n) {
  return Placement::all(DeviceType::kCPU, n);
}
Placement mesh2x2() {
  return Placement(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
}

BoxingPlan plan(const Shape& shape, const Placement& p, const std::string& from,
                const std::string& to, const ClusterSpec& c = kCpu4) {
  return plan_boxing(shape, DType::kFloat32, p, NdSbp::parse(from), p, NdSbp::parse(to), c);
}

// Steps chain from -> to and the plan's seconds are their sum.
void expect_consistent(const BoxingPlan& p, const NdSbp& from, const NdSbp& to) {
  if (p.empty()) {
    EXPECT_EQ(from, to);
    return;
  }
  EXPECT_EQ(p.steps.front().from, from) << p.str();
  EXPECT_EQ(p.steps.back().to, to) << p.str();
  double sum = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(p.steps[i - 1].to, p.steps[i].from) << p.str();
    }
    sum += p.steps[i].seconds;
  }
  EXPECT_NEAR(p.seconds, sum, 1e-12);
}

void expect_one(const BoxingPlan& p, StepKind kind, PartialOp op = PartialOp::kSum) {
  ASSERT_EQ(p.steps.size(), 1u) << p.str();
  EXPECT_EQ(p.steps[0].kind, kind) << p.str();
  EXPECT_EQ(p.steps[0].op, op) << p.str();
  EXPECT_FALSE(p.fallback);
}

// Nodes of `per_node` devices with a NIC each: NVLink-like {1 us, 1 GB/s} inside, {10 us,
// 100 MB/s} a NIC across.
ClusterSpec nodes_with_a_nic_a_device(int nodes, int per_node) {
  ClusterSpec c;
  c.nodes = nodes;
  c.devices_per_node = per_node;
  c.nics_per_node = per_node;
  c.intra_node = {1e-6, 1e9};
  c.inter_node = {10e-6, 1e8};
  return c;
}

}  // namespace

TEST(ClusterSpec, RingFormulas) {
  ClusterSpec c;
  c.nodes = 2;
  c.devices_per_node = 2;
  c.intra_node = {1e-6, 1e9};
  c.inter_node = {10e-6, 1e8};
  c.device.mem_bandwidth = 1e10;
  const std::vector<int> intra = {0, 1}, inter = {0, 1, 2, 3};
  EXPECT_NEAR(c.all_gather(intra, 1e6), 1 * (1e-6 + 0.5e6 / 1e9), 1e-15);
  EXPECT_NEAR(c.all_gather(inter, 1e6), 3 * (10e-6 + 0.25e6 / 1e8), 1e-15);
  EXPECT_NEAR(c.reduce_scatter(inter, 1e6), c.all_gather(inter, 1e6), 1e-15);
  EXPECT_NEAR(c.all_reduce(inter, 1e6), 2 * c.all_gather(inter, 1e6), 1e-15);
  EXPECT_NEAR(c.send_recv(0, 3, 1e6), 10e-6 + 1e6 / 1e8, 1e-15);
  EXPECT_NEAR(c.send_recv(0, 1, 1e6), 1e-6 + 1e6 / 1e9, 1e-15);
  EXPECT_NEAR(c.local(1e6), 1e-4, 1e-15);
  EXPECT_EQ(c.all_gather({2}, 1e6), 0);
  EXPECT_EQ(&c.link_for({2, 3}), &c.intra_node);
  EXPECT_EQ(&c.link_for({1, 2}), &c.inter_node);
}

TEST(ClusterSpec, RingsAcrossNodesRunOnAsManyNicsAsTheGroupHasRanksOnANode) {
  ClusterSpec c = nodes_with_a_nic_a_device(2, 4);
  EXPECT_EQ(c.ring_beta({0, 1, 2, 3}), 1e9);  // one node: NVLink
  EXPECT_EQ(c.ring_beta({0, 4}), 1e8);        // one rank a node: one NIC
  EXPECT_EQ(c.ring_beta({0, 1, 4, 5}), 2e8);  // two a node: two rings, two NICs
  EXPECT_EQ(c.ring_beta({0, 1, 2, 3, 4, 5, 6, 7}), 4e8);
  EXPECT_EQ(c.ring_beta({0, 1, 2, 4}), 1e8);  // node 1's one rank sets the pace
  EXPECT_EQ(c.spread({0, 1, 2, 4}), (ClusterSpec::Spread{2, 1, 3}));
  EXPECT_EQ(c.spread({5, 6}), (ClusterSpec::Spread{1, 2, 2}));
  EXPECT_EQ(c.ring_beta({0, 12}), 1e8);  // a rank past the spec's world: a node of its own
  EXPECT_NEAR(c.all_gather({0, 1, 4, 5}, 1e6), 3 * (10e-6 + 0.25e6 / 2e8), 1e-15);
  EXPECT_NEAR(c.reduce_scatter({0, 1, 4, 5}, 1e6), 3 * (10e-6 + 0.25e6 / 2e8), 1e-15);
  EXPECT_NEAR(c.all_reduce({0, 1, 4, 5}, 1e6), 6 * (10e-6 + 0.25e6 / 2e8), 1e-15);
  c.nics_per_node = 16;
  c.inter_node.beta = 5e8;  // four NICs would outrun the intra-node link: it caps them
  EXPECT_EQ(c.ring_beta({0, 1, 2, 3, 4, 5, 6, 7}), 1e9);
  c.nics_per_node = 1;  // one NIC a node: rings cross nodes at its bandwidth, as before
  c.inter_node.beta = 1e8;
  EXPECT_EQ(c.ring_beta({0, 1, 4, 5}), 1e8);
}

TEST(ClusterSpec, AllReduceTakesATreeWhereItIsFasterIfTheSpecAllowsOne) {
  ClusterSpec c = nodes_with_a_nic_a_device(8, 2);
  std::vector<int> all(16);  // p = 16, 2 a node on 8 nodes: rings at 2e8 B/s
  for (int r = 0; r < 16; ++r) all[size_t(r)] = r;
  // Tree: a chain of 2 inside each node (1 hop), a binary tree over 8 nodes (3 hops); each way.
  const double ring_small = 30 * (10e-6 + 1e3 / 16 / 2e8);
  const double tree_small = 2 * (3 * 10e-6 + 1 * 1e-6) + 2 * 1e3 / 2e8;
  EXPECT_NEAR(c.all_reduce(all, 1e3), ring_small, 1e-15);  // no tree: a ring however small
  c.tree_all_reduce = true;
  EXPECT_NEAR(c.all_reduce(all, 1e3), tree_small, 1e-15);  // latency-bound: the tree
  EXPECT_NEAR(c.all_reduce(all, 1e9), 30 * (10e-6 + 1e9 / 16 / 2e8), 1e-12);  // the ring
  // Inside one node the tree is a chain, never faster than the ring.
  EXPECT_NEAR(c.all_reduce({0, 1}, 1e3), 2 * (1e-6 + 1e3 / 2 / 1e9), 1e-15);
  EXPECT_TRUE(ClusterSpec::a100_nvlink(2, 8).tree_all_reduce);
  EXPECT_EQ(ClusterSpec::h100_ib(2, 8).nics_per_node, 8);
  EXPECT_FALSE(ClusterSpec::cpu_loopback(4).tree_all_reduce);  // Gloo
}

TEST(ClusterSpec, PresetsArePlausible) {
  for (const ClusterSpec& c :
       {ClusterSpec::cpu_loopback(4), ClusterSpec::a100_nvlink(2, 8), ClusterSpec::h100_ib(4, 8)}) {
    EXPECT_GT(c.device.peak_flops(DType::kFloat32), 0) << c.name;
    EXPECT_GT(c.device.mem_bandwidth, 0) << c.name;
    EXPECT_GT(c.device.mem_capacity, 0) << c.name;
    EXPECT_GE(c.intra_node.beta, c.inter_node.beta) << c.name;
  }
  EXPECT_EQ(ClusterSpec::h100_ib(4, 8).world(), 32);
  EXPECT_GT(ClusterSpec::h100_ib(1, 8).device.peak_flops(DType::kBFloat16),
            ClusterSpec::a100_nvlink(1, 8).device.peak_flops(DType::kBFloat16));
}

TEST(ClusterSpec, JsonRoundTrip) {
  const ClusterSpec a = ClusterSpec::h100_ib(2, 8);
  const ClusterSpec b = ClusterSpec::from_json(a.to_json());
  EXPECT_EQ(a, b);
  EXPECT_EQ(b.name, "h100_ib");
  EXPECT_EQ(b.intra_node, a.intra_node);
  const std::string path = ::testing::TempDir() + "/ofl_cluster_spec.json";
  a.save(path);
  EXPECT_EQ(ClusterSpec::load(path), a);
  std::remove(path.c_str());
  const ClusterSpec c = ClusterSpec::from_json(R"({"nodes": 3, "intra_beta": 5e9})");
  EXPECT_EQ(c.nodes, 3);
  EXPECT_EQ(c.intra_node.beta, 5e9);
  EXPECT_THROW(ClusterSpec::from_json(R"({"bogus": 1})"), Error);
  EXPECT_THROW(ClusterSpec::from_json(R"({"nodes": "x"})"), Error);
  EXPECT_TRUE(b.tree_all_reduce);
  EXPECT_EQ(b.nics_per_node, 8);
  EXPECT_FALSE(ClusterSpec::from_json(R"({"nodes": 3})").tree_all_reduce);  // Gloo's default
  EXPECT_THROW(ClusterSpec::from_json(R"({"tree_all_reduce": 2})"), Error);
  EXPECT_THROW(ClusterSpec::from_json(R"({"nics_per_node": 0})"), Error);
  for (const char* damaged : {R"({"nodes": 1e300})", R"({"devices_per_node": -8})",
                              R"({"nics_per_node": 2.5})", R"({"nodes": 3000000000})"})
    EXPECT_NE(
        error_of([&] { ClusterSpec::from_json(damaged); }).find("must be a positive whole number"),
        std::string::npos)
        << damaged;
}

// Measured collectives price groups of their size inside a node by interpolation: the first
// point's time below it, the line between points, the last segment's rate past the end; groups
// of other sizes, other collectives and groups across nodes keep the formulas.
TEST(ClusterSpec, MeasuredCollectivesInterpolateAndRoundTrip) {
  ClusterSpec c = ClusterSpec::cpu_loopback(4);
  const ClusterSpec formulas = c;
  c.measured_collectives.push_back({"all_reduce", 2, {{1000, 3000, 5000}, {0.004, 0.005, 0.009}}});
  c.measured_collectives.push_back({"all_gather", 4, {{1000}, {0.002}}});
  EXPECT_DOUBLE_EQ(c.all_reduce({0, 1}, 10), 0.004);
  EXPECT_DOUBLE_EQ(c.all_reduce({2, 3}, 2000), 0.0045);
  EXPECT_DOUBLE_EQ(c.all_reduce({0, 1}, 4000), 0.007);
  EXPECT_DOUBLE_EQ(c.all_reduce({0, 1}, 7000), 0.013);       // 2e-6 s a byte past 5000
  EXPECT_DOUBLE_EQ(c.all_gather({0, 1, 2, 3}, 1e9), 0.002);  // one point: a constant
  EXPECT_DOUBLE_EQ(c.all_reduce({0, 1, 2, 3}, 4000), formulas.all_reduce({0, 1, 2, 3}, 4000));
  EXPECT_DOUBLE_EQ(c.reduce_scatter({0, 1}, 4000), formulas.reduce_scatter({0, 1}, 4000));
  EXPECT_DOUBLE_EQ(c.all_reduce({0}, 4000), 0);
  ClusterSpec two_nodes = c;
  two_nodes.nodes = 2;
  two_nodes.devices_per_node = 2;
  ClusterSpec two_nodes_formulas = two_nodes;
  two_nodes_formulas.measured_collectives.clear();
  EXPECT_DOUBLE_EQ(two_nodes.all_reduce({0, 2}, 4000), two_nodes_formulas.all_reduce({0, 2}, 4000));
  EXPECT_DOUBLE_EQ(two_nodes.all_reduce({0, 1}, 4000), 0.007);

  const ClusterSpec back = ClusterSpec::from_json(c.to_json());
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.measured_collectives, c.measured_collectives);
  EXPECT_EQ(formulas.to_json().find("collectives"), std::string::npos);  // files stay as they were

  const auto error = [](const std::string& entry) {
    return error_of([&] { ClusterSpec::from_json(R"({"collectives": [)" + entry + "]}"); });
  };
  const std::string ok = R"("group": 2, "bytes": [1, 2], "seconds": [0.1, 0.2])";
  // Each damaged entry, and what its error says.
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {R"({"kind": "all_reduce"})", "has no \"group\""},
      {R"({"kind": "gather", )" + ok + "}", "unknown collective \"gather\""},
      {R"({"kind": "all_reduce", "group": 1, "bytes": [1], "seconds": [1]})",
       "\"group\" must be a whole number of ranks >= 2"},
      {R"({"kind": "all_reduce", "group": 2, "bytes": [2, 1], "seconds": [1, 1]})",
       "\"bytes\" must increase"},
      {R"({"kind": "all_reduce", "group": 2, "bytes": [1, 2], "seconds": [1]})",
       "2 sizes but 1 times"},
      {R"({"kind": "all_reduce", "group": 2, "bytes": [1], "seconds": [-1]})",
       "not a finite number >= 0"},
      {R"({"kind": "all_reduce", "group": 2, "bytes": [], "seconds": []})",
       "is not a list of numbers"},
  };
  for (const auto& [entry, says] : damaged)
    EXPECT_NE(error(entry).find(says), std::string::npos) << entry << ": " << error(entry);
  EXPECT_NE(error_of([] { ClusterSpec::from_json(R"({"collectives": 3})"); }).find("not a list"),
            std::string::npos);
  EXPECT_NE(error_of([] { ClusterSpec::from_json(R"({"nodes": 2,)"); }).find("not valid JSON"),
            std::string::npos);
}

// A measured GEMM curve times a compute-bound op of its dtype class by its FLOPs, the op
// overhead on top; memory-bound ops and other dtypes keep the roofline.
TEST(ClusterSpec, MeasuredGemmsTimeComputeBoundOpsOfTheirDtype) {
  ClusterSpec c = ClusterSpec::a100_nvlink(1, 8);
  const ClusterSpec roofline = c;
  c.measured_gemms.push_back({"fp16", {{1e9, 1e12}, {1e-5, 5e-3}}});
  const double overhead = c.device.op_overhead;
  EXPECT_DOUBLE_EQ(c.compute(1e12, 1e6, DType::kBFloat16), overhead + 5e-3);
  EXPECT_DOUBLE_EQ(c.compute(1e8, 1e3, DType::kFloat16), overhead + 1e-5);  // below: the first
  EXPECT_DOUBLE_EQ(c.compute(1e12, 1e6, DType::kFloat32),
                   roofline.compute(1e12, 1e6, DType::kFloat32));
  EXPECT_DOUBLE_EQ(c.compute(1e3, 1e9, DType::kFloat16),
                   roofline.compute(1e3, 1e9, DType::kFloat16));
  const ClusterSpec back = ClusterSpec::from_json(c.to_json());
  EXPECT_EQ(back.measured_gemms, c.measured_gemms);
  EXPECT_NE(
      error_of([] {
        ClusterSpec::from_json(R"({"gemms": [{"dtype": "fp8", "flops": [1], "seconds": [1]}]})");
      }).find("\"dtype\" must be fp64, fp32, fp16 or int"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              ClusterSpec::from_json(
                  R"({"gemms": [{"dtype": "fp16", "flops": [2, 1], "seconds": [1, 2]}]})");
            }).find("\"flops\" must increase"),
            std::string::npos);
}

// A GEMM's rate from its tiles (DeviceSpec::gemm_efficiency): waves over the SMs, the padding
// of partial tiles, the K loop after the pipeline's fill, split-K for too few tiles.
TEST(ClusterSpec, AGemmReachesWhatItsTilesAndWavesAllow) {
  DeviceSpec d;
  d.sms = 100, d.tile_m = 128, d.tile_n = 128, d.tile_k_fill = 64;
  // 10 x 20 = 200 tiles: two full waves; K = 4096 after a fill of 64.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency({1, 1280, 2560, 4096}), 4096.0 / 4160);
  // 10 x 21 = 210 tiles of 128 x 128 fill 3 waves to 70%; 840 tiles of 64 x 64 fill 9 to 93%,
  // the best of the four tiles.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency({1, 1280, 2688, 4096}), 840.0 / 900 * 4096.0 / 4160);
  // Partial tiles: 1290 rows are 21 tiles of 64, 1290 / 1344 of them used; 840 tiles, 9 waves.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency({1, 1290, 2560, 4096}),
                   1290.0 / 1344 * 840.0 / 900 * 4096.0 / 4160);
  // A batch counts its tiles together: 4 products of 5 x 10 tiles = 200.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency({4, 640, 1280, 4096}), 4096.0 / 4160);
  // 16 tiles of 64 x 64 on 100 SMs: K split 6 ways (100 / 16; K / (4 fills) = 16 would allow
  // more): 96 of the 100 SMs busy, each on K 4096 / 6.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency({1, 256, 256, 4096}),
                   96.0 / 100 * (4096.0 / 6) / (4096.0 / 6 + 64));
  // No tile model (a CPU), or no GEMM: the rate.
  EXPECT_EQ(DeviceSpec{}.gemm_efficiency({1, 256, 256, 4096}), 1.0);
  EXPECT_EQ(d.gemm_efficiency({}), 1.0);
  // compute() prices a GEMM at the sustained rate times its tiles' efficiency.
  ClusterSpec c;
  c.device = d;
  c.device.flops_fp16 = 1e14;
  c.device.compute_efficiency = 0.5;
  const OpCost gemm{2.0 * 1280 * 2560 * 4096, 1e3, {1, 1280, 2560, 4096}};
  EXPECT_DOUBLE_EQ(c.compute(gemm, DType::kFloat16), gemm.flops / (1e14 * 0.5 * (4096.0 / 4160)));
  EXPECT_DOUBLE_EQ(c.compute(gemm.flops, gemm.bytes, DType::kFloat16), gemm.flops / (1e14 * 0.5));
  // The fields round-trip, and a tile of no rows is refused.
  EXPECT_EQ(ClusterSpec::from_json(c.to_json()).device.tile_k_fill, 64);
  EXPECT_NE(error_of([] {
              ClusterSpec::from_json(R"({"tile_m": 0})");
            }).find("\"tile_m\" must be a positive whole number"),
            std::string::npos);
  EXPECT_NE(error_of([] { ClusterSpec::from_json(R"({"sms": 1.5})"); }).find("\"sms\" must be"),
            std::string::npos);
}

TEST(Boxing, CanonicalOneDimTransitions) {
  const Shape s = {8, 8};
  const Placement p = line(4);
  expect_one(plan(s, p, "S(0)", "B"), StepKind::kAllGather);
  expect_one(plan(s, p, "P(sum)", "B"), StepKind::kAllReduce);
  expect_one(plan(s, p, "P(sum)", "S(0)"), StepKind::kReduceScatter);
  expect_one(plan(s, p, "S(0)", "S(1)"), StepKind::kAllToAll);
  expect_one(plan(s, p, "B", "S(0)"), StepKind::kLocalSlice);
  expect_one(plan(s, p, "B", "P(sum)"), StepKind::kLocalZeroFill);
  expect_one(plan(s, p, "P(max)", "B"), StepKind::kAllReduce, PartialOp::kMax);
  expect_one(plan(s, p, "P(min)", "S(1)"), StepKind::kReduceScatter, PartialOp::kMin);
  expect_one(plan(s, p, "S(1)", "P(sum)"), StepKind::kLocalPad);
  EXPECT_TRUE(plan(s, p, "S(0)", "S(0)").empty());
  EXPECT_EQ(plan(s, p, "B", "B").seconds, 0);
  const BoxingPlan ag = plan(s, p, "S(0)", "B");
  EXPECT_EQ(ag.steps[0].bytes, 8 * 8 * 4);
  EXPECT_EQ(ag.steps[0].group_size, 4);
  EXPECT_EQ(ag.steps[0].mesh_axes, std::vector<int64_t>{0});
}

TEST(Boxing, SplitToBroadcastIsOneAllGather) {
  const BoxingPlan p = plan({1024, 256}, line(2), "S(0)", "B");
  expect_one(p, StepKind::kAllGather);
  // 1 MiB gathered over 2 ranks at 2 GB/s, 60 us + 20 us overhead.
  EXPECT_NEAR(p.seconds, 20e-6 + 60e-6 + 524288.0 / 2e9, 1e-9);
}

TEST(Boxing, EveryOneDimPairHasAPlanNoWorseThanViaBroadcast) {
  const char* sbps[] = {"S(0)", "S(1)", "B", "P(sum)", "P(max)", "P(min)"};
  for (const Shape& shape : {Shape{8, 6}, Shape{5, 3}, Shape{3, 2}}) {
    for (int n = 1; n <= 4; ++n) {
      const Placement p = line(n);
      for (const char* a : sbps)
        for (const char* b : sbps) {
          const BoxingPlan direct = plan(shape, p, a, b);
          SCOPED_TRACE(std::string(a) + " -> " + b + " on " + p.str() + "\n" + direct.str());
          EXPECT_FALSE(direct.fallback);
          expect_consistent(direct, NdSbp::parse(a), NdSbp::parse(b));
          const double via_b = plan(shape, p, a, "B").seconds + plan(shape, p, "B", b).seconds;
          EXPECT_LE(direct.seconds, via_b + 1e-12);
          EXPECT_LE(direct.steps.size(), 2u);
        }
    }
  }
}

TEST(Boxing, PartialToOtherPartialGoesThroughAReduction) {
  // Reduce-scatter with sum, then pad each shard with max's identity: cheaper than all-reduce.
  const BoxingPlan p = plan({8, 8}, line(4), "P(sum)", "P(max)");
  ASSERT_EQ(p.steps.size(), 2u) << p.str();
  EXPECT_EQ(p.steps[0].kind, StepKind::kReduceScatter);
  EXPECT_EQ(p.steps[0].op, PartialOp::kSum);
  EXPECT_EQ(p.steps[1].kind, StepKind::kLocalPad);
  EXPECT_EQ(p.steps[1].op, PartialOp::kMax);
  // B -> P(max): every rank keeps its copy, for free.
  EXPECT_EQ(plan({8, 8}, line(4), "B", "P(max)").seconds, 0);
}

TEST(Boxing, MeshAxisZeroOnlyGathersOnThatAxis) {
  const BoxingPlan p = plan({8, 8}, mesh2x2(), "(S(0), B)", "(B, B)");
  expect_one(p, StepKind::kAllGather);
  EXPECT_EQ(p.steps[0].mesh_axes, std::vector<int64_t>{0});
  EXPECT_EQ(p.steps[0].group_size, 2);
}

TEST(Boxing, MergedAxesGatherWhenCheaper) {
  // NVLink: one launch over the flat group of 4 beats two nested launches.
  const BoxingPlan merged =
      plan({1024, 1024}, mesh2x2(), "(S(0), S(0))", "(B, B)", ClusterSpec::a100_nvlink(1, 4));
  expect_one(merged, StepKind::kAllGather);
  EXPECT_EQ(merged.steps[0].mesh_axes, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(merged.steps[0].group_size, 4);
  // Gloo's per-hop latency dominates its launch cost: two nested gathers, inner axis first.
  const BoxingPlan nested = plan({1024, 1024}, mesh2x2(), "(S(0), S(0))", "(B, B)");
  ASSERT_EQ(nested.steps.size(), 2u) << nested.str();
  EXPECT_EQ(nested.steps[0].mesh_axes, std::vector<int64_t>{1});
  EXPECT_EQ(nested.steps[1].mesh_axes, std::vector<int64_t>{0});
}

TEST(Boxing, NestedSplitsOfOneAxisAllToAllAsOneMergedStep) {
  // Neither mesh axis alone can move S(0) -> S(1) exactly while the other splits the same axis.
  const BoxingPlan p = plan({1024, 1024}, mesh2x2(), "(S(0), S(0))", "(S(1), S(1))");
  expect_one(p, StepKind::kAllToAll);
  EXPECT_EQ(p.steps[0].group_size, 4);
}

TEST(Boxing, UnevenMergedSplitsAreNotMerged) {
  // 6 rows nested over 2x2 are 2,1,2,1; flat over 4 they are 2,2,1,1: no single gather.
  const BoxingPlan p =
      plan({6, 4}, mesh2x2(), "(S(0), S(0))", "(B, B)", ClusterSpec::a100_nvlink(1, 4));
  EXPECT_EQ(p.steps.size(), 2u) << p.str();
}

TEST(Boxing, TwoByTwoAllPairsPlan) {
  const char* sbps[] = {"S(0)", "S(1)", "B", "P(sum)", "P(max)"};
  const Placement m = mesh2x2();
  for (const char* a0 : sbps)
    for (const char* a1 : sbps)
      for (const char* b0 : sbps)
        for (const char* b1 : sbps) {
          const std::string from = std::string("(") + a0 + ", " + a1 + ")";
          const std::string to = std::string("(") + b0 + ", " + b1 + ")";
          const BoxingPlan p = plan({5, 6}, m, from, to);
          SCOPED_TRACE(from + " -> " + to + "\n" + p.str());
          EXPECT_FALSE(p.fallback);
          expect_consistent(p, NdSbp::parse(from), NdSbp::parse(to));
        }
}

TEST(Boxing, ThreeDimMeshSamplePairsPlan) {
  const Placement m(DeviceType::kCPU, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  const std::pair<const char*, const char*> pairs[] = {
      {"(S(0), S(0), S(0))", "(B, B, B)"},           {"(P(sum), P(sum), P(sum))", "(B, B, B)"},
      {"(S(0), S(1), P(sum))", "(S(1), S(0), B)"},   {"(B, B, B)", "(S(0), S(1), S(0))"},
      {"(P(max), S(0), B)", "(S(0), P(sum), S(1))"}, {"(S(1), S(1), S(1))", "(S(0), S(0), S(0))"},
  };
  for (const auto& [from, to] : pairs) {
    const BoxingPlan p = plan({8, 12, 3}, m, from, to, ClusterSpec::cpu_loopback(8));
    SCOPED_TRACE(std::string(from) + " -> " + to + "\n" + p.str());
    EXPECT_FALSE(p.fallback);
    expect_consistent(p, NdSbp::parse(from), NdSbp::parse(to));
  }
  const BoxingPlan ar =
      plan({8, 12, 3}, m, "(P(sum), P(sum), P(sum))", "(B, B, B)", ClusterSpec::cpu_loopback(8));
  EXPECT_EQ(ar.num_communication_steps(), int(ar.steps.size()));
}

TEST(Boxing, MixedPartialOpsReduceInnermostFirst) {
  const BoxingPlan p = plan({4, 4}, mesh2x2(), "(P(sum), P(max))", "(B, B)");
  ASSERT_EQ(p.steps.size(), 2u) << p.str();
  EXPECT_EQ(p.steps[0].op, PartialOp::kMax);
  EXPECT_EQ(p.steps[0].mesh_axes, std::vector<int64_t>{1});
}

TEST(Boxing, PlanCacheHitsOnSecondCall) {
  PlanCache cache(kCpu4);
  const Placement p = line(4);
  auto a = cache.get({8, 8}, DType::kFloat32, p, NdSbp::parse("S(0)"), p, NdSbp::parse("B"));
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), 0);
  auto b = cache.get({8, 8}, DType::kFloat32, p, NdSbp::parse("S(0)"), p, NdSbp::parse("B"));
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(a.get(), b.get());
  // One search from S(0) settled its plan to S(1) too.
  cache.get({8, 8}, DType::kFloat32, p, NdSbp::parse("S(0)"), p, NdSbp::parse("S(1)"));
  EXPECT_EQ(cache.hits(), 2);
  cache.get({8, 8}, DType::kFloat16, p, NdSbp::parse("S(0)"), p, NdSbp::parse("B"));
  EXPECT_EQ(cache.misses(), 2);
}

// The cache keeps every plan one search settles: each is the plan a search for it alone finds,
// between any two layouts of a 2x2 mesh, partial sums and maxima included.
TEST(Boxing, PlanCacheGivesWhatEachSearchAloneFinds) {
  PlanCache cache(kCpu4);
  const Placement p = mesh2x2();
  const Shape shape{8, 6, 4};
  std::vector<NdSbp> layouts;
  for (const char* a : {"B", "S(0)", "S(1)", "S(2)", "P(sum)", "P(max)"})
    for (const char* b : {"B", "S(0)", "S(1)", "S(2)", "P(sum)", "P(max)"})
      layouts.push_back(NdSbp::parse(std::string("(") + a + ", " + b + ")"));
  for (const NdSbp& from : layouts)
    for (const NdSbp& to : layouts) {
      const BoxingPlan alone = plan_boxing(shape, DType::kFloat32, p, from, p, to, kCpu4);
      const auto cached = cache.get(shape, DType::kFloat32, p, from, p, to);
      EXPECT_EQ(cached->str(), alone.str()) << from.str() << " -> " << to.str();
    }
  EXPECT_GT(cache.hits(), cache.misses());
}

TEST(Boxing, PlanStrIsReadable) {
  const BoxingPlan p = plan({512, 512}, line(2), "S(0)", "B");
  EXPECT_EQ(p.steps[0].str(),
            "all_gather on mesh axis 0 (groups of 2), S(0) -> B, 1.0 MB/rank, 342.14 us");
  EXPECT_NE(p.str().find("boxing plan: 1 step"), std::string::npos) << p.str();
  const BoxingPlan m =
      plan({1024, 1024}, mesh2x2(), "(S(0), S(0))", "(B, B)", ClusterSpec::a100_nvlink(1, 4));
  EXPECT_NE(m.str().find("merged mesh axes 0+1 (groups of 4)"), std::string::npos) << m.str();
}

TEST(Boxing, FallbackIsLoudAndChains) {
  const Placement m = mesh2x2();
  const BoxingPlan f = fallback_plan({8, 8}, DType::kFloat32, m, NdSbp::parse("(S(0), P(sum))"), m,
                                     NdSbp::parse("(S(1), P(max))"), kCpu4, "test");
  EXPECT_TRUE(f.fallback);
  EXPECT_NE(f.str().find("FALLBACK"), std::string::npos);
  expect_consistent(f, NdSbp::parse("(S(0), P(sum))"), NdSbp::parse("(S(1), P(max))"));
}

TEST(Boxing, CrossPlacementIsOneSendRecvOfIntersections) {
  const Placement a(DeviceType::kCPU, {0, 1}, {2}), b(DeviceType::kCPU, {2, 3}, {2});
  const BoxingPlan p =
      plan_boxing({8, 8}, DType::kFloat32, a, NdSbp::parse("S(0)"), b, NdSbp::parse("S(0)"), kCpu4);
  expect_one(p, StepKind::kSendRecv);
  EXPECT_EQ(p.steps[0].bytes, 4 * 8 * 4);  // each target receives its half from one source
  // Partials are reduced on the source before slices move.
  const BoxingPlan q = plan_boxing({8, 8}, DType::kFloat32, a, NdSbp::parse("P(sum)"), b,
                                   NdSbp::parse("S(1)"), kCpu4);
  ASSERT_GE(q.steps.size(), 2u) << q.str();
  EXPECT_EQ(q.steps[0].kind, StepKind::kReduceScatter) << q.str();
  EXPECT_EQ(q.steps.back().kind, StepKind::kSendRecv) << q.str();
  // Overlapping placements read what they already hold locally.
  const Placement c(DeviceType::kCPU, {1, 2}, {2});
  const BoxingPlan r =
      plan_boxing({8, 8}, DType::kFloat32, a, NdSbp::parse("B"), c, NdSbp::parse("S(0)"), kCpu4);
  expect_one(r, StepKind::kSendRecv);
  EXPECT_EQ(r.steps[0].bytes, 4 * 8 * 4);  // rank 1 is local; rank 2 gets rows 4..8
}
