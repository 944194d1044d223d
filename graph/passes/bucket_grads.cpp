// Gradient bucketing, as DDP's buckets: the parameters' gradient reductions (boxing nodes marked
// param_grad that only turn P(sum) into B or S on some mesh axes) go out fused, one collective
// per bucket of up to bucket_bytes (an all-reduce when every target is B, else a
// reduce-scatter). A bucket gathers reductions of one placement, axes, dtype and kind in the
// order backward produces them, and goes out where its last member was, as soon as that
// gradient is ready; it closes early when a node in between reads one of its members.
#include <algorithm>

#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

// The mesh axes a gradient reduction sums over and whether it scatters, or nullopt when the
// node is not one.
struct Reduction {
  std::vector<int64_t> axes;
  bool scatter = false;
};

std::optional<Reduction> reduction_of(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::kBoxing || !n.param_grad) return std::nullopt;
  const Value &from = g.values()[n.inputs[0]], &to = g.values()[n.outputs[0]];
  if (from.placement != to.placement) return std::nullopt;
  Reduction r;
  for (size_t k = 0; k < to.nd_sbp.size(); ++k) {
    const Sbp &a = from.nd_sbp[k], &b = to.nd_sbp[k];
    if (a == b) continue;
    if (!(a.is_partial() && a.op() == PartialOp::kSum && !b.is_partial())) return std::nullopt;
    r.axes.push_back(int64_t(k));
    r.scatter |= b.is_split();
  }
  if (r.axes.empty()) return std::nullopt;
  return r;
}

int64_t bytes_of(const Value& v) {
  return numel_of(v.shape) * static_cast<int64_t>(itemsize(v.dtype));
}

}  // namespace

Graph bucket_grads(const Graph& g, int64_t bucket_bytes) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<std::optional<Reduction>> red(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) red[i] = reduction_of(g, nodes[i]);
  // bucket_of[i]: the first member of node i's bucket; a bucket goes out at its last member.
  std::vector<int> bucket_of(nodes.size(), -1), last_of(nodes.size(), -1);
  struct Open {
    int first;
    int64_t bytes;
    std::vector<int> members;
  };
  std::vector<Open> open;
  std::vector<int> member_bucket(g.values().size(), -1);  // a member's output -> its bucket
  auto close = [&](size_t b) {
    for (int m : open[b].members) last_of[m] = open[b].members.back();
    for (int m : open[b].members) member_bucket[nodes[m].outputs[0]] = -1;
    open.erase(open.begin() + long(b));
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    // A node reading an open bucket's member needs that bucket out before it.
    for (int id : nodes[i].inputs)
      if (id >= 0 && member_bucket[id] >= 0)
        for (size_t b = 0; b < open.size(); ++b)
          if (open[b].first == member_bucket[id]) {
            close(b);
            break;
          }
    if (!red[i]) continue;
    const Value& v = g.values()[nodes[i].inputs[0]];
    auto fits = [&](const Open& b) {
      const Node& f = nodes[b.first];
      const Value& fv = g.values()[f.inputs[0]];
      return red[b.first]->axes == red[i]->axes && red[b.first]->scatter == red[i]->scatter &&
             fv.dtype == v.dtype && fv.placement == v.placement;
    };
    auto it = std::find_if(open.begin(), open.end(), fits);
    if (it != open.end() && it->bytes + bytes_of(v) > bucket_bytes) {
      close(size_t(it - open.begin()));
      it = open.end();
    }
    if (it == open.end()) {
      open.push_back({int(i), 0, {}});
      it = open.end() - 1;
    }
    it->bytes += bytes_of(v);
    it->members.push_back(int(i));
    bucket_of[i] = it->first;
    member_bucket[nodes[i].outputs[0]] = it->first;
  }
  while (!open.empty()) close(0);

  Graph out = g.without_nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!red[i]) {
      out.add_node(nodes[i]);
      continue;
    }
    if (last_of[i] != int(i)) continue;  // goes out with its bucket's last member
    Node fused;
    fused.kind = NodeKind::kReduce;
    fused.axes = red[i]->axes;
    place_like(fused, nodes[i]);
    for (size_t m = 0; m <= i; ++m)
      if (red[m] && bucket_of[m] == bucket_of[i]) {
        fused.inputs.push_back(nodes[m].inputs[0]);
        fused.outputs.push_back(nodes[m].outputs[0]);
      }
    out.add_node(std::move(fused));
  }
  return out;
}

}  // namespace ofl::internal::graph
