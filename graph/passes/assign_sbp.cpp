// SBP assignment: every global value gets a layout. Inputs and variables keep theirs (the
// user's annotations and the parameters' SBPs), boxing nodes' outputs are their targets (a move
// to another placement that names none keeps its input's), and
// every other op on global values takes the eager rule's choice (sbp/select.h) given its inputs'
// layouts, priced by the boxing planner. The auto-parallel planner replaces the default rule.
//
// What the graph adds to the eager rule: it knows who reads each value. A partial value read
// only by parameters' gradient reductions (fused into buckets), by graph outputs, or through
// ops that pass partial sums along to such readers owes no reduction of its own.
#include <limits>

#include "graph/node_call.h"
#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

// Whether an op passes P(sum) through from its input `v` (a view, a pad, a sum over axes; a sum
// of partial gradients, a gradient over a constant): its rule has v P(sum) -> out P(sum), every
// other input P(sum) too or broadcast.
bool passes_partial_sum(const Graph& g, const Node& n, int v) {
  if (n.kind != NodeKind::kOp || !n.op->sbp || n.outputs.size() != 1) return false;
  SbpQuery q;
  for (int id : n.inputs) {
    if (id < 0) return false;
    q.in.push_back(g.values()[size_t(id)].shape);
  }
  q.out = {g.values()[n.outputs[0]].shape};
  q.typed = &n.attrs;
  const Sbp psum = Sbp::partial(PartialOp::kSum);
  for (const SbpSignature& sig : n.op->sbp->signatures(q)) {
    bool ok = sig.out[0] == psum;
    for (size_t k = 0; k < n.inputs.size() && ok; ++k)
      ok =
          n.inputs[k] == v ? sig.in[k] == psum : sig.in[k] == psum || sig.in[k] == Sbp::broadcast();
    if (ok) return true;
  }
  return false;
}

// Values whose partial sums owe nothing where they are made (see above), by a sweep from the
// graph's end. A partial value is full-size on every rank, so one larger than the gradient it
// ends in (a batched weight gradient before its sum over the batch) is not taken as free: that
// would trade the eager rule's smaller shards for memory.
std::vector<bool> free_partials(const Graph& g) {
  const size_t nv = g.values().size();
  std::vector<std::vector<const Node*>> readers(nv);
  for (const Node& n : g.nodes())
    for (int id : n.inputs)
      if (id >= 0) readers[id].push_back(&n);
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  std::vector<bool> free(nv, false);
  std::vector<int64_t> limit(nv, kAny);  // the size of the smallest gradient a value ends in
  for (int id : g.outputs()) free[id] = true;
  for (size_t i = g.nodes().size(); i-- > 0;)
    for (int v : g.nodes()[i].outputs) {
      bool ok = free[v] || !readers[v].empty();
      for (const Node* r : readers[v]) {
        if (!ok) break;
        const int out = r->outputs[0];
        if (r->kind == NodeKind::kBoxing)
          ok = r->param_grad;
        else
          ok = passes_partial_sum(g, *r, v) && free[out];
        if (ok)
          limit[v] =
              std::min(limit[v],
                       r->kind == NodeKind::kBoxing ? numel_of(g.values()[out].shape) : limit[out]);
      }
      free[v] = ok && numel_of(g.values()[v].shape) <= limit[v];
    }
  return free;
}

// The layout a move to `placement` with no SBP named keeps: the value's own where the meshes have
// as many axes (a pipeline stage's input keeps its split), else replicated.
NdSbp kept_layout(const Value& from, const Placement& placement) {
  if (from.nd_sbp.size() == placement.mesh().size()) return from.nd_sbp;
  return NdSbp(std::vector<Sbp>(placement.mesh().size(), Sbp::broadcast()));
}

}  // namespace

Graph assign_sbp(const Graph& g, PlanCache& cache) {
  Graph out = g;
  std::vector<Value>& values = out.values();
  const std::vector<bool> free = free_partials(g);
  std::vector<bool> owes_nothing;
  for (Node& n : out.nodes()) {
    if (n.kind == NodeKind::kBoxing && values[n.outputs[0]].nd_sbp.empty()) {
      values[n.outputs[0]].nd_sbp =
          kept_layout(values[n.inputs[0]], *values[n.outputs[0]].placement);
      continue;
    }
    if (n.kind != NodeKind::kOp) continue;
    const std::optional<Placement> placement = placement_of(out, n);
    if (!placement) continue;
    NodeCall node_call(out, n, *placement, [&](size_t i) {
      const int id = n.inputs[i];
      if (values[size_t(id)].nd_sbp.empty())
        fail(n.name().c_str(), "input %", id, " has no SBP yet (the graph is out of order)");
      return &values[size_t(id)].nd_sbp;
    });
    SbpCall& call = node_call.call();
    owes_nothing.clear();
    for (int id : n.outputs) owes_nothing.push_back(free[size_t(id)]);
    call.owes_nothing = &owes_nothing;
    const SignatureChoice choice =
        select_signature(call, cache.cluster(),
                         [&](const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to) {
                           auto plan = cache.get(shape, dtype, *placement, from, *placement, to);
                           return Transition{plan->seconds, plan->num_communication_steps()};
                         });
    n.sig = choice.sig;
    for (size_t j = 0; j < n.outputs.size(); ++j) values[n.outputs[j]].nd_sbp = n.sig.out[j];
  }
  return out;
}

}  // namespace ofl::internal::graph
