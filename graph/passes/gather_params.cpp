// Parameter gathers, ZeRO-3 / FSDP style: the conversions of split parameters that only gather
// (S -> B on some mesh axes, laid out alike elsewhere) go out fused, one all-gather per bucket of
// up to bucket_bytes of gathered parameters, in the order the step first reads them. Each
// bucket is issued ahead (prefetch) as soon as the previous bucket's memory is free, so that with
// collectives on their own thread it runs while the compute in between does, and one bucket is
// held at a time (FSDP's BACKWARD_POST). A bucket never moves above a write in place into one of
// its parameters.
//
// A parameter read through views (linear's weight.t()) is gathered first and viewed after:
// boxing(view(w)) to all-B becomes view(boxing(w)), one gather per parameter and phase however
// many views read it. As FSDP does, the forward's gathered copies are dropped after their last
// forward reader and backward gathers again: buckets neither span nor are issued across the
// boundary between forward and backward, so that gathered parameters never wait through it.
#include <map>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

// The mesh axes a parameter's conversion gathers over, or none when it is not a pure gather of
// a parameter.
std::vector<int64_t> gathered_axes(const Graph& g, const std::vector<bool>& is_variable,
                                   const Node& n) {
  if (n.kind != NodeKind::kBoxing || n.param_grad || !is_variable[n.inputs[0]]) return {};
  const Value &from = g.values()[n.inputs[0]], &to = g.values()[n.outputs[0]];
  if (!from.is_global() || from.placement != to.placement) return {};
  std::vector<int64_t> axes;
  for (size_t k = 0; k < to.nd_sbp.size(); ++k) {
    if (from.nd_sbp[k] == to.nd_sbp[k]) continue;
    if (!(from.nd_sbp[k].is_split() && to.nd_sbp[k].is_broadcast())) return {};
    axes.push_back(int64_t(k));
  }
  return axes;
}

bool all_broadcast(const Value& v) {
  return v.is_global() && v.nd_sbp.all_broadcast();
}

// Rewrites boxing(view(...view(w))) to all-B as the views of boxing(w) to all-B, w a global
// variable, reusing one gathered w per phase until a write in place into it.
Graph gather_before_views(const Graph& g, const std::vector<bool>& is_variable) {
  std::vector<int> producer(g.values().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (int id : g.nodes()[i].outputs) producer[id] = int(i);
  Graph out = g.without_nodes();
  std::map<std::pair<int, bool>, int> gathered;  // (variable, backward) -> its all-B value
  for (const Node& n : g.nodes()) {
    if (writes_in_place(n)) {
      gathered.erase({n.inputs[0], false});
      gathered.erase({n.inputs[0], true});
    }
    if (n.kind != NodeKind::kBoxing || n.param_grad || !all_broadcast(g.values()[n.outputs[0]])) {
      out.add_node(n);
      continue;
    }
    // The chain of single-input views from a variable to the boxed value.
    std::vector<int> chain;
    int v = n.inputs[0];
    while (!is_variable[v] && producer[v] >= 0) {
      const Node& p = g.nodes()[size_t(producer[v])];
      if (p.kind != NodeKind::kOp || !p.op->view || p.inputs.empty() || p.inputs[0] < 0) break;
      chain.push_back(producer[v]);
      v = p.inputs[0];
    }
    if (chain.empty() || !is_variable[v] || !g.values()[v].is_global()) {
      out.add_node(n);
      continue;
    }
    auto [it, fresh] = gathered.try_emplace({v, n.backward}, -1);
    if (fresh) {
      Value b = g.values()[v];
      b.nd_sbp = g.values()[n.outputs[0]].nd_sbp;
      it->second = out.add_value(std::move(b));
      Node gather = boxing_node(v, it->second);
      place_like(gather, n);
      out.add_node(std::move(gather));
    }
    int in = it->second;
    for (size_t k = chain.size(); k-- > 0;) {
      Node view = g.nodes()[size_t(chain[k])];
      place_like(view, n);
      int result = n.outputs[0];
      if (k > 0) {
        Value b = g.values()[view.outputs[0]];
        b.nd_sbp = g.values()[n.outputs[0]].nd_sbp;
        result = out.add_value(std::move(b));
      }
      view.inputs[0] = in;
      view.outputs = {result};
      view.sig.in.assign(view.inputs.size(), g.values()[n.outputs[0]].nd_sbp);
      view.sig.out = {g.values()[n.outputs[0]].nd_sbp};
      out.add_node(std::move(view));
      in = result;
    }
  }
  return out;
}

}  // namespace

