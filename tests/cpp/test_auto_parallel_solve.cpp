// The planner's solver on problems built by hand: exact, equal to enumerating every plan, on
// chains, branches, shared choices and memory budgets; clear errors when no plan fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/auto_parallel/presolve.h"
#include "graph/auto_parallel/problem.h"
#include "test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::auto_parallel;
using ofl::internal::testing::error_of;

namespace {

// Random costs and memories on a given shape of groups and edges.
Problem random_problem(std::mt19937& rng, const std::vector<int>& sizes,
                       const std::vector<std::pair<int, int>>& edges, bool with_memory) {
  std::uniform_real_distribution<double> cost(0.0, 10.0), bytes(1.0, 100.0);
  Problem p;
  for (size_t g = 0; g < sizes.size(); ++g) {
    Group group{"g" + std::to_string(g), {}, {}};
    for (int i = 0; i < sizes[g]; ++i) {
      group.cost.push_back(cost(rng));
      if (with_memory) group.memory.push_back(bytes(rng));
    }
    p.groups.push_back(std::move(group));
  }
  for (auto [a, b] : edges) {
    Edge e{a, b, {}};
    for (int i = 0; i < sizes[size_t(a)] * sizes[size_t(b)]; ++i) e.cost.push_back(cost(rng));
    p.edges.push_back(std::move(e));
  }
  return p;
}

// A chain of 64 groups of 20 choices, all holding memory (none folds): over 20,000 columns.
Problem chain_of_64(std::mt19937& rng) {
  std::vector<std::pair<int, int>> edges;
  for (int g = 0; g + 1 < 64; ++g) edges.emplace_back(g, g + 1);
  return random_problem(rng, std::vector<int>(64, 20), edges, true);
}

// A new last choice of group g: choice `like`'s costs and memory plus `extra`.
void add_choice_like(Problem& p, int g, size_t like, double extra) {
  Group& group = p.groups[size_t(g)];
  const size_t n = group.cost.size();
  group.cost.push_back(group.cost[like] + extra);
  if (!group.memory.empty()) group.memory.push_back(group.memory[like] + extra);
  for (Edge& e : p.edges) {
    if (e.from != g && e.to != g) continue;
    const size_t rows = p.groups[size_t(e.from)].cost.size() - (e.from == g);
    const size_t cols = p.groups[size_t(e.to)].cost.size() - (e.to == g);
    std::vector<double> c;
    for (size_t i = 0; i < rows + (e.from == g); ++i)
      for (size_t j = 0; j < cols + (e.to == g); ++j) {
        const size_t a = e.from == g && i == n ? like : i, b = e.to == g && j == n ? like : j;
        c.push_back(e.cost[a * cols + b] +
                    ((e.from == g && i == n) || (e.to == g && j == n) ? extra : 0));
      }
    e.cost = std::move(c);
  }
}

void expect_exact(const Problem& p) {
  const Solution want = brute_force(p), got = solve(p);
  EXPECT_NEAR(got.cost, want.cost, 1e-6 * (1 + want.cost));
  EXPECT_LE(got.memory, p.memory_budget);
  EXPECT_DOUBLE_EQ(got.cost, cost_of(p, got.choice));
  EXPECT_NEAR(got.bound, got.cost, 1e-6 * (1 + want.cost));  // small problems are proven exact
}

}  // namespace

