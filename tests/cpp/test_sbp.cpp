// Tier (a): Sbp / NdSbp / Placement values, balanced splits and local shard shapes.
#include <gtest/gtest.h>

#include <unordered_set>

#include "sbp/placement.h"
#include "sbp/sbp.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

Placement mesh_2x2() {
  return Placement(DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
}

// The local shape of every rank of a 2x2 mesh, in rank order.
std::vector<Shape> shapes_on_2x2(const Shape& shape, const std::string& sbp) {
  Placement p = mesh_2x2();
  std::vector<Shape> out;
  for (int r = 0; r < 4; ++r)
    out.push_back(local_shape(shape, NdSbp::parse(sbp), p, *p.coords_of(r)));
  return out;
}

}  // namespace

TEST(Sbp, ParsePrintsBackCanonically) {
  EXPECT_EQ(Sbp::parse("S(0)"), Sbp::split(0));
  EXPECT_EQ(Sbp::parse("S(12)").axis(), 12);
  EXPECT_EQ(Sbp::parse("B"), Sbp::broadcast());
  EXPECT_EQ(Sbp::parse("P"), Sbp::partial(PartialOp::kSum));
  EXPECT_EQ(Sbp::parse("P(sum)"), Sbp::partial());
  EXPECT_EQ(Sbp::parse("P(max)"), Sbp::partial(PartialOp::kMax));
  EXPECT_EQ(Sbp::parse("P(min)").op(), PartialOp::kMin);
  EXPECT_EQ(Sbp::parse("  S ( 3 ) ").str(), "S(3)");
  EXPECT_EQ(Sbp::parse(" P( max ) ").str(), "P(max)");
  for (const char* s : {"S(0)", "S(7)", "B", "P(sum)", "P(max)", "P(min)"})
    EXPECT_EQ(Sbp::parse(s).str(), s);
  EXPECT_EQ(Sbp::parse("P").str(), "P(sum)");
}

TEST(Sbp, KindsAndAccessors) {
  Sbp s = Sbp::split(1), b = Sbp::broadcast(), p = Sbp::partial(PartialOp::kMax);
  EXPECT_TRUE(s.is_split() && !s.is_broadcast() && !s.is_partial());
  EXPECT_TRUE(b.is_broadcast() && b.kind() == Sbp::Kind::kBroadcast);
  EXPECT_TRUE(p.is_partial() && p.op() == PartialOp::kMax);
  EXPECT_EQ(std::string(partial_op_name(PartialOp::kMin)), "min");
  EXPECT_NE(error_of([&] { b.axis(); }).find("[sbp] B has no split axis"), std::string::npos);
  EXPECT_NE(error_of([&] { s.op(); }).find("[sbp] S(1) has no partial op"), std::string::npos);
  EXPECT_NE(error_of([] { Sbp::split(-1); }).find("non-negative"), std::string::npos);
}

TEST(Sbp, BadTextNamesTheInputAndTheForms) {
  for (const char* s : {"S(-1)", "S", "S()", "S(a)", "Q", "", "P(avg)", "B(0)", "S(0) B", "s(0)"})
    EXPECT_EQ(
        error_of([&] { Sbp::parse(s); }),
        std::string("[sbp] cannot parse '") + s + "' (expected S(i), B, P(sum), P(max) or P(min))")
        << s;
}

TEST(Sbp, EqualityAndHashWorkInUnorderedSet) {
  std::unordered_set<Sbp> set;
  for (const char* s : {"S(0)", "S(1)", "B", "P(sum)", "P(max)", "P(min)", "S(0)", "P", "B"})
    set.insert(Sbp::parse(s));
  EXPECT_EQ(set.size(), 6u);
  EXPECT_NE(Sbp::split(0), Sbp::split(1));
  EXPECT_NE(Sbp::partial(PartialOp::kSum), Sbp::partial(PartialOp::kMax));
  EXPECT_NE(Sbp::split(0), Sbp::broadcast());
  EXPECT_EQ(Sbp::split(2).hash(), Sbp::parse("S(2)").hash());

  std::unordered_set<NdSbp> nd;
  for (const char* s : {"(S(0), B)", "[S(0), B]", "(B, S(0))", "S(0)", "(S(0))", "(S(0), S(0))"})
    nd.insert(NdSbp::parse(s));
  EXPECT_EQ(nd.size(), 4u);
}

