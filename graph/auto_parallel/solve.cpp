// The planner's integer program, solved by CBC. Binary x[g][i]: group g takes choice i, one per
// group. An edge (g, h) with pairwise costs C gets continuous y[i][j] whose row sums are x[g][i]
// and column sums x[h][j]: with x integral, y is the indicator of the chosen pair, so the
// objective sum(cost x) + sum(C y) is the plan's cost exactly, with no integer y. Choices an
// edge cannot tell apart share their y (see classes()).
#include <Cbc_C_Interface.h>
#include <CoinFinite.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "graph/auto_parallel/presolve.h"
#include "graph/auto_parallel/problem.h"

namespace ofl::internal::auto_parallel {

namespace {

void check(const Problem& p) {
  for (const Group& g : p.groups) {
    if (g.cost.empty()) fail("auto_parallel", "group ", g.name, " has no choice");
    if (!g.memory.empty() && g.memory.size() != g.cost.size())
      fail("auto_parallel", "group ", g.name, " has ", g.cost.size(), " costs but ",
           g.memory.size(), " memories");
  }
  for (const Edge& e : p.edges) {
    const int n = int(p.groups.size());
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.from == e.to)
      fail("auto_parallel", "an edge joins groups ", e.from, " and ", e.to, " of ", n);
    if (e.cost.size() != p.groups[size_t(e.from)].cost.size() * p.groups[size_t(e.to)].cost.size())
      fail("auto_parallel", "the edge from ", p.groups[size_t(e.from)].name, " to ",
           p.groups[size_t(e.to)].name, " has ", e.cost.size(), " costs");
  }
}

double mem(const Group& g, size_t i) {
  return g.memory.empty() ? 0 : g.memory[i];
}

[[noreturn]] void no_plan_at_all() {
  fail("auto_parallel", "no plan: every plan takes a pair of choices that cannot go together");
}

[[noreturn]] void no_plan_fits(const Problem& p) {
  fail("auto_parallel", "no plan fits the memory budget of ", bytes_str(p.memory_budget),
       " per device; the least any plan needs is ", bytes_str(min_memory(p)));
}

// A sparse matrix built by entries, handed to CBC column by column.
struct Columns {
  std::vector<std::vector<std::pair<int, double>>> entries;  // per column: (row, value)
  int add() {
    entries.emplace_back();
    return int(entries.size()) - 1;
  }
};

// Equal rows (or columns) of an edge's costs: choices of one group the edge cannot tell apart
// (ops giving the same output layout). Their pairs share one y, tied to the sum of their x: the
// same plans at the same cost with the same linear relaxation, in far fewer columns.
struct Classes {
  std::vector<int> of;        // per row: its class
  std::vector<size_t> first;  // per class: its first row
};

template <class At>
Classes classes(size_t rows, size_t columns, At at) {
  Classes c;
  std::map<std::vector<double>, int> seen;
  std::vector<double> row(columns);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < columns; ++j) row[j] = at(i, j);
    auto [it, fresh] = seen.try_emplace(row, int(c.first.size()));
    if (fresh) c.first.push_back(i);
    c.of.push_back(it->second);
  }
  return c;
}

}  // namespace

double cost_of(const Problem& p, const std::vector<int>& choice) {
  check(p);
  if (choice.size() != p.groups.size())
    fail("auto_parallel", "a plan of ", choice.size(), " choices for ", p.groups.size(), " groups");
  double c = 0;
  for (size_t g = 0; g < p.groups.size(); ++g) c += p.groups[g].cost.at(size_t(choice[g]));
  for (const Edge& e : p.edges)
    c += e.cost[size_t(choice[size_t(e.from)]) * p.groups[size_t(e.to)].cost.size() +
                size_t(choice[size_t(e.to)])];
  return c;
}

double memory_of(const Problem& p, const std::vector<int>& choice) {
  double m = 0;
  for (size_t g = 0; g < p.groups.size(); ++g) m += mem(p.groups[g], size_t(choice.at(g)));
  return m;
}

