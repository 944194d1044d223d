// The planner's integer program, solved by CBC. Binary x[g][i]: group g takes choice i, one per
// group. An edge (g, h) with pairwise costs C gets continuous y[i][j] whose row sums are x[g][i]
// and column sums x[h][j]: with x integral, y is the indicator of the chosen pair, so the
// objective sum(cost x) + sum(C y) is the plan's cost exactly, with no integer y. Choices an
// edge cannot tell apart share their y (see classes()).
// Over 600 lines: the integer program, its reductions and CBC's callbacks share one model of the
// problem.
#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>
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

// Group g's share of the cost of plan `choice` were it to take choice c, the others as they are.
class LocalCost {
 public:
  explicit LocalCost(const Problem& p) : p_(p), edges_of_(p.groups.size()) {
    for (size_t e = 0; e < p.edges.size(); ++e) {
      edges_of_[size_t(p.edges[e].from)].push_back(e);
      edges_of_[size_t(p.edges[e].to)].push_back(e);
    }
  }
  double operator()(const std::vector<int>& choice, size_t g, int c) const {
    double cost = p_.groups[g].cost[size_t(c)];
    for (size_t e : edges_of_[g]) {
      const Edge& edge = p_.edges[e];
      const int a = int(g) == edge.from ? c : choice[size_t(edge.from)];
      const int b = int(g) == edge.to ? c : choice[size_t(edge.to)];
      cost += edge.cost[size_t(a) * p_.groups[size_t(edge.to)].cost.size() + size_t(b)];
    }
    return cost;
  }

 private:
  const Problem& p_;
  std::vector<std::vector<size_t>> edges_of_;
};

// Each group in turn takes a cheaper choice that keeps the plan within the budget, until none
// does. `choice` fits already.
void improve_within_budget(const Problem& p, const LocalCost& local, std::vector<int>& choice) {
  double memory = memory_of(p, choice);
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const double now = local(choice, g, choice[g]);
      for (size_t c = 0; c < p.groups[g].cost.size(); ++c) {
        const double grown = mem(p.groups[g], c) - mem(p.groups[g], size_t(choice[g]));
        if (memory + grown > p.memory_budget || !(local(choice, g, int(c)) < now)) continue;
        memory += grown;
        choice[g] = int(c);
        improved = true;
        break;
      }
    }
  }
}

// A plan within the budget, good if not optimal, for CBC to start from: from `choice` (the
// cheapest plan regardless of memory), the group whose lighter choice costs least per byte saved
// moves to it until the plan fits; then improve_within_budget. Empty if no group can give up
// more bytes.
std::optional<std::vector<int>> fit_greedily(const Problem& p, std::vector<int> choice) {
  const LocalCost local(p);
  double memory = memory_of(p, choice);
  while (memory > p.memory_budget) {
    double best = INFINITY;
    size_t best_group = 0;
    int best_choice = -1;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const double now = local(choice, g, choice[g]);
      for (size_t c = 0; c < p.groups[g].cost.size(); ++c) {
        const double saved = mem(p.groups[g], size_t(choice[g])) - mem(p.groups[g], c);
        if (saved <= 0) continue;
        const double per_byte = (local(choice, g, int(c)) - now) / saved;
        if (per_byte < best) best = per_byte, best_group = g, best_choice = int(c);
      }
    }
    if (best_choice < 0 || !std::isfinite(best)) return std::nullopt;
    memory -= mem(p.groups[best_group], size_t(choice[best_group])) -
              mem(p.groups[best_group], size_t(best_choice));
    choice[best_group] = best_choice;
  }
  improve_within_budget(p, local, choice);
  return choice;
}

// Integer programs with more columns than these (2-d meshes at scale; a budget over a step's
// activations) stop once their plan is proven within kLargeGap of the optimum. With a budget,
// solve_by_pricing plans them, to within kBudgetedGap where it can (CBC, where no plan that fits
// is found to start from): proving the last 0.1% of a memory knapsack can take CBC minutes.
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
// How far from 0 or 1 a relaxation's choice may lie and count as integral (Clp's own primal
// tolerance is 1e-7).
constexpr double kIntegralTolerance = 1e-7;
// Prices solve_by_pricing tries at most (Table 1's stages take 2 to 8), and how far above the
// slope between two plans it sets the price.
constexpr int kPricingRounds = 30;
constexpr double kPriceNudge = 1e-6;
// search_between's branch-and-bound nodes at most: on Table 1's stages 50 took 2 to 5 s a
// program and gained nothing over 20 in the plans the pipeline chose.
constexpr int kNeighbourhoodNodes = 20;
// The lighter plans solve_by_pricing returns at most.
constexpr size_t kLighterPlans = 2;

struct IlpResult {
  std::vector<int> choice;
  double bound = 0;                       // no plan costs less
  int columns = 0;                        // the integer program's
  std::vector<std::vector<int>> lighter;  // Solution::lighter
};