TEST(NdSbp, ParsesTuplesListsAndSingles) {
  NdSbp a = NdSbp::parse("(S(0), B)");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], Sbp::split(0));
  EXPECT_EQ(a[1], Sbp::broadcast());
  EXPECT_EQ(NdSbp::parse("[S(0), B]"), a);
  EXPECT_EQ(NdSbp::parse(" ( S(0) ,B ) "), a);
  EXPECT_EQ(NdSbp::parse("S(1)"), NdSbp({Sbp::split(1)}));
  EXPECT_EQ(NdSbp::parse("P").str(), "P(sum)");
  EXPECT_EQ(NdSbp::parse("(S(1), P, P(min))").str(), "(S(1), P(sum), P(min))");
  for (const char* s : {"S(0)", "B", "(S(0), B)", "(P(max), S(1), B)", "(B, B)"})
    EXPECT_EQ(NdSbp::parse(s).str(), s);
  EXPECT_EQ(NdSbp::parse("[S(0)]").str(), "S(0)");
  EXPECT_TRUE(NdSbp::parse("(B, B)").all_broadcast());
  EXPECT_FALSE(NdSbp::parse("(B, S(0))").all_broadcast());
  EXPECT_TRUE(NdSbp::parse("(B, P(max))").any_partial());
  EXPECT_FALSE(NdSbp::parse("(B, S(0))").any_partial());
}

TEST(NdSbp, BadTextNamesTheWholeInput) {
  for (const char* s : {"(S(0), B]", "(S(0),)", "()", "(S(0) B)", "[S(0), X]", "(S(0), B) B"})
    EXPECT_EQ(
        error_of([&] { NdSbp::parse(s); }),
        std::string("[sbp] cannot parse '") + s + "' (expected S(i), B, P(sum), P(max) or P(min))")
        << s;
}

