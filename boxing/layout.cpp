#include "boxing/layout.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace ofl::internal {

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Sizes of a balanced split of n nested over `parts` in order (row-major), as runs of (size,
// count): a split of m into p gives m / p + 1 to the first m % p pieces and m / p to the rest
// (split_range). Runs, not every piece: a simulated mesh splits into a thousand.
std::vector<std::pair<int64_t, int64_t>> nested_sizes(int64_t n,
                                                      const std::vector<int64_t>& parts) {
  std::vector<std::pair<int64_t, int64_t>> runs = {{n, 1}};
  for (int64_t p : parts) {
    std::vector<std::pair<int64_t, int64_t>> next;
    auto add = [&](int64_t size, int64_t count) {
      if (count == 0) return;
      if (!next.empty() && next.back().first == size)
        next.back().second += count;
      else
        next.emplace_back(size, count);
    };
    for (auto [m, c] : runs) {
      if (m % p == 0) {
        add(m / p, p * c);
        continue;
      }
      for (int64_t k = 0; k < c; ++k) {
        add(m / p + 1, m % p);
        add(m / p, p - m % p);
      }
    }
    runs = std::move(next);
  }
  return runs;
}
}  // namespace

int64_t max_local_numel(const Shape& shape, const NdSbp& nd_sbp, const Placement& placement) {
  Shape local = shape;
  for (size_t k = 0; k < nd_sbp.size(); ++k)
    if (nd_sbp[k].is_split()) {
      int64_t& n = local[size_t(nd_sbp[k].axis())];
      n = ceil_div(n, placement.mesh()[k]);
    }
  return numel_of(local);
}

std::vector<std::vector<int>> mesh_groups(const Placement& placement,
                                          const std::vector<int64_t>& axes) {
  const Shape& mesh = placement.mesh();
  int64_t group_size = 1;
  for (int64_t a : axes) group_size *= mesh[size_t(a)];
  std::vector<std::vector<int>> groups(size_t(placement.size() / group_size),
                                       std::vector<int>(size_t(group_size)));
  std::vector<int64_t> coords(mesh.size(), 0);
  for (int64_t flat = 0; flat < placement.size(); ++flat) {
    int64_t rem = flat;
    for (size_t d = mesh.size(); d-- > 0;) {
      coords[d] = rem % mesh[d];
      rem /= mesh[d];
    }
    int64_t inside = 0, outside = 0;
    for (size_t d = 0; d < mesh.size(); ++d) {
      const bool in = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
      (in ? inside : outside) = (in ? inside : outside) * mesh[d] + coords[d];
    }
    groups[size_t(outside)][size_t(inside)] = placement.ranks()[size_t(flat)];
  }
  return groups;
}

bool transition_is_exact(const Shape& shape, const Placement& placement, const NdSbp& state,
                         const std::vector<int64_t>& axes, const Sbp& from, const Sbp& to) {
  const size_t first = size_t(axes.front()), last = size_t(axes.back());
  std::set<int64_t> touched;
  for (const Sbp* s : {&from, &to})
    if (s->is_split()) touched.insert(s->axis());
  for (size_t j = last + 1; j < state.size(); ++j) {
    if (state[j].is_split() && touched.count(state[j].axis())) return false;
    if (from.is_partial() && from != to && state[j].is_partial() && state[j].op() != from.op())
      return false;
  }
  if (axes.size() == 1) return true;
  std::vector<int64_t> parts;
  int64_t flat = 1;
  for (int64_t a : axes) {
    parts.push_back(placement.mesh()[size_t(a)]);
    flat *= parts.back();
  }
  for (int64_t d : touched) {
    // Lengths of tensor axis d the merged group sees after the outer mesh axes' splits.
    std::set<int64_t> lengths = {shape[size_t(d)]};
    for (size_t j = 0; j < first; ++j) {
      if (!state[j].is_split() || state[j].axis() != d) continue;
      // n in p pieces: n / p each, one more for the first n % p (split_range).
      std::set<int64_t> next;
      const int64_t p = placement.mesh()[j];
      for (int64_t n : lengths) {
        next.insert(n / p);
        if (n % p != 0) next.insert(n / p + 1);
      }
      lengths = next;
    }
    for (int64_t n : lengths)
      if (nested_sizes(n, parts) != nested_sizes(n, {flat})) return false;
  }
  return true;
}

}  // namespace ofl::internal