// The integer program's optimal choices (from `start_plan`, a plan that fits, if given); empty
// when no plan fits. With `relaxation`, its linear relaxation alone, by Clp: each group's choice
// is the one the relaxation weighs most, and the bound is the relaxation's optimum.
std::optional<IlpResult> solve_ilp(const Problem& p, const std::vector<int>* start_plan = nullptr,
                                   bool relaxation = false, int max_nodes = kMaxNodes) {
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
  // Each group's choice: the one the solution weighs most.
  const auto choices = [&](const double* sol) {
    std::vector<int> choice;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      int best = 0;
      for (size_t i = 1; i < x[g].size(); ++i)
        if (sol[x[g][i]] > sol[x[g][size_t(best)]]) best = int(i);
      choice.push_back(best);
    }
    return choice;
  };
  // Without a budget, the linear relaxation first: where it is integral it is the plan, proven
  // optimal, and CBC (one solve at a time) is not needed; else its plan, improved group by group,
  // is CBC's start. On Korthikanti et al.'s 530B stages CBC's feasibility pump took 6 to 9 s to
  // find a first plan; Clp solves the relaxation in 0.4 s.
  std::vector<int> rounded;
  if (relaxation || (!std::isfinite(p.memory_budget) && !start_plan)) {
    // Clp alone, outside CBC's lock: relaxations run on every core.
    std::unique_ptr<Clp_Simplex, void (*)(Clp_Simplex*)> lp(Clp_newModel(), Clp_deleteModel);
    Clp_setLogLevel(lp.get(), 0);
    Clp_loadProblem(lp.get(), ncols, nrows, start.data(), index.data(), value.data(), col_lo.data(),
                    col_hi.data(), obj.data(), row_lo.data(), row_hi.data());
    Clp_dual(lp.get(), 0);
    if (Clp_isProvenPrimalInfeasible(lp.get())) return std::nullopt;
    if (!Clp_isProvenOptimal(lp.get()))
      fail("auto_parallel", "Clp stopped without solving a relaxation (status ",
           Clp_status(lp.get()), ")");
    const double* sol = Clp_getColSolution(lp.get());
    const bool integral = std::all_of(sol, sol + first_y, [](double v) {
      return std::abs(v - std::round(v)) <= kIntegralTolerance;
    });
    if (relaxation || integral)
      return IlpResult{choices(sol), Clp_objectiveValue(lp.get()), ncols, {}};
    rounded = choices(sol);
    improve_within_budget(p, LocalCost(p), rounded);
    if (std::isfinite(cost_of(p, rounded))) start_plan = &rounded;
  }
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
    Cbc_setMaximumNodes(model.get(), max_nodes);
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
  std::vector<int> choice = choices(best ? best : Cbc_getColSolution(model.get()));
  // Proven optimal, the plan is its own bound; within the gap or stopped, CBC's bound (its root's
  // when the tree closed at once).
  const double bound =
      within_gap ? Cbc_getBestPossibleObjValue(model.get()) : Cbc_getObjValue(model.get());
  return IlpResult{std::move(choice), bound, ncols};
}

// The best plan within the budget that keeps `plan`'s choice in every group where it agrees with
// all of `others` (RINS, relaxation-induced neighbourhood search): the groups where they differ
// form a small program of their own, the kept groups' costs and memory moved onto it, solved by
// CBC from `plan`. Empty if the others all agree with the plan.
std::optional<std::vector<int>> search_between(const Problem& p, const std::vector<int>& plan,
                                               const std::vector<const std::vector<int>*>& others) {
  std::vector<int> index(p.groups.size(), -1);  // the group's in the small program, or -1: kept
  Problem sub;
  std::vector<int> start;
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (const std::vector<int>* o : others)
      if ((*o)[g] != plan[g]) {
        index[g] = int(sub.groups.size());
        sub.groups.push_back(p.groups[g]);
        start.push_back(plan[g]);
        break;
      }
  if (sub.groups.empty()) return std::nullopt;
  sub.memory_budget = p.memory_budget;
  for (size_t g = 0; g < p.groups.size(); ++g)
    if (index[g] < 0) sub.memory_budget -= mem(p.groups[g], size_t(plan[g]));
  for (const Edge& e : p.edges) {
    const int a = index[size_t(e.from)], b = index[size_t(e.to)];
    const size_t m = p.groups[size_t(e.to)].cost.size();
    if (a >= 0 && b >= 0) {
      sub.edges.push_back({a, b, e.cost});
    } else if (a >= 0) {
      std::vector<double>& cost = sub.groups[size_t(a)].cost;
      for (size_t i = 0; i < cost.size(); ++i)
        cost[i] += e.cost[i * m + size_t(plan[size_t(e.to)])];
    } else if (b >= 0) {
      std::vector<double>& cost = sub.groups[size_t(b)].cost;
      for (size_t j = 0; j < cost.size(); ++j)
        cost[j] += e.cost[size_t(plan[size_t(e.from)]) * m + j];
    }
  }
  const std::optional<IlpResult> r = solve_ilp(sub, &start, false, kNeighbourhoodNodes);
  if (!r) return std::nullopt;
  std::vector<int> out = plan;
  for (size_t g = 0; g < p.groups.size(); ++g)
    if (index[g] >= 0) out[g] = r->choice[size_t(index[g])];
  return out;
}

