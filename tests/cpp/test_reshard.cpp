// Executing boxing: ranks as threads with Gloo over an in-process store, CPU tensors. Every
// reshard is checked against the logical tensor: the target shard equals shard_of(full, target)
// when the target has no partials, and the whole tensor (to_full) equals full in every case.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "boxing/fused_collectives.h"
#include "boxing/reshard.h"
#include "gloo_test_util.h"
#include "sbp/cluster_spec.h"

using namespace ofl::internal;
using comm::Communicator;
using comm::testing::run_ranks;
using comm::testing::values;
using ofl::internal::testing::error_of;

namespace {

// A logical tensor of small integers (exact in every dtype) with negatives and repeats, so that
// sums, maxima and minima are all informative.
Tensor logical(const Shape& shape, DType dtype, int salt = 0) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<T>()[i] = static_cast<T>(static_cast<opmath_t<T>>((i * 7 + salt) % 13 - 6));
  });
  return t;
}

std::shared_ptr<Communicator> borrow(Communicator& c) {
  return std::shared_ptr<Communicator>(&c, [](Communicator*) {});
}

struct Rank {
  std::shared_ptr<Communicator> world;
  BoxingContext ctx;
  int rank;
  explicit Rank(Communicator& c) : world(borrow(c)), rank(c.rank()) {
    ctx.world = world;
    ctx.cache = std::make_shared<PlanCache>(ClusterSpec::cpu_loopback(c.size()));
  }
  // This rank's shard of `full` laid out by (p, nd); empty outside p.
  GlobalTensor global(const Tensor& full, const Placement& p, const NdSbp& nd) const {
    auto c = p.coords_of(rank);
    return GlobalTensor{c ? shard_of(full, p, nd, *c) : Tensor::empty({0}, full.dtype()),
                        full.shape(), p, nd};
  }
};

std::string describe(const Shape& shape, DType dtype, const Placement& from_p, const NdSbp& from,
                     const Placement& to_p, const NdSbp& to) {
  return str_cat(shape_str(shape), " ", dtype_name(dtype), " ", from.str(), " on ", from_p.str(),
                 " -> ", to.str(), " on ", to_p.str());
}

// Reshards full's (from_p, from) layout to (to_p, to) on this rank and checks the result.
void check_reshard(Rank& r, const Tensor& full, const Placement& from_p, const NdSbp& from,
                   const Placement& to_p, const NdSbp& to) {
  const std::string what = describe(full.shape(), full.dtype(), from_p, from, to_p, to);
  GlobalTensor y = reshard(r.global(full, from_p, from), to_p, to, r.ctx);
  EXPECT_EQ(y.shape, full.shape()) << what;
  EXPECT_EQ(y.nd_sbp, to) << what;
  EXPECT_EQ(y.local.dtype(), full.dtype()) << what;
  if (auto c = to_p.coords_of(r.rank)) {
    EXPECT_EQ(y.local.shape(), local_shape(full.shape(), to, to_p, *c)) << what;
    if (!to.any_partial() && y.local.shape() == local_shape(full.shape(), to, to_p, *c)) {
      EXPECT_EQ(values(y.local), values(shard_of(full, to_p, to, *c)))
          << what << " on rank " << r.rank;
    }
  } else {
    EXPECT_EQ(y.local.numel(), 0) << what << " on rank " << r.rank << " (outside)";
  }
  Tensor whole = to_full(y, r.ctx);
  EXPECT_EQ(whole.shape(), full.shape()) << what;
  if (whole.shape() == full.shape()) {
    EXPECT_EQ(values(whole), values(full)) << what << " (to_full) on rank " << r.rank;
  }
}

std::vector<NdSbp> one_d_sbps() {
  std::vector<NdSbp> out;
  for (const char* s : {"S(0)", "S(1)", "B", "P(sum)", "P(max)", "P(min)"})
    out.push_back(NdSbp::parse(s));
  return out;
}