TEST(SplitRange, EvenAndUnevenAreBalancedAndContiguous) {
  EXPECT_EQ(split_range(8, 4, 2), std::make_pair(int64_t{4}, int64_t{6}));
  EXPECT_EQ(split_range(10, 4, 0), std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(split_range(10, 4, 1), std::make_pair(int64_t{3}, int64_t{6}));
  EXPECT_EQ(split_range(10, 4, 2), std::make_pair(int64_t{6}, int64_t{8}));
  EXPECT_EQ(split_range(10, 4, 3), std::make_pair(int64_t{8}, int64_t{10}));
  for (int64_t n = 0; n <= 13; ++n)
    for (int64_t parts = 1; parts <= 6; ++parts) {
      int64_t next = 0;
      for (int64_t r = 0; r < parts; ++r) {
        auto [b, e] = split_range(n, parts, r);
        EXPECT_EQ(b, next) << n << "/" << parts << " rank " << r;
        EXPECT_EQ(e - b, n / parts + (r < n % parts ? 1 : 0));
        next = e;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(SplitRange, MorePartsThanElementsLeavesTrailingRanksEmpty) {
  EXPECT_EQ(split_range(2, 4, 0), std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(split_range(2, 4, 1), std::make_pair(int64_t{1}, int64_t{2}));
  EXPECT_EQ(split_range(2, 4, 2), std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(split_range(2, 4, 3), std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_NE(error_of([] { split_range(4, 0, 0); }).find("[split_range]"), std::string::npos);
  EXPECT_NE(error_of([] { split_range(4, 2, 2); }).find("[split_range]"), std::string::npos);
}

TEST(Placement, RejectsRepeatedNegativeAndMisshapedRanks) {
  EXPECT_EQ(error_of([] {
              Placement(DeviceType::kCPU, {0, 1, 1}, {3});
            }),
            "[placement] rank 1 appears twice in cpu ranks [0, 1, 1]");
  EXPECT_EQ(error_of([] {
              Placement(DeviceType::kCUDA, {0, -2}, {2});
            }),
            "[placement] rank -2 is negative in cuda ranks [0, -2]");
  EXPECT_EQ(error_of([] {
              Placement(DeviceType::kCPU, {0, 1, 2}, {2, 2});
            }),
            "[placement] mesh (2, 2) holds 4 ranks but cpu ranks [0, 1, 2] are 3");
  EXPECT_NE(error_of([] { Placement(DeviceType::kCPU, {}, {0}); }).find("at least one rank"),
            std::string::npos);
  EXPECT_NE(error_of([] { Placement(DeviceType::kCPU, {0}, {}); }).find("no axes"),
            std::string::npos);
  EXPECT_NE(error_of([] { Placement::all(DeviceType::kCPU, 0); }).find("world size"),
            std::string::npos);
}

TEST(Placement, OneDimensional) {
  Placement p = Placement::all(DeviceType::kCPU, 3);
  EXPECT_EQ(p.str(), "cpu[0, 1, 2]");
  EXPECT_EQ(p, Placement(DeviceType::kCPU, {0, 1, 2}, {3}));
  EXPECT_EQ(p.ndim(), 1);
  EXPECT_EQ(p.size(), 3);
  EXPECT_TRUE(p.contains(2));
  EXPECT_FALSE(p.contains(3));
  EXPECT_EQ(*p.coords_of(1), std::vector<int64_t>{1});
  EXPECT_FALSE(p.coords_of(5).has_value());
  EXPECT_EQ(p.rank_at({2}), 2);
  EXPECT_EQ(p.axis_group(1, 0), (std::vector<int>{0, 1, 2}));
  Placement q(DeviceType::kCUDA, {5, 3}, {2});
  EXPECT_EQ(q.str(), "cuda[5, 3]");
  EXPECT_EQ(*q.coords_of(3), std::vector<int64_t>{1});
  EXPECT_NE(p, Placement(DeviceType::kCUDA, {0, 1, 2}, {3}));
}

TEST(Placement, TwoByTwoIsRowMajor) {
  Placement p(DeviceType::kCPU, {4, 5, 6, 7}, {2, 2});
  EXPECT_EQ(p.str(), "cpu[[4, 5], [6, 7]]");
  EXPECT_EQ(*p.coords_of(5), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*p.coords_of(6), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.rank_at({1, 1}), 7);
  EXPECT_EQ(p.axis_group(5, 0), (std::vector<int>{5, 7}));
  EXPECT_EQ(p.axis_group(5, 1), (std::vector<int>{4, 5}));
  EXPECT_EQ(p.axis_group(6, 1), (std::vector<int>{6, 7}));
  EXPECT_NE(p, Placement(DeviceType::kCPU, {4, 5, 6, 7}, {4}));
  EXPECT_NE(error_of([&] { p.rank_at({2, 0}); }).find("outside mesh (2, 2)"), std::string::npos);
  EXPECT_NE(error_of([&] { p.axis_group(0, 0); }).find("rank 0 is not in cpu[[4, 5], [6, 7]]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.axis_group(4, 2); }).find("mesh axis 2 is out of range"),
            std::string::npos);
}

TEST(Placement, TwoByTwoByTwo) {
  std::vector<int> ranks(8);
  for (int i = 0; i < 8; ++i) ranks[i] = i;
  Placement p(DeviceType::kCPU, ranks, {2, 2, 2});
  EXPECT_EQ(p.str(), "cpu[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]");
  EXPECT_EQ(*p.coords_of(6), (std::vector<int64_t>{1, 1, 0}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p.rank_at(*p.coords_of(r)), r);
  EXPECT_EQ(p.axis_group(5, 0), (std::vector<int>{1, 5}));
  EXPECT_EQ(p.axis_group(5, 1), (std::vector<int>{5, 7}));
  EXPECT_EQ(p.axis_group(5, 2), (std::vector<int>{4, 5}));
}

TEST(Placement, EqualityAndHashWorkInUnorderedSet) {
  std::unordered_set<Placement> set;
  set.insert(mesh_2x2());
  set.insert(mesh_2x2());
  set.insert(Placement(DeviceType::kCPU, {0, 1, 2, 3}, {4}));
  set.insert(Placement(DeviceType::kCUDA, {0, 1, 2, 3}, {2, 2}));
  set.insert(Placement(DeviceType::kCPU, {1, 0, 2, 3}, {2, 2}));
  EXPECT_EQ(set.size(), 4u);
}

TEST(LocalShape, SplitTwoAxesOnTwoByTwo) {
  // Mesh axis 0 splits tensor axis 0 (5 -> 3, 2), mesh axis 1 splits tensor axis 1 (3 -> 2, 1).
  EXPECT_EQ(shapes_on_2x2({5, 3}, "(S(0), S(1))"),
            (std::vector<Shape>{{3, 2}, {3, 1}, {2, 2}, {2, 1}}));
  Placement p = mesh_2x2();
  auto r = local_ranges({5, 3}, NdSbp::parse("(S(0), S(1))"), p, {1, 1});
  EXPECT_EQ(r, (std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {2, 3}}));
}

TEST(LocalShape, SameAxisSplitTwiceNestsInMeshAxisOrder) {
  // 7 rows: mesh axis 0 gives [0,4) and [4,7); mesh axis 1 splits each again.
  EXPECT_EQ(shapes_on_2x2({7, 2}, "(S(0), S(0))"),
            (std::vector<Shape>{{2, 2}, {2, 2}, {2, 2}, {1, 2}}));
  Placement p = mesh_2x2();
  NdSbp sbp = NdSbp::parse("(S(0), S(0))");
  using R = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(local_ranges({7, 2}, sbp, p, {0, 0}), (R{{0, 2}, {0, 2}}));
  EXPECT_EQ(local_ranges({7, 2}, sbp, p, {0, 1}), (R{{2, 4}, {0, 2}}));
  EXPECT_EQ(local_ranges({7, 2}, sbp, p, {1, 0}), (R{{4, 6}, {0, 2}}));
  EXPECT_EQ(local_ranges({7, 2}, sbp, p, {1, 1}), (R{{6, 7}, {0, 2}}));
  // A split axis shorter than the mesh: trailing ranks hold empty shards.
  EXPECT_EQ(shapes_on_2x2({2, 3}, "(S(0), S(0))"),
            (std::vector<Shape>{{1, 3}, {0, 3}, {1, 3}, {0, 3}}));
  EXPECT_EQ(shapes_on_2x2({1, 3}, "(S(0), S(0))"),
            (std::vector<Shape>{{1, 3}, {0, 3}, {0, 3}, {0, 3}}));
}

TEST(LocalShape, BroadcastAndPartialHoldFullExtent) {
  EXPECT_EQ(shapes_on_2x2({5, 3}, "(B, P(sum))"), (std::vector<Shape>(4, Shape{5, 3})));
  EXPECT_EQ(shapes_on_2x2({5, 3}, "(B, S(1))"),
            (std::vector<Shape>{{5, 2}, {5, 1}, {5, 2}, {5, 1}}));
  EXPECT_EQ(shapes_on_2x2({}, "(B, P(max))"), (std::vector<Shape>(4, Shape{})));
}

TEST(ValidateSbp, NamesOpShapeSbpAndPlacement) {
  Placement p = mesh_2x2();
  EXPECT_EQ(error_of([&] {
              validate_sbp("to_global", {4, 3}, NdSbp::parse("(S(2), B)"), p);
            }),
            "[to_global] sbp (S(2), B) does not fit tensor of shape (4, 3) on placement "
            "cpu[[0, 1], [2, 3]]: split axis 2 is out of range for 2 dimensions");
  EXPECT_EQ(error_of([&] {
              validate_sbp("to_global", {4, 3}, NdSbp::parse("S(0)"), p);
            }),
            "[to_global] sbp S(0) does not fit tensor of shape (4, 3) on placement "
            "cpu[[0, 1], [2, 3]]: 1 sbp for a 2-d mesh");
  EXPECT_NO_THROW(validate_sbp("to_global", {4, 3}, NdSbp::parse("(S(1), S(0))"), p));
  EXPECT_NE(error_of([&] {
              local_shape({4}, NdSbp::parse("(B, S(1))"), p, {0, 0});
            }).find("[local_ranges] sbp (B, S(1))"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              local_shape({4}, NdSbp::parse("(B, B)"), p, {0, 2});
            }).find("outside mesh"),
            std::string::npos);
}
