// Boxing insertion: every conversion between layouts becomes an explicit node. An op's global
// input laid out otherwise than its signature wants gets a boxing node into that layout (one per
// value and layout, reused by later readers until
// a write in place; a parameter's, once per phase); boxing nodes that convert nothing are dropped.
// An input the op streams (OpDef::streamed_inputs) stays as it is: its compute gathers it.
#include <map>
#include <tuple>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

Graph insert_boxing(const Graph& g) {
  Graph out = g.without_nodes();
  // Values over a variable's memory (a parameter or its views): their conversions are made once
  // per phase (forward, backward), so that gathered parameters are not held in between; the
  // micro-batches of a phase share its conversion (held from the first to the last).
  std::vector<bool> param_memory(g.values().size(), false);
  for (const Variable& v : g.variables()) param_memory[v.value] = true;
  for (const Node& n : g.nodes())
    if (n.kind == NodeKind::kOp && n.op->view && !n.inputs.empty() && n.inputs[0] >= 0)
      for (int id : n.outputs) param_memory[id] = param_memory[n.inputs[0]];
  // What each value id now stands for (a dropped boxing node's output is its input).
  std::vector<int> renamed(g.values().size());
  for (size_t v = 0; v < renamed.size(); ++v) renamed[v] = static_cast<int>(v);
  std::map<std::tuple<int, std::string, bool>, int> converted;  // (value, layout, phase) -> boxed
  auto same_layout = [](const Value& a, const Value& b) {
    return a.placement == b.placement && a.nd_sbp == b.nd_sbp;
  };
  for (Node n : g.nodes()) {
    for (int& id : n.inputs)
      if (id >= 0) id = renamed[id];
    if (n.kind == NodeKind::kBoxing &&
        same_layout(out.values()[n.inputs[0]], out.values()[n.outputs[0]])) {
      renamed[n.outputs[0]] = n.inputs[0];
      continue;
    }
    if (n.kind == NodeKind::kOp && !n.sig.in.empty()) {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const int id = n.inputs[i];
        if (id < 0 || !out.values()[id].is_global() || out.values()[id].nd_sbp == n.sig.in[i] ||
            !streamed_axes(*n.op, i, out.values()[id].nd_sbp, n.sig.in[i]).empty())
          continue;
        const bool phase = param_memory[id] && n.backward;
        auto [it, fresh] = converted.try_emplace({id, n.sig.in[i].str(), phase}, -1);
        if (fresh) {
          Value to = out.values()[id];
          to.nd_sbp = n.sig.in[i];
          it->second = out.add_value(std::move(to));
          Node box = boxing_node(id, it->second);
          place_like(box, n);
          out.add_node(std::move(box));
        }
        n.inputs[i] = it->second;
      }
    }
    // A write in place may change memory a converted copy was taken of: convert afresh after.
    if (writes_in_place(n)) converted.clear();
    out.add_node(std::move(n));
  }
  std::vector<int> outputs = g.outputs();
  for (int& id : outputs) id = renamed[id];
  out.set_outputs(std::move(outputs));
  return out;
}

}  // namespace ofl::internal::graph
