// Early small collectives: a conversion that communicates, of a small value computed by a few
// nodes from the graph's inputs and variables (the count of a loss's targets, which its mean
// divides by), moves up with those nodes to where their inputs are ready, so that on the
// communication thread it overlaps the compute before it instead of stalling the forward.
#include <algorithm>
#include <set>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

bool communicates(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::kBoxing) return false;
  const Value &from = g.values()[n.inputs[0]], &to = g.values()[n.outputs[0]];
  if (!from.is_global()) return false;
  for (size_t k = 0; k < to.nd_sbp.size(); ++k) {
    const Sbp &a = from.nd_sbp[k], &b = to.nd_sbp[k];
    // Only B -> S, B -> P and S -> S of the same axis are local.
    if (a != b && !a.is_broadcast()) return true;
  }
  return from.placement != to.placement;
}

bool moves_input(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::kBoxing) return false;
  const std::vector<int>& inputs = g.inputs();
  const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
  return std::find(inputs.begin(), inputs.end(), n.inputs[0]) != inputs.end() && from.is_global() &&
         to.is_global() && *from.placement != *to.placement;
}

}  // namespace

Graph hoist_collectives(const Graph& g, int64_t max_bytes, size_t max_nodes) {
  const std::vector<Node>& nodes = g.nodes();
  const size_t n = nodes.size();
  std::vector<int> producer(g.values().size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (int id : nodes[i].outputs) producer[id] = int(i);
  // Each node's predecessors: the producers of its inputs, the writes in place into memory it
  // touches and, for a write in place, every earlier node touching that memory; random nodes
  // keep their order.
  const std::vector<int> owner = memory_owner(g);
  std::vector<std::vector<int>> preds(n);
  std::vector<std::vector<int>> touched(g.values().size());  // owner -> nodes, in order
  int last_random = -1;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    for (int id : node.inputs)
      if (id >= 0 && producer[id] >= 0) preds[i].push_back(producer[id]);
    std::set<int> owners;
    for (int id : node.inputs)
      if (id >= 0) owners.insert(owner[id]);
    for (int id : node.outputs) owners.insert(owner[id]);
    for (int m : owners) {
      for (int t : touched[m])
        if (writes_in_place(nodes[size_t(t)]) || writes_in_place(node)) preds[i].push_back(t);
      touched[m].push_back(int(i));
    }
    if (node.random_counters) {
      if (last_random >= 0) preds[i].push_back(last_random);
      last_random = int(i);
    }
  }

  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  // Moves of the graph's inputs onto other placements that start the graph stay first, in their
  // order (a pipeline's inputs going to their stages, the first stage's first): a hoisted cone
  // goes after them, even one that needs one of them.
  size_t lead = 0;
  while (lead < n && moves_input(g, nodes[lead])) ++lead;
  for (size_t t = 0; t < n; ++t) {
    if (!communicates(g, nodes[t])) continue;
    const Value& v = g.values()[nodes[t].inputs[0]];
    if (numel_of(v.shape) * int64_t(itemsize(v.dtype)) > max_bytes) continue;
    // The cone: the target and its ancestors among the nodes.
    std::set<int> cone{int(t)};
    std::vector<int> todo{int(t)};
    while (!todo.empty() && cone.size() <= max_nodes + 1) {
      const int x = todo.back();
      todo.pop_back();
      for (int p : preds[size_t(x)])
        if (cone.insert(p).second) todo.push_back(p);
    }
    if (cone.size() > max_nodes + 1) continue;
    // The cone has no predecessors outside itself: it moves, in its order, to the graph's start.
    std::vector<size_t> moved;
    auto moves = [&](size_t x) { return x >= lead && cone.count(int(x)) > 0; };
    for (size_t x : order)
      if (moves(x)) moved.push_back(x);
    order.erase(std::remove_if(order.begin(), order.end(), moves), order.end());
    order.insert(order.begin() + ptrdiff_t(lead), moved.begin(), moved.end());
  }
  Graph out = g.without_nodes();
  for (size_t i : order) out.add_node(nodes[i]);
  return out;
}

}  // namespace ofl::internal::graph
