#include <algorithm>
#include <vector>

#include "graph/passes/passes.h"

namespace ofl::graph {

namespace {

// A node with effects beyond its outputs.
bool has_effects(const Graph& g, const Node& n) {
  if (n.random_counters) return true;
  if (!n.op->inplace || n.inputs.empty() || n.inputs[0] < 0) return false;
  const int self = n.inputs[0];
  const auto& in = g.inputs();
  if (std::find(in.begin(), in.end(), self) != in.end()) return true;
  for (const Variable& v : g.variables())
    if (v.value == self) return true;
  return false;
}

}  // namespace

Graph dead_code(const Graph& g) {
  std::vector<bool> live(g.values().size(), false);
  for (int id : g.outputs()) live[id] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    keep[i] = has_effects(g, n) ||
              std::any_of(n.outputs.begin(), n.outputs.end(), [&](int id) { return live[id]; });
    if (!keep[i]) continue;
    for (int id : n.inputs)
      if (id >= 0) live[id] = true;
  }
  Graph out = g.without_nodes();
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (keep[i]) out.add_node(g.nodes()[i]);
  return out;
}

}  // namespace ofl::graph
