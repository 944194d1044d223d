#include <algorithm>
#include <vector>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

// Which values are the memory of an input or a variable: those, and the results of in-place
// writes into them (SSA gives each write a new value over the same memory).
std::vector<bool> external_memory(const Graph& g) {
  std::vector<bool> ext(g.values().size(), false);
  for (int id : g.inputs()) ext[id] = true;
  for (const Variable& v : g.variables()) ext[v.value] = true;
  for (const Node& n : g.nodes())
    if (writes_in_place(n) && ext[n.inputs[0]]) ext[n.outputs[0]] = true;
  return ext;
}

}  // namespace

Graph dead_code(const Graph& g) {
  const std::vector<bool> ext = external_memory(g);
  // Effects beyond a node's outputs: writes into memory the graph does not own, random draws.
  auto has_effects = [&](const Node& n) {
    return (n.random_counters && !n.replays_draws) || (writes_in_place(n) && ext[n.inputs[0]]);
  };
  std::vector<bool> live(g.values().size(), false);
  for (int id : g.outputs()) live[id] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    keep[i] = has_effects(n) ||
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

}  // namespace ofl::internal::graph