TEST(AutoParallelSolve, EqualsBruteForceOnChainsBranchesAndSharedGroups) {
  std::mt19937 rng(7);
  const std::vector<std::pair<int, int>> chain{{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  // A residual block: 0 feeds 1 and 3, 1 -> 2 -> 3 (a branch that joins again).
  const std::vector<std::pair<int, int>> branch{{0, 1}, {1, 2}, {2, 3}, {0, 3}, {3, 4}};
  // One parameter's group read by three ops (a shared weight, e.g. tied embeddings).
  const std::vector<std::pair<int, int>> shared{{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}};
  for (int trial = 0; trial < 20; ++trial) {
    for (const auto* edges : {&chain, &branch, &shared}) {
      std::vector<int> sizes;
      for (int g = 0; g < 5; ++g) sizes.push_back(1 + int(rng() % 4));
      expect_exact(random_problem(rng, sizes, *edges, false));
    }
  }
}

TEST(AutoParallelSolve, HonoursTheMemoryBudgetExactly) {
  std::mt19937 rng(11);
  const std::vector<std::pair<int, int>> edges{{0, 1}, {1, 2}, {0, 2}, {2, 3}};
  for (int trial = 0; trial < 30; ++trial) {
    Problem p = random_problem(rng, {3, 2, 4, 3}, edges, true);
    const double lo = min_memory(p), hi = memory_of(p, brute_force(p).choice);
    // Budgets between the least any plan needs and what the unconstrained optimum uses.
    p.memory_budget = lo + (hi - lo) * double(trial % 5) / 5.0;
    expect_exact(p);
  }
}

TEST(AutoParallelSolve, FoldingGroupsIntoTheirNeighboursKeepsThePlanExact) {
  // Random graphs of 7 groups, edges in both directions and twice between a pair; memory on some
  // groups only (those never fold when a budget binds), budgets from the least to unbounded.
  std::mt19937 rng(23);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int> sizes;
    for (int g = 0; g < 7; ++g) sizes.push_back(1 + int(rng() % 3));
    std::vector<std::pair<int, int>> edges;
    for (int e = 0; e < 6 + trial % 6; ++e) {
      const int a = int(rng() % 7), b = int(rng() % 7);
      if (a != b) edges.emplace_back(a, b);
    }
    Problem p = random_problem(rng, sizes, edges, true);
    for (size_t g = 0; g < p.groups.size(); g += 2) p.groups[g].memory.clear();
    // Group 1 gets a copy of its choice 0 and one costing more everywhere: both are dropped.
    for (double extra : {0.0, 1.0}) add_choice_like(p, 1, 0, extra);
    const double lo = min_memory(p), hi = memory_of(p, brute_force(p).choice);
    if (trial % 4 != 3) p.memory_budget = lo + (hi - lo) * double(trial % 4) / 3.0;
    expect_exact(p);
  }
  // A chain of ops between two variables folds down to the variables alone.
  Problem chain = random_problem(rng, {3, 4, 4, 4, 3}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}, true);
  for (size_t g = 1; g < 4; ++g) chain.groups[g].memory.clear();
  chain.memory_budget = min_memory(chain) + 50;
  const Reduction reduced(chain);
  EXPECT_EQ(reduced.rest_groups(), (std::vector<int>{0, 4}));
  ASSERT_EQ(reduced.rest().edges.size(), 1u);
  expect_exact(chain);
  // A plan restricted to rest()'s groups (the variables 0 and 4) expands to as good a plan; a
  // plan taking a choice the reduction dropped (variable 0's costlier copy of its choice 0) has
  // no restriction.
  const std::vector<int> best = brute_force(chain).choice;
  const std::optional<std::vector<int>> kept = reduced.restrict(best);
  ASSERT_TRUE(kept.has_value());
  EXPECT_DOUBLE_EQ(cost_of(chain, reduced.expand(*kept)), cost_of(chain, best));
  add_choice_like(chain, 0, 0, 1.0);
  std::vector<int> dropped = best;
  dropped[0] = int(chain.groups[0].cost.size()) - 1;
  EXPECT_FALSE(Reduction(chain).restrict(dropped).has_value());
}

TEST(AutoParallelSolve, LargeBudgetedProblemsStopWithinHalfAPercentOfTheirProvenBound) {
  // A chain of 64 groups of 20 choices, all holding memory (none folds), a budget that binds:
  // over 2,000 pair columns, so the plan comes from relaxations and a neighbourhood search, within
  // 0.5% of the bound they prove, not to the last digit.
  std::mt19937 rng(31);
  Problem p = chain_of_64(rng);
  Problem unbounded = p;
  const double loose = memory_of(p, solve(unbounded).choice), least = min_memory(p);
  p.memory_budget = least + 0.5 * (loose - least);
  const Solution s = solve(p);
  EXPECT_LE(s.memory, p.memory_budget);
  EXPECT_DOUBLE_EQ(s.cost, cost_of(p, s.choice));
  EXPECT_LE(s.bound, s.cost);
  EXPECT_GE(s.bound, s.cost * (1 - 5e-3) - 1e-9) << s.cost;
}

