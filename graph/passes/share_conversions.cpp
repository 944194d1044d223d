// Shared conversions: a value converted into several layouts (a P(sum) gradient that one reader
// wants split by rows and another by columns) is converted once to B when that is cheaper under
// the cost model, and each reader's layout is then a local slice of it (B -> S communicates
// nothing). Where collectives cost mostly latency, one all-reduce beats two reduce-scatters.
#include <map>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

Graph share_conversions(const Graph& g, PlanCache& cache) {
  // The conversions of each value, by node index.
  std::map<int, std::vector<size_t>> conversions;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.kind == NodeKind::kBoxing && !n.param_grad && g.values()[n.inputs[0]].is_global() &&
        g.values()[n.outputs[0]].placement == g.values()[n.inputs[0]].placement)
      conversions[n.inputs[0]].push_back(i);
  }
  auto seconds = [&](const Value& v, const NdSbp& from, const NdSbp& to) {
    return cache.get(v.shape, v.dtype, *v.placement, from, *v.placement, to)->seconds;
  };
  Graph out = g;
  std::vector<std::vector<Node>> before(g.nodes().size());  // new nodes, by the node they precede
  for (const auto& [id, nodes] : conversions) {
    if (nodes.size() < 2) continue;
    const Value& v = g.values()[id];
    const NdSbp all_b(std::vector<Sbp>(v.nd_sbp.size(), Sbp::broadcast()));
    double apart = 0, shared = seconds(v, v.nd_sbp, all_b);
    bool distinct = false;
    for (size_t i : nodes) {
      const NdSbp& to = g.values()[g.nodes()[i].outputs[0]].nd_sbp;
      if (to.any_partial()) shared = apart = -1;  // B cannot give a partial value back
      if (shared < 0) break;
      distinct |= to != g.values()[g.nodes()[nodes[0]].outputs[0]].nd_sbp;
      apart += seconds(v, v.nd_sbp, to);
      shared += seconds(v, all_b, to);
    }
    if (shared < 0 || !distinct || shared >= apart) continue;
    Value b = v;
    b.nd_sbp = all_b;
    const int whole = out.add_value(std::move(b));
    Node first = boxing_node(id, whole);
    place_like(first, g.nodes()[nodes[0]]);
    before[nodes[0]].push_back(std::move(first));
    for (size_t i : nodes) out.nodes()[i].inputs[0] = whole;
  }
  Graph result = out.without_nodes();
  for (size_t i = 0; i < out.nodes().size(); ++i) {
    for (Node& n : before[i]) result.add_node(std::move(n));
    result.add_node(out.nodes()[i]);
  }
  return result;
}

}  // namespace ofl::internal::graph
