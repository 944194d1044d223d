// The planner's integer program, solved by CBC. Binary x[g][i]: group g takes choice i, one per
// group. An edge (g, h) with pairwise costs C gets continuous y[i][j] whose row sums are x[g][i]
// and column sums x[h][j]: with x integral, y is the indicator of the chosen pair, so the
// objective sum(cost x) + sum(C y) is the plan's cost exactly, with no integer y. Choices an
// edge cannot tell apart share their y (see classes()).
#include <Cbc_C_Interface.h>
#include <CoinFinite.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "core/error.h"
#include "graph/auto_parallel/problem.h"
#include "graph/auto_parallel/reduce.h"

namespace ofl::auto_parallel {

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
  fail("auto_parallel", "no plan fits the memory budget of ", p.memory_budget,
       " bytes per device; the least any plan needs is ", min_memory(p), " bytes");
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
      if (!found || c < best.cost) best = {choice, c, m};
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

// The integer program's optimal choices; empty when no plan fits.
std::optional<std::vector<int>> solve_ilp(const Problem& p) {
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
    const int budget = add_row(-COIN_DBL_MAX, p.memory_budget);
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t i = 0; i < p.groups[g].cost.size(); ++i)
        if (mem(p.groups[g], i) != 0)
          cols.entries[size_t(x[g][i])].push_back({budget, mem(p.groups[g], i)});
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
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), ncols, nrows, start.data(), index.data(), value.data(),
                  col_lo.data(), col_hi.data(), obj.data(), row_lo.data(), row_hi.data());
  for (int c = 0; c < first_y; ++c) Cbc_setInteger(model.get(), c);
  Cbc_setLogLevel(model.get(), 0);
  // Without a budget the linear relaxation is mostly integral already: CBC's presolve and
  // integer preprocessing take seconds and gain nothing. With one they pay for the branching.
  if (!std::isfinite(p.memory_budget)) Cbc_setParameter(model.get(), "presolve", "off");
  if (!std::isfinite(p.memory_budget)) Cbc_setParameter(model.get(), "preprocess", "off");
  Cbc_solve(model.get());
  if (Cbc_isProvenInfeasible(model.get())) return std::nullopt;
  if (!Cbc_isProvenOptimal(model.get()))
    fail("auto_parallel", "CBC stopped without proving a plan optimal (status ",
         Cbc_status(model.get()), ", secondary ", Cbc_secondaryStatus(model.get()), ")");
  const double* sol = Cbc_getColSolution(model.get());
  std::vector<int> choice;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    int best = 0;
    for (size_t i = 1; i < x[g].size(); ++i)
      if (sol[x[g][i]] > sol[x[g][size_t(best)]]) best = int(i);
    choice.push_back(best);
  }
  return choice;
}

}  // namespace

Solution solve(const Problem& p) {
  check(p);
  if (min_memory(p) > p.memory_budget) no_plan_fits(p);
  const Reduction reduced(p);
  std::vector<int> rest;
  if (!reduced.rest().groups.empty()) {
    // The best plan regardless of memory is the answer if it fits; its linear relaxation is
    // mostly integral, so it is quick, where the budget's knapsack needs branching.
    Problem unbounded = reduced.rest();
    unbounded.memory_budget = INFINITY;
    std::optional<std::vector<int>> choice = solve_ilp(unbounded);
    if (!choice) no_plan_at_all();
    if (memory_of(reduced.rest(), *choice) > reduced.rest().memory_budget) {
      choice = solve_ilp(reduced.rest());
      if (!choice) no_plan_fits(p);
    }
    rest = std::move(*choice);
  }
  Solution s;
  s.choice = reduced.expand(rest);
  s.cost = cost_of(p, s.choice);
  if (!std::isfinite(s.cost)) no_plan_at_all();
  s.memory = memory_of(p, s.choice);
  return s;
}

}  // namespace ofl::auto_parallel
