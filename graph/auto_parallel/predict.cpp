#include "graph/auto_parallel/predict.h"

#include "sbp/select.h"

namespace ofl::auto_parallel {

using graph::NodeKind;
using graph::Value;

namespace {

// A fused bucket priced as one conversion of a flat tensor of all its members' elements: from
// the first member's layout to its target, on the bucket's mesh axes, with the split (if any)
// on the flat dimension.
double bucket_seconds(const graph::Graph& g, const graph::Node& n, PlanCache& cache) {
  int64_t elems = 0;
  for (int id : n.inputs) elems += numel_of(g.values()[size_t(id)].shape);
  const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
  auto flat = [](const NdSbp& s) {
    std::vector<Sbp> axes;
    for (const Sbp& a : s.axes()) axes.push_back(a.is_split() ? Sbp::split(0) : a);
    return NdSbp(std::move(axes));
  };
  return cache
      .get({elems}, from.dtype, *from.placement, flat(from.nd_sbp), *to.placement, flat(to.nd_sbp))
      ->seconds;
}

}  // namespace

Prediction predict(const graph::Graph& g, PlanCache& cache) {
  Prediction p;
  const ClusterSpec& cluster = cache.cluster();
  for (const graph::Node& n : g.nodes()) {
    if (n.kind == NodeKind::kReduce || n.kind == NodeKind::kGather) {
      p.comm_seconds += bucket_seconds(g, n, cache);
      continue;
    }
    if (n.kind == NodeKind::kBoxing) {
      const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
      if (from.is_global())
        p.comm_seconds +=
            cache
                .get(from.shape, from.dtype, *from.placement, from.nd_sbp, *to.placement, to.nd_sbp)
                ->seconds;
      continue;
    }
    if (!n.op->cost) continue;
    std::vector<Shape> in, out_shapes;
    for (int id : n.inputs) in.push_back(id < 0 ? Shape() : g.values()[size_t(id)].shape);
    for (int id : n.outputs) out_shapes.push_back(g.values()[size_t(id)].shape);
    const DType dtype = g.values()[size_t(n.outputs[0])].dtype;
    if (n.sig.in.empty()) {  // a local op: its whole tensors on every rank
      const OpCost c = n.op->cost(in, out_shapes[0], dtype);
      p.compute_seconds += cluster.compute(c.flops, c.bytes, dtype);
      continue;
    }
    const Placement& placement = *g.values()[size_t(n.outputs[0])].placement;
    SbpCall call{.def = n.op,
                 .in = {},
                 .out_shapes = &out_shapes,
                 .out_dtype = dtype,
                 .placement = &placement,
                 .attrs = &n.attrs};
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      CallInput& c = call.in.emplace_back();
      if (n.inputs[i] < 0) continue;
      c.shape = &g.values()[size_t(n.inputs[i])].shape;
      c.dtype = g.values()[size_t(n.inputs[i])].dtype;
      c.layout = &n.sig.in[i];
    }
    p.compute_seconds += compute_seconds(call, n.sig, cluster);
  }
  return p;
}

}  // namespace ofl::auto_parallel
