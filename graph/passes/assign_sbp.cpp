// SBP assignment: every global value gets a layout. Inputs and variables keep theirs (the
// user's annotations and the parameters' SBPs), boxing nodes' outputs are their targets, and
// every other op on global values takes the eager rule's choice (sbp/select.h) given its inputs'
// layouts, priced by the boxing planner. The auto-parallel planner replaces the default rule.
#include "graph/passes/passes.h"
#include "sbp/select.h"

namespace ofl::graph {

Graph assign_sbp(const Graph& g, PlanCache& cache) {
  Graph out = g;
  std::vector<Value>& values = out.values();
  for (Node& n : out.nodes()) {
    if (n.kind != NodeKind::kOp) continue;
    const Value* first = nullptr;
    for (int id : n.inputs)
      if (id >= 0 && values[id].is_global() && !first) first = &values[id];
    if (!first) continue;
    const Placement placement = *first->placement;
    std::vector<Shape> out_shapes;
    for (int id : n.outputs) out_shapes.push_back(values[id].shape);
    SbpCall call{.def = n.op,
                 .in = {},
                 .out_shapes = &out_shapes,
                 .out_dtype = values[n.outputs[0]].dtype,
                 .placement = &placement,
                 .inplace = n.op->inplace,
                 .attrs = &n.attrs};
    for (int id : n.inputs) {
      CallInput& in = call.in.emplace_back();
      if (id < 0) continue;
      in.shape = &values[id].shape;
      in.dtype = values[id].dtype;
      if (values[id].is_global()) {
        if (values[id].nd_sbp.empty())
          fail(n.name().c_str(), "input %", id, " has no SBP yet (the graph is out of order)");
        in.layout = &values[id].nd_sbp;
      }
    }
    const SignatureChoice choice =
        select_signature(call, cache.cluster(),
                         [&](const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to) {
                           auto plan = cache.get(shape, dtype, placement, from, placement, to);
                           return Transition{plan->seconds, plan->num_communication_steps()};
                         });
    n.sig = choice.sig;
    for (size_t j = 0; j < n.outputs.size(); ++j) values[n.outputs[j]].nd_sbp = n.sig.out[j];
  }
  return out;
}

}  // namespace ofl::graph