std::string bytes_str(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

double min_memory(const Problem& p) {
  double m = 0;
  for (const Group& g : p.groups)
    if (!g.memory.empty()) m += *std::min_element(g.memory.begin(), g.memory.end());
  return m;
}

Solution brute_force(const Problem& p) {
  check(p);
  std::vector<int> choice(p.groups.size(), 0);
  Solution best;
  bool found = false, any_finite = false;
  for (;;) {
    const double m = memory_of(p, choice);
    const double c = cost_of(p, choice);
    if (m <= p.memory_budget && std::isfinite(c)) {
      if (!found || c < best.cost) best = {choice, c, m, c};
      found = true;
    }
    any_finite = any_finite || std::isfinite(c);
    size_t g = 0;
    while (g < choice.size() && ++choice[g] == int(p.groups[g].cost.size())) choice[g++] = 0;
    if (g == choice.size()) break;
  }
  if (!any_finite) no_plan_at_all();
  if (!found) no_plan_fits(p);
  return best;
}

namespace {

// A plan within the budget, good if not optimal, for CBC to start from: from `choice` (the
// cheapest plan regardless of memory), the group whose lighter choice costs least per byte saved
// moves to it until the plan fits; then each group in turn takes a cheaper choice that still
// fits, until none does. Empty if no group can give up more bytes.
std::optional<std::vector<int>> fit_greedily(const Problem& p, std::vector<int> choice) {
  std::vector<std::vector<size_t>> edges_of(p.groups.size());
  for (size_t e = 0; e < p.edges.size(); ++e) {
    edges_of[size_t(p.edges[e].from)].push_back(e);
    edges_of[size_t(p.edges[e].to)].push_back(e);
  }
  // Group g's share of the plan's cost with choice c, the other groups as they are.
  auto local = [&](size_t g, int c) {
    double cost = p.groups[g].cost[size_t(c)];
    for (size_t e : edges_of[g]) {
      const Edge& edge = p.edges[e];
      const int a = int(g) == edge.from ? c : choice[size_t(edge.from)];
      const int b = int(g) == edge.to ? c : choice[size_t(edge.to)];
      cost += edge.cost[size_t(a) * p.groups[size_t(edge.to)].cost.size() + size_t(b)];
    }
    return cost;
  };
  double memory = memory_of(p, choice);
  while (memory > p.memory_budget) {
    double best = INFINITY;
    size_t best_group = 0;
    int best_choice = -1;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const double now = local(g, choice[g]);
      for (size_t c = 0; c < p.groups[g].cost.size(); ++c) {
        const double saved = mem(p.groups[g], size_t(choice[g])) - mem(p.groups[g], c);
        if (saved <= 0) continue;
        const double per_byte = (local(g, int(c)) - now) / saved;
        if (per_byte < best) best = per_byte, best_group = g, best_choice = int(c);
      }
    }
    if (best_choice < 0 || !std::isfinite(best)) return std::nullopt;
    memory -= mem(p.groups[best_group], size_t(choice[best_group])) -
              mem(p.groups[best_group], size_t(best_choice));
    choice[best_group] = best_choice;
  }
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const double now = local(g, choice[g]);
      for (size_t c = 0; c < p.groups[g].cost.size(); ++c) {
        const double grown = mem(p.groups[g], c) - mem(p.groups[g], size_t(choice[g]));
        if (memory + grown > p.memory_budget || !(local(g, int(c)) < now)) continue;
        memory += grown;
        choice[g] = int(c);
        improved = true;
        break;
      }
    }
  }
  return choice;
}

// Integer programs with more columns than these (2-d meshes at scale; a budget over a step's
// activations) stop once their plan is proven within kLargeGap of the optimum (kBudgetedGap with
// a budget): proving the last 0.1% of a memory knapsack can take CBC minutes.
constexpr int kExactColumns = 20000;
constexpr int kExactBudgetedColumns = 2000;
// Those stop after this many branch-and-bound nodes too, with the plan they have and the bound
// they proved (a budget over activations can leave a few percent to prove: 384 nodes, 19 s, for a
// plan CBC's first heuristic had already found).
constexpr int kMaxNodes = 50;
constexpr double kLargeGap = 1e-3;
// With a budget, the gap is 0.5%: closing GPT-3's budgeted stage (138k columns) from 0.4% to 0.1%
// took CBC 86 more nodes and 20 s and found no better plan.
constexpr double kBudgetedGap = 5e-3;

struct IlpResult {
  std::vector<int> choice;
  double bound;  // no plan costs less
};

