#include "graph/node_call.h"

namespace ofl::internal::graph {

std::optional<Placement> placement_of(const Graph& g, const Node& n) {
  for (int id : n.inputs)
    if (id >= 0 && g.values()[size_t(id)].is_global()) return g.values()[size_t(id)].placement;
  return std::nullopt;
}

NodeCall::NodeCall(const Graph& g, const Node& n, const Placement& placement,
                   const std::function<const NdSbp*(size_t input)>& layout)
    : placement_(placement),
      call_{.def = n.op,
            .in = {},
            .out_shapes = &out_shapes_,
            .out_dtype = g.values()[size_t(n.outputs[0])].dtype,
            .placement = &placement_,
            .inplace = n.op->inplace,
            .attrs = &n.attrs} {
  for (int id : n.outputs) out_shapes_.push_back(g.values()[size_t(id)].shape);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    CallInput& in = call_.in.emplace_back();
    const int id = n.inputs[i];
    if (id < 0) continue;
    const Value& v = g.values()[size_t(id)];
    in.shape = &v.shape;
    in.dtype = v.dtype;
    if (v.is_global()) in.layout = layout(i);
  }
}

}  // namespace ofl::internal::graph