TEST(AutoParallelSolve, ALargeBudgetedProblemAlsoGivesTheLighterPlansItFoundOnTheHull) {
  // The same chain within budgets from tight to loose: every lighter plan fits, costs more and
  // holds less than the plan chosen, heaviest first, and is priced as its choices say.
  std::mt19937 rng(37);
  Problem p = chain_of_64(rng);
  Problem unbounded = p;
  const double loose = memory_of(p, solve(unbounded).choice), least = min_memory(p);
  size_t found = 0;
  for (double f : {0.2, 0.5, 0.8}) {
    p.memory_budget = least + f * (loose - least);
    const Solution s = solve(p);
    double heavier = s.memory, dearer = s.cost;
    for (const std::vector<int>& l : s.lighter) {
      EXPECT_LT(memory_of(p, l), heavier);
      EXPECT_GT(cost_of(p, l), dearer);
      heavier = memory_of(p, l), dearer = cost_of(p, l);
    }
    found += s.lighter.size();
  }
  EXPECT_GT(found, 0u);
  // Within a budget the unbudgeted plan meets, there is nothing lighter to offer.
  p.memory_budget = loose;
  EXPECT_TRUE(solve(p).lighter.empty());
}

TEST(AutoParallelSolve, ALargeBudgetedProblemFitsAtTheLeastMemoryAndAroundForbiddenPairs) {
  // The chain again within just the least any plan needs (only the lightest choices fit), and
  // with one pair in twenty forbidden (infinite cost) within budgets above it: the plan fits,
  // takes no forbidden pair, and its bound is no more than its cost.
  std::mt19937 rng(41);
  Problem p = chain_of_64(rng);
  const auto fits = [](const Problem& q, const std::string& what) {
    const Solution s = solve(q);
    EXPECT_LE(s.memory, q.memory_budget) << what;
    EXPECT_TRUE(std::isfinite(s.cost)) << what;
    EXPECT_LE(s.bound, s.cost + 1e-9) << what;
  };
  const double least = min_memory(p);
  p.memory_budget = least;
  fits(p, "the least");
  for (Edge& e : p.edges)
    for (double& c : e.cost)
      if (rng() % 20 == 0) c = INFINITY;
  Problem unbounded = p;
  unbounded.memory_budget = INFINITY;
  const double loose = memory_of(p, solve(unbounded).choice);
  for (double f : {0.1, 0.3, 0.6}) {
    p.memory_budget = least + f * (loose - least);
    fits(p, "forbidden pairs, " + std::to_string(f));
  }
}

TEST(AutoParallelSolve, ABudgetNoPlanFitsRaisesWithTheLeastMemoryAnyPlanNeeds) {
  Problem p;
  p.groups.push_back({"w", {1.0, 2.0}, {100.0, 25.0}});
  p.groups.push_back({"x", {1.0, 3.0}, {50.0, 10.0}});
  p.memory_budget = 30;
  for (const std::string& msg : {error_of([&] { solve(p); }), error_of([&] { brute_force(p); })})
    EXPECT_NE(msg.find("no plan fits the memory budget of 30 bytes per device; the least any "
                       "plan needs is 35 bytes"),
              std::string::npos)
        << msg;
  p.memory_budget = 35;
  EXPECT_EQ(solve(p).choice, (std::vector<int>{1, 1}));
}

TEST(AutoParallelSolve, MalformedProblemsRaiseNamingTheGroup) {
  Problem p;
  p.groups.push_back({"matmul", {1.0, 2.0}, {}});
  p.groups.push_back({"weight", {}, {}});
  EXPECT_NE(error_of([&] { solve(p); }).find("group weight has no choice"), std::string::npos);
  p.groups[1].cost = {1.0};
  p.edges.push_back({0, 1, {1.0}});
  EXPECT_NE(error_of([&] { solve(p); }).find("the edge from matmul to weight has 1 costs"),
            std::string::npos);
}