// The integer program's optimal choices (from `start_plan`, a plan that fits, if given); empty
// when no plan fits.
std::optional<IlpResult> solve_ilp(const Problem& p, const std::vector<int>* start_plan = nullptr) {
  Columns cols;
  std::vector<double> obj;
  std::vector<int> forbidden;  // columns of choices or pairs that cost infinity: fixed at 0
  std::vector<double> row_lo, row_hi;
  auto add_row = [&](double lo, double hi) {
    row_lo.push_back(lo);
    row_hi.push_back(hi);
    return int(row_lo.size()) - 1;
  };
  // x: one per group and choice; each group takes exactly one.
  std::vector<std::vector<int>> x(p.groups.size());
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const int one = add_row(1, 1);
    for (size_t i = 0; i < p.groups[g].cost.size(); ++i) {
      x[g].push_back(cols.add());
      obj.push_back(p.groups[g].cost[i]);
      if (std::isinf(obj.back())) forbidden.push_back(x[g].back());
      cols.entries.back().push_back({one, 1.0});
    }
  }
  const int first_y = int(cols.entries.size());
  // y: one per edge and pair of classes, tied to the two groups' x by its row and column sums.
  for (const Edge& e : p.edges) {
    const size_t n = p.groups[size_t(e.from)].cost.size(), m = p.groups[size_t(e.to)].cost.size();
    const Classes row = classes(n, m, [&](size_t i, size_t j) { return e.cost[i * m + j]; });
    const Classes col = classes(m, n, [&](size_t j, size_t i) { return e.cost[i * m + j]; });
    std::vector<int> rows(row.first.size()), columns(col.first.size());
    for (int& r : rows) r = add_row(0, 0);
    for (int& c : columns) c = add_row(0, 0);
    for (size_t i = 0; i < n; ++i)
      cols.entries[size_t(x[size_t(e.from)][i])].push_back({rows[size_t(row.of[i])], -1.0});
    for (size_t j = 0; j < m; ++j)
      cols.entries[size_t(x[size_t(e.to)][j])].push_back({columns[size_t(col.of[j])], -1.0});
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t c = 0; c < columns.size(); ++c) {
        cols.add();
        obj.push_back(e.cost[row.first[r] * m + col.first[c]]);
        if (std::isinf(obj.back())) forbidden.push_back(int(obj.size()) - 1);
        cols.entries.back().push_back({rows[r], 1.0});
        cols.entries.back().push_back({columns[c], 1.0});
      }
  }
  if (std::isfinite(p.memory_budget)) {
    const int budget = add_row(-COIN_DBL_MAX, 1.0);  // in budgets: bytes would scale it badly
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t i = 0; i < p.groups[g].cost.size(); ++i)
        if (mem(p.groups[g], i) != 0)
          cols.entries[size_t(x[g][i])].push_back({budget, mem(p.groups[g], i) / p.memory_budget});
  }

  std::vector<int> start{0}, index;
  std::vector<double> value;
  for (auto& column : cols.entries) {
    std::sort(column.begin(), column.end());
    for (auto [row, v] : column) {
      index.push_back(row);
      value.push_back(v);
    }
    start.push_back(int(index.size()));
  }
  const int ncols = int(cols.entries.size()), nrows = int(row_lo.size());
  std::vector<double> col_lo(size_t(ncols), 0.0), col_hi(size_t(ncols), 1.0);
  for (int c : forbidden) col_hi[size_t(c)] = obj[size_t(c)] = 0;
  // CBC's solver driver keeps static state: one solve at a time in a process (plan_pipeline plans
  // stages on several threads; the problems are built in parallel, solved in turn).
  static std::mutex cbc;
  const std::lock_guard<std::mutex> one_at_a_time(cbc);
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), ncols, nrows, start.data(), index.data(), value.data(),
                  col_lo.data(), col_hi.data(), obj.data(), row_lo.data(), row_hi.data());
  for (int c = 0; c < first_y; ++c) Cbc_setInteger(model.get(), c);
  Cbc_setLogLevel(model.get(), 0);
  // Without a budget the linear relaxation is mostly integral, and on the largest problems the
  // start plan is within the gap already: CBC's presolve and integer preprocessing take seconds
  // and gain nothing (GPT-3's step: 6 s to plan with them off, 10 s on). With a budget on smaller
  // problems they pay for the branching (a 767-op step, variables budgeted: 0.45 s against 1.4 s).
  if (!std::isfinite(p.memory_budget) || ncols > kExactColumns) {
    Cbc_setParameter(model.get(), "presolve", "off");
    Cbc_setParameter(model.get(), "preprocess", "off");
  }
  std::vector<int> start_columns;
  if (start_plan) {
    Cbc_setParameter(model.get(), "feas", "off");  // the pump looks for a first plan
    for (size_t g = 0; g < p.groups.size(); ++g)
      start_columns.push_back(x[g][size_t((*start_plan)[g])]);
    const std::vector<double> ones(start_columns.size(), 1.0);
    Cbc_setMIPStartI(model.get(), int(start_columns.size()), start_columns.data(), ones.data());
  }
  const bool within_gap =
      ncols > (std::isfinite(p.memory_budget) ? kExactBudgetedColumns : kExactColumns);
  if (within_gap) {
    Cbc_setAllowableFractionGap(model.get(),
                                std::isfinite(p.memory_budget) ? kBudgetedGap : kLargeGap);
    // A node limit, not a time limit: every rank plans alone and must reach the same plan.
    Cbc_setMaximumNodes(model.get(), kMaxNodes);
    // No strong branching: on these linear programs (GPT-3's stage over 128 devices within a
    // budget: 138k columns) each strong-branching probe costs seconds; without it CBC dives to
    // a better plan in fewer seconds (0.4% from its bound in 9 s, against 5% in 41 s).
    Cbc_setParameter(model.get(), "strong", "0");
    Cbc_setParameter(model.get(), "trust", "0");
    // With a budget, no cuts either: on that stage they took the root from 5.6 to 9.1 s and left
    // its bound where the linear relaxation put it.
    if (std::isfinite(p.memory_budget)) Cbc_setParameter(model.get(), "cuts", "off");
  }
  Cbc_solve(model.get());
  if (Cbc_isProvenInfeasible(model.get())) return std::nullopt;
  const double* best = Cbc_bestSolution(model.get());
  const bool stopped = within_gap && Cbc_isNodeLimitReached(model.get()) && best;
  if (!Cbc_isProvenOptimal(model.get()) && !stopped)
    fail("auto_parallel", "CBC stopped without a plan (status ", Cbc_status(model.get()),
         ", secondary ", Cbc_secondaryStatus(model.get()), ")");
  const double* sol = best ? best : Cbc_getColSolution(model.get());
  std::vector<int> choice;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    int best = 0;
    for (size_t i = 1; i < x[g].size(); ++i)
      if (sol[x[g][i]] > sol[x[g][size_t(best)]]) best = int(i);
    choice.push_back(best);
  }
  // Proven optimal, the plan is its own bound; within the gap or stopped, CBC's bound (its root's
  // when the tree closed at once).
  const double bound =
      within_gap ? Cbc_getBestPossibleObjValue(model.get()) : Cbc_getObjValue(model.get());
  return IlpResult{std::move(choice), bound};
}

}  // namespace

