#include <numeric>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

Graph drop_identity_views(const Graph& g) {
  std::vector<int> alias(g.values().size());  // the value each value's readers read
  std::iota(alias.begin(), alias.end(), 0);
  Graph out = g.without_nodes();
  for (Node n : g.nodes()) {
    for (int& id : n.inputs)
      if (id >= 0) id = alias[size_t(id)];
    if (n.kind == NodeKind::kOp && n.op->identity && n.outputs.size() == 1 && !n.inputs.empty() &&
        n.inputs[0] >= 0) {
      const Value &in = g.values()[size_t(n.inputs[0])], &v = g.values()[size_t(n.outputs[0])];
      if (in.dtype == v.dtype && in.device == v.device && in.placement == v.placement &&
          in.nd_sbp == v.nd_sbp && n.op->identity(n.attrs, in.shape, v.shape)) {
        alias[size_t(n.outputs[0])] = n.inputs[0];
        continue;
      }
    }
    out.add_node(std::move(n));
  }
  std::vector<int> outputs = g.outputs();
  for (int& id : outputs) id = alias[size_t(id)];
  out.set_outputs(std::move(outputs));
  return out;
}

}  // namespace ofl::internal::graph
