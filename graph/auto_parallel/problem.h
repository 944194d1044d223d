// The auto-parallel planner's problem as data (DESIGN.md, "The planner"): groups of exclusive
// choices (an op's signatures, a parameter's layouts), each choice with a cost in seconds and the
// memory it puts on every device; edges between two groups with a cost for every pair of their
// choices (the boxing of a value from its producer's layout to its reader's); a per-device memory
// budget. A plan picks one choice per group, minimising the total cost within the budget.
//
// solve() is exact: an integer program through CBC (COIN-OR). brute_force() enumerates every plan,
// for tests on small problems.
#pragma once
#include <limits>
#include <string>
#include <vector>

namespace ofl::internal::auto_parallel {

struct Group {
  std::string name;
  std::vector<double> cost;    // seconds, per choice (infinity: it cannot be taken)
  std::vector<double> memory;  // bytes per device, per choice (empty: none)
};

struct Edge {
  int from, to;  // group indices
  // Seconds, row-major: [choice of from][choice of to] (infinity: the pair cannot be taken).
  std::vector<double> cost;
};

struct Problem {
  std::vector<Group> groups;
  std::vector<Edge> edges;
  double memory_budget = std::numeric_limits<double>::infinity();  // bytes per device
};

struct Solution {
  std::vector<int> choice;  // per group
  double cost = 0;
  double memory = 0;
  double bound = 0;  // no plan costs less: cost itself, but for the largest problems (solve())
  // Plans within the budget that cost more and take less memory, on the lower convex hull of the
  // plans' (memory, cost), heaviest first: what a binding budget on a large problem found on the
  // way (solve()), for a caller whose real limit is not this budget (a pipeline's stage).
  std::vector<std::vector<int>> lighter;
};

// The cost and memory of a plan (raises for a malformed problem or plan).
double cost_of(const Problem& p, const std::vector<int>& choice);
double memory_of(const Problem& p, const std::vector<int>& choice);
// The least memory any plan needs: the sum of each group's smallest.
double min_memory(const Problem& p);
// "80000000000 bytes": a memory figure as errors give it (whole bytes, never 8e+10).
std::string bytes_str(double bytes);

// The cheapest plan within the budget. Raises naming the budget and the least memory any plan
// needs when none fits. Smaller problems are solved exactly. Integer programs of over 20,000
// columns (2-d meshes at scale) stop once the plan is proven within 0.1% of the optimum or after
// 50 branch-and-bound nodes; over 2,000 with a binding budget, the plan comes from linear
// relaxations with the budget imposed and priced (no branching), stopping within 0.5% of the
// bound where they reach it. Either way `bound` says what was proved.
Solution solve(const Problem& p);
// The same by enumerating every plan (exponential: for tests).
Solution brute_force(const Problem& p);

}  // namespace ofl::internal::auto_parallel