Solution solve(const Problem& p) {
  check(p);
  if (min_memory(p) > p.memory_budget) no_plan_fits(p);
  const Reduction reduced(p);
  IlpResult rest{{}, 0};
  if (!reduced.rest().groups.empty()) {
    // The best plan regardless of memory is the answer if it fits; its linear relaxation is
    // mostly integral, so it is quick, where the budget's knapsack needs branching.
    Problem unbounded = reduced.rest();
    unbounded.memory_budget = INFINITY;
    std::optional<IlpResult> r = solve_ilp(unbounded);
    if (!r) no_plan_at_all();
    if (memory_of(reduced.rest(), r->choice) > reduced.rest().memory_budget) {
      const std::optional<std::vector<int>> start = fit_greedily(reduced.rest(), r->choice);
      r = solve_ilp(reduced.rest(), start ? &*start : nullptr);
      if (!r) no_plan_fits(p);
    }
    rest = std::move(*r);
  }
  Solution s;
  s.choice = reduced.expand(rest.choice);
  s.cost = cost_of(p, s.choice);
  if (!std::isfinite(s.cost)) no_plan_at_all();
  s.memory = memory_of(p, s.choice);
  // rest()'s cost differs from the plan's by a constant (groups folded into no neighbour).
  s.bound = s.cost;
  if (!reduced.rest().groups.empty())
    s.bound -= std::max(cost_of(reduced.rest(), rest.choice) - rest.bound, 0.0);
  return s;
}

}  // namespace ofl::internal::auto_parallel