Graph gather_params(const Graph& traced, int64_t bucket_bytes) {
  std::vector<bool> is_variable(traced.values().size(), false);
  for (const Variable& v : traced.variables()) is_variable[v.value] = true;
  const Graph g = gather_before_views(traced, is_variable);
  is_variable.resize(g.values().size(), false);
  const std::vector<Node>& nodes = g.nodes();

  struct Bucket {
    std::vector<int> members;  // node indices
    std::vector<int64_t> axes;
    int64_t bytes = 0;
    int at = 0;  // the node it goes out before
  };
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<int64_t> axes = gathered_axes(g, is_variable, nodes[i]);
    if (axes.empty()) continue;
    const Value& v = g.values()[nodes[i].outputs[0]];
    const int64_t bytes = numel_of(v.shape) * int64_t(itemsize(v.dtype));
    Bucket* b = buckets.empty() ? nullptr : &buckets.back();
    if (b) {
      const Node& first = nodes[b->members[0]];
      const Value& f = g.values()[first.outputs[0]];
      if (b->axes != axes || f.dtype != v.dtype || f.placement != v.placement ||
          first.backward != nodes[i].backward || b->bytes + bytes > bucket_bytes)
        b = nullptr;
    }
    if (!b) b = &buckets.emplace_back(Bucket{{}, axes, 0, int(i)});
    b->members.push_back(int(i));
    b->bytes += bytes;
  }
  // Issue each bucket as soon as the previous one's memory is free (after the last reader of its
  // gathered parameters and their views), not before its own phase begins, unless one of its
  // parameters is written in place in between.
  const std::vector<int> base = memory_owner(g);
  std::vector<int> last_use(g.values().size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int id : nodes[i].inputs)
      if (id >= 0) last_use[size_t(base[size_t(id)])] = int(i);
  int backward_begins = int(nodes.size());
  for (size_t i = nodes.size(); i-- > 0;)
    if (nodes[i].backward) backward_begins = int(i);
  for (size_t b = 1; b < buckets.size(); ++b) {
    int ahead = buckets[b - 1].at + 1;
    for (int m : buckets[b - 1].members) ahead = std::max(ahead, last_use[nodes[m].outputs[0]] + 1);
    if (nodes[buckets[b].members[0]].backward) ahead = std::max(ahead, backward_begins);
    if (ahead >= buckets[b].at) continue;
    bool blocked = false;
    for (int k = ahead; k < buckets[b].at && !blocked; ++k)
      for (int m : buckets[b].members)
        blocked |= writes_in_place(nodes[k]) && nodes[k].inputs[0] == nodes[m].inputs[0];
    if (!blocked) buckets[b].at = ahead;
  }

  std::vector<bool> member(nodes.size(), false);
  std::vector<std::vector<const Bucket*>> before(nodes.size() + 1);
  for (const Bucket& b : buckets) {
    for (int m : b.members) member[m] = true;
    before[b.at].push_back(&b);
  }
  Graph out = g.without_nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Bucket* b : before[i]) {
      Node fused;
      fused.kind = NodeKind::kGather;
      fused.axes = b->axes;
      place_like(fused, nodes[b->members[0]]);
      for (int m : b->members) {
        fused.inputs.push_back(nodes[m].inputs[0]);
        fused.outputs.push_back(nodes[m].outputs[0]);
      }
      out.add_node(std::move(fused));
    }
    if (!member[i]) out.add_node(nodes[i]);
  }
  return out;
}

}  // namespace ofl::internal::graph