// The linear relaxation of `p` (no budget) solved on its reduction, where every group meeting at
// most two others folds: its plan (each group's choice the relaxation weighs most, the folded
// groups' best beside them) and bound. On the BLOOM row's budgeted stages (85,000 columns before
// the fold) solve_by_pricing's rounds took 1.5 to 1.8 s so, 2.4 to 3 s unfolded.
std::optional<IlpResult> relax_reduced(const Problem& p) {
  const Reduction reduced(p);
  IlpResult r{{}, 0, 0};
  if (!reduced.rest().groups.empty()) {
    std::optional<IlpResult> s = solve_ilp(reduced.rest(), nullptr, true);
    if (!s) return std::nullopt;
    r = std::move(*s);
  }
  std::vector<int> choice = reduced.expand(r.choice);
  // The plan's cost and rest()'s differ by the same constant for every plan.
  r.bound += cost_of(p, choice) - cost_of(reduced.rest(), r.choice);
  r.choice = std::move(choice);
  return r;
}

// A plan within the budget for a large program, without branching: CBC's branch and bound on
// the budget's knapsack took 3 to 22 s a program on the 310.1B row's stages (77,000 columns) and
// often stopped at its node limit, up to 5% from its bound. Instead, from `fitting` (a plan
// within the budget) and `free_plan` (the cheapest regardless of memory, over it):
// - the budgeted program's linear relaxation, each group taking the choice it weighs most, fitted
//   greedily;
// - the budget priced instead of imposed (its Lagrangian): at lambda per budget's worth of bytes,
//   the relaxation of cost + lambda x memory / budget without a budget, rounded the same way and
//   improved group by group. Its plans lie on the lower convex hull of the plans' (memory, cost);
//   lambda is the slope between the two hull plans found nearest the budget on either side, so
//   each round finds a new hull plan between them or proves there is none. A plan just over the
//   budget is fitted greedily.
// Each relaxation bounds the plan: no plan within the budget costs less than its optimum (less
// lambda, priced). Stops once the best plan within the budget is within `gap` of the bound; if it
// never gets there, search_between the plans found (Table 1's stages: 0.3% to 1.7% from the
// bound, where pricing alone left 2.6%). Returns that plan, the bound, and the hull's plans
// within the budget that are lighter (Solution::lighter).
IlpResult solve_by_pricing(const Problem& p, const IlpResult& free_plan, std::vector<int> fitting,
                           double gap) {
  struct Point {
    std::vector<int> choice;
    double cost, memory;  // memory in budgets
  };
  const auto point = [&](std::vector<int> c) {
    const double cost = cost_of(p, c), memory = memory_of(p, c) / p.memory_budget;
    return Point{std::move(c), cost, memory};
  };
  // The hull's plans nearest the budget, over and within it, and the best plan that fits.
  Point over = point(free_plan.choice), within = point(std::move(fitting)), best = within;
  const auto fits = [&](Point q) {
    if (q.cost < best.cost) best = std::move(q);
  };
  double bound = free_plan.bound;  // lambda = 0
  // The budget's own relaxation, rounded and fitted.
  std::vector<int> relaxed = free_plan.choice;
  if (std::optional<IlpResult> r = solve_ilp(p, nullptr, true)) {
    bound = std::max(bound, r->bound);
    relaxed = r->choice;
    if (std::optional<std::vector<int>> fitted = fit_greedily(p, r->choice))
      fits(point(std::move(*fitted)));
  }
  Problem priced = p;
  priced.memory_budget = INFINITY;
  std::vector<std::vector<int>> seen;
  std::vector<Point> hull;  // hull plans within the budget before `within`, in the order found
  for (int round = 0; round < kPricingRounds && best.cost > bound * (1 + gap); ++round) {
    // Just above the slope between the two, so that the plan within the budget is the unique
    // cheapest of them (at the slope itself both are, and the linear program is degenerate).
    const double lambda =
        (within.cost - over.cost) / (over.memory - within.memory) * (1 + kPriceNudge);
    if (!(lambda > 0) || !std::isfinite(lambda)) break;
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t i = 0; i < p.groups[g].cost.size(); ++i)
        priced.groups[g].cost[i] =
            p.groups[g].cost[i] + lambda * mem(p.groups[g], i) / p.memory_budget;
    // The relaxation alone, its few fractional groups rounded and improved group by group: CBC's
    // root heuristics took 1 to 30 s on the degenerate relaxations near the budget's price.
    std::optional<IlpResult> r = relax_reduced(priced);
    if (!r) break;
    bound = std::max(bound, r->bound - lambda);
    improve_within_budget(priced, LocalCost(priced), r->choice);
    Point found = point(std::move(r->choice));
    seen.push_back(found.choice);
    // Cheaper at this price than both: a hull plan between them (else there is none).
    const auto at_price = [&](const Point& q) { return q.cost + lambda * q.memory; };
    const bool between =
        at_price(found) < std::min(at_price(over), at_price(within)) * (1 - kPriceNudge / 100);
    if (found.memory <= 1) {
      fits(found);
      if (between) hull.push_back(within), within = std::move(found);
    } else {
      // A plan just over the budget, fitted greedily, can beat the hull's plan within it.
      if (std::optional<std::vector<int>> fitted = fit_greedily(p, found.choice))
        fits(point(std::move(*fitted)));
      if (between) over = std::move(found);
    }
    if (!between) break;
  }
  improve_within_budget(p, LocalCost(p), best.choice);
  // Still short of the gap: the program over the groups where the plans found differ.
  if (best.cost > bound * (1 + gap)) {
    std::vector<const std::vector<int>*> others{&over.choice, &within.choice, &relaxed};
    for (const auto& c : seen) others.push_back(&c);
    if (std::optional<std::vector<int>> found = search_between(p, best.choice, others))
      fits(point(std::move(*found)));
  }
  // The hull's plans within the budget lighter than the best, heaviest first.
  IlpResult out{std::move(best.choice), bound, free_plan.columns, {}};
  hull.push_back(std::move(within));
  const double heaviest = memory_of(p, out.choice) / p.memory_budget;
  for (size_t k = hull.size(); k-- > 0 && out.lighter.size() < kLighterPlans;)
    if (hull[k].memory < heaviest && hull[k].cost > best.cost)
      out.lighter.push_back(std::move(hull[k].choice));
  return out;
}

