// Parameter prefetch, ZeRO-3 style: a parameter's conversion (an all-gather of a split weight,
// say) is moved up to just before the node that reads the previous parameter's conversion, so
// that with collectives on their own thread it runs while that layer computes. A conversion
// never moves above a write in place into its parameter.
#include "graph/passes/passes.h"

namespace ofl::graph {

Graph prefetch_params(const Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<bool> is_variable(g.values().size(), false);
  for (const Variable& v : g.variables()) is_variable[v.value] = true;
  // The first reader of each value.
  std::vector<int> first_reader(g.values().size(), -1);
  for (size_t i = nodes.size(); i-- > 0;)
    for (int id : nodes[i].inputs)
      if (id >= 0) first_reader[id] = int(i);
  std::vector<std::vector<int>> before(nodes.size());  // nodes moved up to before node i
  std::vector<bool> moved(nodes.size(), false);
  int previous = -1;  // the last parameter conversion seen
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.kind != NodeKind::kBoxing || n.param_grad || !is_variable[n.inputs[0]] ||
        !g.values()[n.inputs[0]].is_global())
      continue;
    const int target = previous >= 0 ? first_reader[nodes[previous].outputs[0]] : -1;
    previous = int(i);
    if (target < 0 || target >= int(i)) continue;
    bool blocked = false;
    for (int k = target; k < int(i) && !blocked; ++k)
      blocked = writes_in_place(nodes[k]) && nodes[k].inputs[0] == n.inputs[0];
    if (blocked) continue;
    before[target].push_back(int(i));
    moved[i] = true;
  }
  Graph out = g.without_nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int m : before[i]) out.add_node(nodes[m]);
    if (!moved[i]) out.add_node(nodes[i]);
  }
  return out;
}

}  // namespace ofl::graph