// Every NdSbp of `axes` mesh axes over the given 1-d choices.
std::vector<NdSbp> products(const std::vector<std::string>& choices, int axes) {
  std::vector<NdSbp> out = {NdSbp()};
  for (int a = 0; a < axes; ++a) {
    std::vector<NdSbp> next;
    for (const NdSbp& prefix : out)
      for (const std::string& c : choices) {
        std::vector<Sbp> v = prefix.axes();
        v.push_back(Sbp::parse(c));
        next.push_back(NdSbp(v));
      }
    out = next;
  }
  return out;
}

void exhaustive_1d(int n) {
  const Placement p = Placement::all(DeviceType::kCPU, n);
  std::vector<Shape> shapes = {{4, 6}, {5, 3}};
  if (n >= 3) shapes.push_back({2, 3});
  run_ranks(n, [&](int, Communicator& c) {
    Rank r(c);
    for (DType dtype : {DType::kFloat32, DType::kInt64})
      for (const Shape& shape : shapes) {
        const Tensor full = logical(shape, dtype);
        for (const NdSbp& from : one_d_sbps())
          for (const NdSbp& to : one_d_sbps()) check_reshard(r, full, p, from, p, to);
      }
  });
}

TEST(ReshardSamePlacement, EveryOneDPairIsExactOnOneRank) {
  exhaustive_1d(1);
}
TEST(ReshardSamePlacement, OnOneDeviceNothingIsCommunicated) {
  // A one-device pipeline stage: its one shard is the whole tensor in every layout.
  run_ranks(1, [&](int, Communicator& c) {
    Rank r(c);
    std::vector<std::string> log;
    r.ctx.log = &log;
    const Placement p = Placement::all(DeviceType::kCPU, 1);
    for (const NdSbp& from : one_d_sbps())
      for (const NdSbp& to : one_d_sbps())
        check_reshard(r, logical({4, 6}, DType::kFloat32), p, from, p, to);
    const Tensor full = logical({4, 6}, DType::kFloat32);
    const std::vector<GlobalTensor> xs = {{full, {4, 6}, p, NdSbp::parse("P(sum)")}};
    const Tensor reduced = reduce_fused(xs, {NdSbp::parse("S(0)")}, {0}, r.ctx, 1 << 20)[0];
    const Tensor gathered = gather_fused(xs, {NdSbp::parse("B")}, {0}, r.ctx)[0];
    EXPECT_EQ(values(reduced), values(full));
    EXPECT_EQ(values(gathered), values(full));
    EXPECT_TRUE(log.empty()) << log.size() << " collectives, the first " << log[0];
  });
}
TEST(ReshardSamePlacement, EveryOneDPairIsExactOnTwoRanks) {
  exhaustive_1d(2);
}
TEST(ReshardSamePlacement, EveryOneDPairIsExactOnThreeRanksIncludingEmptyShards) {
  exhaustive_1d(3);
}
TEST(ReshardSamePlacement, EveryOneDPairIsExactOnFourRanksIncludingEmptyShards) {
  exhaustive_1d(4);
}

TEST(ReshardSamePlacement, EveryTwoByTwoPairOverSplitBroadcastPartialSumIsExact) {
  const Placement p(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
  const auto sbps = products({"S(0)", "S(1)", "B", "P(sum)"}, 2);
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}, Shape{3, 2}}) {
      const DType dtype = shape[0] == 5 ? DType::kInt64 : DType::kFloat32;
      const Tensor full = logical(shape, dtype);
      for (const NdSbp& from : sbps)
        for (const NdSbp& to : sbps) check_reshard(r, full, p, from, p, to);
    }
  });
}

TEST(ReshardSamePlacement, TwoByTwoPairsWithMaxAndMinPartialsAreExact) {
  const Placement p(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"(P(max), P(max))", "(S(0), S(1))"}, {"(P(min), S(0))", "(B, B)"},
      {"(S(1), P(max))", "(S(0), B)"},      {"(P(sum), P(max))", "(S(0), S(0))"},
      {"(P(max), P(sum))", "(B, S(1))"},    {"(S(0), S(0))", "(P(min), P(max))"},
      {"(B, B)", "(P(max), P(sum))"},       {"(P(min), P(min))", "(P(sum), S(1))"}};
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}})
      for (const auto& [from, to] : pairs)
        check_reshard(r, logical(shape, DType::kFloat32), p, NdSbp::parse(from), p,
                      NdSbp::parse(to));
  });
}