// solve_ilp's columns for `p`: one per group's choice and one per pair of an edge's classes.
int columns_of(const Problem& p) {
  size_t n = 0;
  for (const Group& g : p.groups) n += g.cost.size();
  for (const Edge& e : p.edges) {
    const size_t a = p.groups[size_t(e.from)].cost.size(), b = p.groups[size_t(e.to)].cost.size();
    n += classes(a, b, [&](size_t i, size_t j) { return e.cost[i * b + j]; }).first.size() *
         classes(b, a, [&](size_t j, size_t i) { return e.cost[i * b + j]; }).first.size();
  }
  return int(n);
}

// The best plan of reduced.rest() regardless of memory. Under a budget, solved on `p` without it,
// which reduces further (no group's memory keeps it from folding), and restricted to rest()'s
// groups: on Korthikanti et al.'s 1T stages 1 s, where CBC took 8 to 20 s on the budgeted rest.
std::optional<IlpResult> solve_free(const Problem& p, const Reduction& reduced) {
  Problem unbounded = reduced.rest();
  unbounded.memory_budget = INFINITY;
  if (!std::isfinite(p.memory_budget)) return solve_ilp(unbounded);
  Problem free = p;
  free.memory_budget = INFINITY;
  const Reduction further(free);
  IlpResult r{{}, 0, columns_of(reduced.rest())};
  double slack = 0;  // how far the free plan may lie above its bound
  if (!further.rest().groups.empty()) {
    std::optional<IlpResult> s = solve_ilp(further.rest());
    if (!s) return std::nullopt;
    slack = std::max(cost_of(further.rest(), s->choice) - s->bound, 0.0);
    r.choice = std::move(s->choice);
  }
  std::optional<std::vector<int>> restricted = reduced.restrict(further.expand(r.choice));
  if (!restricted) return solve_ilp(unbounded);  // a choice the budget's reduction dropped
  r.choice = std::move(*restricted);
  r.bound = cost_of(unbounded, r.choice) - slack;
  return r;
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
    std::optional<IlpResult> r = solve_free(p, reduced);
    if (!r) no_plan_at_all();
    if (memory_of(reduced.rest(), r->choice) > reduced.rest().memory_budget) {
      const std::optional<std::vector<int>> start = fit_greedily(reduced.rest(), r->choice);
      if (start && r->columns > kExactBudgetedColumns)
        r = solve_by_pricing(reduced.rest(), *r, *start, kBudgetedGap);
      else
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
  for (const std::vector<int>& l : rest.lighter) s.lighter.push_back(reduced.expand(l));
  return s;
}

}  // namespace ofl::internal::auto_parallel
