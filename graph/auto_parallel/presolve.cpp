#include "graph/auto_parallel/presolve.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace ofl::internal::auto_parallel {

namespace {

// A group's memory matters to the plan unless every choice takes the same.
bool memory_varies(const Group& g) {
  return !g.memory.empty() &&
         std::any_of(g.memory.begin(), g.memory.end(), [&](double m) { return m != g.memory[0]; });
}

}  // namespace

Reduction::Reduction(const Problem& p) : groups_(p.groups.size()) {
  const size_t n = p.groups.size();
  const bool budgeted = std::isfinite(p.memory_budget);
  std::vector<std::vector<double>> cost(n);
  std::vector<bool> foldable(n), alive(n, true);
  double fixed_memory = 0;  // of groups whose choices all take the same
  for (size_t g = 0; g < n; ++g) {
    cost[g] = p.groups[g].cost;
    foldable[g] = !budgeted || !memory_varies(p.groups[g]);
    if (budgeted && foldable[g] && !p.groups[g].memory.empty())
      fixed_memory += p.groups[g].memory[0];
  }
  const auto size = [&](int g) { return cost[size_t(g)].size(); };

  // One matrix per pair of groups, [choice of the lower index][choice of the higher].
  std::map<std::pair<int, int>, std::vector<double>> edges;
  std::vector<std::set<int>> adjacent(n);
  const auto matrix = [&](int a, int b) -> std::vector<double>& {
    auto [it, fresh] = edges.try_emplace({std::min(a, b), std::max(a, b)});
    if (fresh) {
      it->second.assign(size(a) * size(b), 0.0);
      adjacent[size_t(a)].insert(b);
      adjacent[size_t(b)].insert(a);
    }
    return it->second;
  };
  // The cost of the pair (a takes i, b takes j).
  const auto pair_cost = [&](int a, int b, size_t i, size_t j) {
    const std::vector<double>& m = edges.at({std::min(a, b), std::max(a, b)});
    return a < b ? m[i * size(b) + j] : m[j * size(a) + i];
  };
  for (const Edge& e : p.edges) {
    std::vector<double>& m = matrix(e.from, e.to);
    for (size_t i = 0; i < size(e.from); ++i)
      for (size_t j = 0; j < size(e.to); ++j) {
        const double c = e.cost[i * size(e.to) + j];
        m[e.from < e.to ? i * size(e.to) + j : j * size(e.from) + i] += c;
      }
  }

  // A choice no better than another of its group whatever the others take (its cost, memory and
  // every pair's cost at least as high) is dropped: some best plan avoids it.
  choices_.resize(n);
  std::vector<std::vector<double>> memory(n);
  for (size_t g = 0; g < n; ++g) {
    choices_[g].resize(size(int(g)));
    std::iota(choices_[g].begin(), choices_[g].end(), 0);
    if (budgeted && !foldable[g]) memory[g] = p.groups[g].memory;
    const std::vector<int> around(adjacent[g].begin(), adjacent[g].end());
    // Each neighbour's matrix, looked up once: (its costs, its choices, whether g is the rows).
    struct Side {
      const std::vector<double>* m;
      size_t n;
      bool rows;
    };
    std::vector<Side> sides;
    for (int h : around)
      sides.push_back({&edges.at({std::min(int(g), h), std::max(int(g), h)}), size(h), int(g) < h});
    const size_t ng = size(int(g));
    auto no_worse = [&](size_t a, size_t i) {
      if (cost[g][a] > cost[g][i]) return false;
      if (!memory[g].empty() && memory[g][a] > memory[g][i]) return false;
      for (const Side& h : sides) {
        const std::vector<double>& m = *h.m;
        for (size_t j = 0; j < h.n; ++j) {
          const size_t at_a = h.rows ? a * h.n + j : j * ng + a;
          const size_t at_i = h.rows ? i * h.n + j : j * ng + i;
          if (m[at_a] > m[at_i]) return false;
        }
      }
      return true;
    };
    // Between equal choices the first stays.
    std::vector<bool> stays(size(int(g)), true);
    std::vector<size_t> kept;
    for (size_t i = 0; i < size(int(g)); ++i) {
      for (size_t a = 0; a < size(int(g)) && stays[i]; ++a)
        if (a != i && no_worse(a, i) && (a < i ? stays[a] : !no_worse(i, a))) stays[i] = false;
      if (stays[i]) kept.push_back(i);
    }
    if (kept.size() == size(int(g))) continue;
    for (int h : around) {
      std::vector<double>& m = edges.at({std::min(int(g), h), std::max(int(g), h)});
      std::vector<double> pruned;
      const size_t nh = size(h);
      if (int(g) < h) {
        for (size_t i : kept)
          pruned.insert(pruned.end(), m.begin() + long(i * nh), m.begin() + long((i + 1) * nh));
      } else {
        for (size_t j = 0; j < nh; ++j)
          for (size_t i : kept) pruned.push_back(m[j * size(int(g)) + i]);
      }
      m = std::move(pruned);
    }
    std::vector<double> c, m;
    std::vector<int> original;
    for (size_t i : kept) {
      c.push_back(cost[g][i]);
      original.push_back(choices_[g][i]);
      if (!memory[g].empty()) m.push_back(memory[g][i]);
    }
    cost[g] = std::move(c);
    memory[g] = std::move(m);
    choices_[g] = std::move(original);
  }

  std::vector<int> queue;
  for (size_t g = 0; g < n; ++g)
    if (foldable[g]) queue.push_back(int(g));
  while (!queue.empty()) {
    const int g = queue.back();
    queue.pop_back();
    if (!alive[size_t(g)] || adjacent[size_t(g)].size() > 2) continue;
    Fold f{g};
    const std::vector<int> around(adjacent[size_t(g)].begin(), adjacent[size_t(g)].end());
    if (!around.empty()) f.a = around[0];
    if (around.size() == 2) f.b = around[1];
    const size_t na = f.a < 0 ? 1 : size(f.a), nb = f.b < 0 ? 1 : size(f.b);
    std::vector<double> folded(na * nb);
    f.nb = nb;
    f.best.resize(na * nb);
    // g's costs against each choice of a and of b, (choice of g) x (choice of the neighbour).
    const auto against = [&](int h) {
      std::vector<double> out(size(g) * size(h), 0.0);
      if (h >= 0)
        for (size_t i = 0; i < size(g); ++i)
          for (size_t j = 0; j < size(h); ++j) out[i * size(h) + j] = pair_cost(g, h, i, j);
      return out;
    };
    const std::vector<double> with_a = f.a >= 0 ? against(f.a) : std::vector<double>();
    const std::vector<double> with_b = f.b >= 0 ? against(f.b) : std::vector<double>();
    for (size_t j = 0; j < na; ++j)
      for (size_t l = 0; l < nb; ++l) {
        double best = INFINITY;
        for (size_t i = 0; i < size(g); ++i) {
          double c = cost[size_t(g)][i];
          if (f.a >= 0) c += with_a[i * na + j];
          if (f.b >= 0) c += with_b[i * nb + l];
          if (c < best) {
            best = c;
            f.best[j * nb + l] = int(i);
          }
        }
        folded[j * nb + l] = best;
      }
    for (int h : around) {
      edges.erase({std::min(g, h), std::max(g, h)});
      adjacent[size_t(h)].erase(g);
    }
    adjacent[size_t(g)].clear();
    alive[size_t(g)] = false;
    if (f.b >= 0) {  // a and b meet directly now (f.a < f.b: the matrix's orientation)
      std::vector<double>& m = matrix(f.a, f.b);
      for (size_t k = 0; k < m.size(); ++k) m[k] += folded[k];
    } else if (f.a >= 0) {
      for (size_t j = 0; j < na; ++j) cost[size_t(f.a)][j] += folded[j];
    }
    for (int h : around)
      if (foldable[size_t(h)]) queue.push_back(h);
    folds_.push_back(std::move(f));
  }

  std::vector<int> index(n, -1);
  for (size_t g = 0; g < n; ++g) {
    if (!alive[g]) continue;
    index[g] = int(kept_.size());
    kept_.push_back(int(g));
    Group group{p.groups[g].name, cost[g], {}};
    group.memory = memory[g];
    rest_.groups.push_back(std::move(group));
  }
  for (auto& [pair, m] : edges)
    rest_.edges.push_back({index[size_t(pair.first)], index[size_t(pair.second)], std::move(m)});
  rest_.memory_budget = p.memory_budget - fixed_memory;
}

std::vector<int> Reduction::expand(const std::vector<int>& rest_choice) const {
  std::vector<int> choice(groups_, -1);
  for (size_t k = 0; k < kept_.size(); ++k) choice[size_t(kept_[k])] = rest_choice.at(k);
  for (auto f = folds_.rbegin(); f != folds_.rend(); ++f) {
    const size_t j = f->a < 0 ? 0 : size_t(choice[size_t(f->a)]);
    const size_t l = f->b < 0 ? 0 : size_t(choice[size_t(f->b)]);
    choice[size_t(f->group)] = f->best[j * f->nb + l];
  }
  for (size_t g = 0; g < groups_; ++g) choice[g] = choices_[g][size_t(choice[g])];
  return choice;
}

std::optional<std::vector<int>> Reduction::restrict(const std::vector<int>& choice) const {
  std::vector<int> out;
  for (int g : kept_) {
    const std::vector<int>& kept = choices_[size_t(g)];
    const auto it = std::find(kept.begin(), kept.end(), choice.at(size_t(g)));
    if (it == kept.end()) return std::nullopt;
    out.push_back(int(it - kept.begin()));
  }
  return out;
}

}  // namespace ofl::internal::auto_parallel