TEST(ReshardSamePlacement, TwoByTwoByTwoSamplesAreExact) {
  const Placement p(DeviceType::kCPU, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"(S(0), S(0), S(0))", "(B, B, B)"},
      {"(P(sum), P(sum), P(sum))", "(S(1), S(0), B)"},
      {"(S(0), S(1), P(sum))", "(S(1), S(0), S(0))"},
      {"(B, P(sum), S(0))", "(S(0), S(0), S(0))"},
      {"(S(1), B, S(0))", "(P(sum), S(1), B)"},
      {"(P(max), S(0), B)", "(B, S(1), S(1))"}};
  run_ranks(8, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{8, 4}, Shape{5, 3}})
      for (const auto& [from, to] : pairs)
        check_reshard(r, logical(shape, DType::kFloat32), p, NdSbp::parse(from), p,
                      NdSbp::parse(to));
  });
}

TEST(ReshardCrossPlacement, DisjointRankSetsMoveEveryLayout) {
  const Placement a(DeviceType::kCPU, {0, 1}, {2}), b(DeviceType::kCPU, {2, 3}, {2});
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}}) {
      const Tensor full = logical(shape, DType::kFloat32);
      for (const NdSbp& from : one_d_sbps())
        for (const NdSbp& to : one_d_sbps()) check_reshard(r, full, a, from, b, to);
    }
  });
}

TEST(ReshardCrossPlacement, OverlappingRankSetsMoveEveryLayout) {
  const Placement a(DeviceType::kCPU, {0, 1, 2}, {3}), b(DeviceType::kCPU, {1, 2, 3}, {3});
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}, Shape{2, 3}}) {
      const Tensor full = logical(shape, DType::kInt64);
      for (const NdSbp& from : one_d_sbps())
        for (const NdSbp& to : one_d_sbps()) check_reshard(r, full, a, from, b, to);
    }
  });
}

TEST(ReshardCrossPlacement, OneDMeshToTwoByTwoMeshAndBack) {
  const Placement line = Placement::all(DeviceType::kCPU, 4);
  const Placement square(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
  const Placement shuffled(DeviceType::kCPU, {3, 1, 2, 0}, {2, 2});
  const auto sbps2 = products({"S(0)", "S(1)", "B", "P(sum)"}, 2);
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}}) {
      const Tensor full = logical(shape, DType::kFloat32);
      for (const NdSbp& from : one_d_sbps())
        for (const NdSbp& to : sbps2) {
          check_reshard(r, full, line, from, square, to);
          check_reshard(r, full, square, to, line, from);
        }
    }
    // A permuted rank order on the same mesh shape: every 2-d pair, one uneven shape.
    const Tensor full = logical({5, 3}, DType::kInt64);
    for (const NdSbp& from : sbps2)
      for (const NdSbp& to : sbps2) check_reshard(r, full, square, from, shuffled, to);
  });
}

// Reshards `from` -> B on 2 ranks and checks the log holds exactly one collective with `prefix`.
void expect_one_collective(const char* from, const std::string& prefix) {
  const Placement p = Placement::all(DeviceType::kCPU, 2);
  run_ranks(2, [&](int, Communicator& c) {
    Rank r(c);
    std::vector<std::string> log;
    r.ctx.log = &log;
    const Tensor full = logical({4, 6}, DType::kFloat32);
    reshard(r.global(full, p, NdSbp::parse(from)), p, NdSbp::parse("B"), r.ctx);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].rfind(prefix, 0), 0u) << log[0];
  });
}

TEST(ReshardLog, SplitToBroadcastIsExactlyOneAllGather) {
  expect_one_collective("S(0)", "all_gather group[0,1]");
}

