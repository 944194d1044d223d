#include "graph/auto_parallel/predict.h"

#include <algorithm>

#include "graph/node_call.h"

namespace ofl::internal::auto_parallel {

using graph::NodeCall;
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
  // The two threads' clocks, and when each value a collective makes is ready.
  double compute_clock = 0, comm_clock = 0;
  std::vector<double> ready(g.values().size(), 0.0);
  p.node_seconds.reserve(g.nodes().size());
  auto communicate = [&](const graph::Node& n, double seconds) {
    p.node_seconds.push_back(seconds);
    const double start = std::max(comm_clock, compute_clock);  // posted in compute order
    comm_clock = start + seconds;
    p.comm_seconds += seconds;
    for (int id : n.outputs) ready[size_t(id)] = comm_clock;
  };
  auto compute = [&](const graph::Node& n, double seconds) {
    p.node_seconds.push_back(seconds);
    for (int id : n.inputs)
      if (id >= 0) compute_clock = std::max(compute_clock, ready[size_t(id)]);
    compute_clock += seconds;
    p.compute_seconds += seconds;
  };
  for (const graph::Node& n : g.nodes()) {
    if (n.kind == NodeKind::kReduce || n.kind == NodeKind::kGather) {
      communicate(n, bucket_seconds(g, n, cache));
      continue;
    }
    if (n.kind == NodeKind::kBoxing) {
      const Value &from = g.values()[size_t(n.inputs[0])], &to = g.values()[size_t(n.outputs[0])];
      if (from.is_global())
        communicate(n, cache
                           .get(from.shape, from.dtype, *from.placement, from.nd_sbp, *to.placement,
                                to.nd_sbp)
                           ->seconds);
      else
        p.node_seconds.push_back(0);
      continue;
    }
    if (!n.op->cost) {
      compute(n, 0);
      continue;
    }
    if (n.sig.in.empty()) {  // a local op: its whole tensors on every rank
      std::vector<Shape> in;
      for (int id : n.inputs) in.push_back(id < 0 ? Shape() : g.values()[size_t(id)].shape);
      const DType dtype = g.values()[size_t(n.outputs[0])].dtype;
      OpCost c = n.op->cost(in, g.values()[size_t(n.outputs[0])].shape, dtype);
      if (n.op->shard_work) {  // whole tensors: every offset 0
        std::vector<Shape> out;
        std::vector<std::vector<int64_t>> at, out_at;
        for (const Shape& s : in) at.emplace_back(s.size(), 0);
        for (int id : n.outputs) {
          out.push_back(g.values()[size_t(id)].shape);
          out_at.emplace_back(out.back().size(), 0);
        }
        c.flops *= n.op->shard_work(n.attrs, {in, out, at, out_at});
      }
      compute(n, cluster.compute(c, dtype));
      continue;
    }
    const Placement placement = *placement_of(g, n);  // (an optional by value)
    NodeCall call(g, n, placement, [&](size_t i) { return &n.sig.in[i]; });
    const double seconds = compute_seconds(call.call(), n.sig, cluster);
    // Inputs it streams (no boxing node): their gathers, as far as they outlast its compute,
    // and their exchanges' latency (sbp/select.h, stream_probe).
    double streamed = 0, hops = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) continue;
      const Value& v = g.values()[size_t(n.inputs[i])];
      if (v.is_global() && !(v.nd_sbp == n.sig.in[i]) &&
          !streamed_axes(*n.op, i, v.nd_sbp, n.sig.in[i]).empty()) {
        streamed +=
            cache.get(v.shape, v.dtype, placement, v.nd_sbp, placement, n.sig.in[i])->seconds;
        hops = std::max(hops, cache
                                  .get(stream_probe(*n.op, v.shape), v.dtype, placement, v.nd_sbp,
                                       placement, n.sig.in[i])
                                  ->seconds);
      }
    }
    compute(n, std::max(seconds, streamed) + hops);
  }
  // The step ends when both threads are done (its outputs are read after the last collective).
  p.step_seconds = std::max(compute_clock, comm_clock);
  return p;
}

}  // namespace ofl::internal::auto_parallel