TEST(ReshardLog, PartialToBroadcastIsExactlyOneAllReduce) {
  expect_one_collective("P(sum)", "all_reduce(sum) group[0,1]");
}

TEST(ReshardMakeGlobal, DerivesTheLogicalShapeFromUnevenShards) {
  const Placement line = Placement::all(DeviceType::kCPU, 3);
  const Placement square(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
  run_ranks(4, [&](int, Communicator& c) {
    Rank r(c);
    const Tensor full = logical({5, 7}, DType::kFloat32);
    for (const char* s : {"S(0)", "S(1)", "B", "P(sum)"}) {
      const NdSbp nd = NdSbp::parse(s);
      GlobalTensor g = make_global(r.global(full, line, nd).local, line, nd, r.ctx, true);
      EXPECT_EQ(g.shape, (Shape{5, 7})) << s;
      if (r.rank == 3) {
        EXPECT_EQ(g.local.numel(), 0);
      }
    }
    for (const char* s : {"(S(0), S(1))", "(S(0), S(0))", "(S(1), B)", "(P(sum), S(0))"}) {
      const NdSbp nd = NdSbp::parse(s);
      GlobalTensor g = make_global(r.global(full, square, nd).local, square, nd, r.ctx, true);
      EXPECT_EQ(g.shape, (Shape{5, 7})) << s;
      EXPECT_EQ(values(to_full(g, r.ctx)), values(full)) << s;
    }
  });
}

TEST(ReshardMakeGlobal, DisagreeingShapesRaiseOnEveryRank) {
  const Placement p = Placement::all(DeviceType::kCPU, 2);
  run_ranks(2, [&](int rank, Communicator& c) {
    Rank r(c);
    const Tensor local = logical({2, rank == 0 ? 3 : 2}, DType::kFloat32);
    const std::string msg =
        error_of([&] { make_global(local, p, NdSbp::parse("S(0)"), r.ctx, true); });
    EXPECT_NE(msg.find("[to_global] ranks disagree on the global tensor: rank 0 has (4, 3) "
                       "float32 S(0) on cpu[0, 1], rank 1 has (4, 2) float32 S(0) on cpu[0, 1]"),
              std::string::npos)
        << msg;
  });
}

TEST(ReshardMakeGlobal, DisagreeingSbpsRaiseOnEveryRank) {
  const Placement p = Placement::all(DeviceType::kCPU, 3);
  run_ranks(3, [&](int rank, Communicator& c) {
    Rank r(c);
    const NdSbp nd = NdSbp::parse(rank == 2 ? "B" : "S(0)");
    const std::string msg = error_of([&] {
      make_global(logical({2, 3}, DType::kInt64), p, nd, r.ctx, true);
    });
    EXPECT_NE(msg.find("ranks disagree"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 2 has"), std::string::npos) << msg;
  });
}

TEST(ReshardMakeGlobal, UnbalancedShardsRaiseOnEveryRank) {
  const Placement p = Placement::all(DeviceType::kCPU, 2);
  run_ranks(2, [&](int rank, Communicator& c) {
    Rank r(c);
    const Tensor local = logical({rank == 0 ? 1 : 3, 2}, DType::kFloat32);
    const std::string msg =
        error_of([&] { make_global(local, p, NdSbp::parse("S(0)"), r.ctx, true); });
    EXPECT_NE(msg.find("rank 0 holds a local tensor of shape (1, 2)"), std::string::npos) << msg;
  });
}

TEST(ReshardPlanCache, RepeatedReshardHitsTheCache) {
  const Placement p = Placement::all(DeviceType::kCPU, 2);
  run_ranks(2, [&](int, Communicator& c) {
    Rank r(c);
    const Tensor full = logical({4, 6}, DType::kFloat32);
    for (int i = 0; i < 3; ++i)
      reshard(r.global(full, p, NdSbp::parse("S(0)")), p, NdSbp::parse("S(1)"), r.ctx);
    EXPECT_EQ(r.ctx.cache->misses(), 1);
    EXPECT_EQ(r.ctx.cache->hits(), 2);
  });
}

}  // namespace
