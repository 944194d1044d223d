#include "graph/auto_parallel/planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "graph/auto_parallel/layers.h"
#include "graph/executor.h"
#include "graph/node_call.h"
#include "graph/passes/passes.h"

namespace ofl::internal::auto_parallel {

using graph::Graph;
using graph::Node;
using graph::NodeKind;
using graph::Value;

namespace {

constexpr double kForbidden = INFINITY;  // a pair of choices that cannot go together

// A conversion the planner prices: a shape between two layouts on one of the graph's placements.
struct PriceKey {
  int placement;
  DType dtype;
  Shape shape;
  NdSbp from, to;
  bool operator==(const PriceKey&) const = default;
  struct Hash {
    size_t operator()(const PriceKey& k) const {
      size_t h = std::hash<int>()(k.placement * 64 + int(k.dtype));
      auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
      for (int64_t d : k.shape) mix(std::hash<int64_t>()(d));
      mix(k.from.hash());
      mix(k.to.hash());
      return h;
    }
  };
};

// Where a value's layout comes from: fixed, a group's choice (a variable's layout or an op's
// output), or another value's (an in-place result is its self; a gradient is its parameter's).
struct Origin {
  int group = -1;  // -1: fixed
  int output = 0;  // an op group's output index
  NdSbp fixed;
};

// The parameters (value ids) whose gradients the step computes.
std::set<int> with_gradients(const Graph& g) {
  std::set<int> out;
  for (const Node& n : g.nodes())
    if (n.kind == NodeKind::kBoxing && n.grad_of >= 0) out.insert(n.grad_of);
  return out;
}

}  // namespace

std::vector<NdSbp> candidate_layouts(const Shape& shape, const Placement& placement) {
  std::vector<std::vector<Sbp>> per_axis;
  for (int64_t k = 0; k < placement.ndim(); ++k) {
    std::vector<Sbp>& axis = per_axis.emplace_back(1, Sbp::broadcast());
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] >= placement.mesh()[size_t(k)]) axis.push_back(Sbp::split(int64_t(d)));
  }
  std::vector<NdSbp> out{NdSbp()};
  for (const std::vector<Sbp>& axis : per_axis) {
    std::vector<NdSbp> next;
    for (const NdSbp& prefix : out)
      for (const Sbp& s : axis) {
        std::vector<Sbp> axes = prefix.axes();
        axes.push_back(s);
        next.emplace_back(std::move(axes));
      }
    out = std::move(next);
  }
  return out;
}

std::set<int> all_variables(const Graph& g) {
  std::set<int> out;
  for (const graph::Variable& v : g.variables()) out.insert(v.value);
  return out;
}

namespace {

// The values a fixed_in_place step reads as they are: the fixed variables, and views and casts
// of them in the step's forward and backward (a Linear's transposed weight, a half copy).
std::vector<bool> fixed_derived(const Graph& g, const std::set<int>& fixed,
                                const std::function<bool(size_t)>& once) {
  std::vector<bool> out(g.values().size(), false);
  for (int v : fixed) out[size_t(v)] = true;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.kind != NodeKind::kOp || once(i) || (!n.op->view && n.op->name != "to")) continue;
    if (!n.inputs.empty() && n.inputs[0] >= 0 && out[size_t(n.inputs[0])])
      for (int id : n.outputs) out[size_t(id)] = true;
  }
  return out;
}

}  // namespace

GraphProblem build_problem(const Graph& g, PlanCache& cache, double memory_budget,
                           const std::set<int>& fixed, bool merge_repeats, double activations,
                           double update_weight, double forward_weight, bool fixed_in_place,
                           const std::function<std::string(int)>& name_of) {
  GraphProblem gp;
  gp.problem.memory_budget = memory_budget;
  const ClusterSpec& cluster = cache.cluster();
  const std::vector<Value>& values = g.values();
  const std::vector<Node>& nodes = g.nodes();
  const Repeats repeats = find_repeats(g, merge_repeats);
  // The once-a-step nodes: after the backward (the optimizer), weighed update_weight times.
  size_t last_backward = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].backward) last_backward = i;
  const auto once = [&](size_t i) {
    return last_backward < nodes.size() && i > last_backward && !nodes[i].backward;
  };
  // How many times node i runs per micro-batch (the forward twice where the stage recomputes
  // it), or the update's share of it.
  const auto runs = [&](size_t i) {
    return once(i) ? update_weight : nodes[i].backward ? 1.0 : forward_weight;
  };
  gp.layers = repeats.layers;
  gp.copied_layers = repeats.copied_layers;
  std::vector<Origin> origin(values.size());
  for (size_t v = 0; v < values.size(); ++v) origin[v].fixed = values[v].nd_sbp;
  auto bytes = [&](const Value& v, const NdSbp& sbp) {
    return double(graph::bytes_per_rank(v, sbp));
  };
  // Conversions priced once per shape and pair of layouts (a deep model asks for the same ones
  // thousands of times; the cache's key would copy and hash a thousand-rank placement each time).
  std::vector<const Placement*> placements;
  std::vector<int> placement_id(values.size(), -1);
  for (size_t v = 0; v < values.size(); ++v) {
    if (!values[v].is_global()) continue;
    auto it = std::find_if(placements.begin(), placements.end(),
                           [&](const Placement* p) { return *p == *values[v].placement; });
    placement_id[v] = int(it - placements.begin());
    if (it == placements.end()) placements.push_back(&*values[v].placement);
  }
  std::unordered_map<PriceKey, double, PriceKey::Hash> prices;
  auto convert = [&](int v, const Shape& shape, const NdSbp& from, const NdSbp& to) {
    if (from == to) return 0.0;
    const Value& val = values[size_t(v)];
    auto [it, fresh] = prices.try_emplace({placement_id[size_t(v)], val.dtype, shape, from, to});
    if (fresh)
      it->second = cache.get(shape, val.dtype, *val.placement, from, *val.placement, to)->seconds;
    return it->second;
  };
  auto boxing = [&](int v, const NdSbp& from, const NdSbp& to) {
    return convert(v, values[size_t(v)].shape, from, to);
  };
  // A gradient's reduction goes out fused with the others (bucket_grads): it adds its bytes to a
  // bucket, not a collective's latency. Priced as its conversion less that of a tiny tensor of
  // the same rank (each dimension cut to the placement's size, so that every split still fits).
  auto bucketed = [&](int v, const NdSbp& from, const NdSbp& to) {
    if (from == to) return 0.0;
    Shape tiny = values[size_t(v)].shape;
    for (int64_t& d : tiny) d = std::min(d, values[size_t(v)].placement->size());
    return std::max(boxing(v, from, to) - convert(v, tiny, from, to), 0.0);
  };
  auto layout_of = [&](int v, int choice) -> const NdSbp& {
    const Origin& o = origin[size_t(v)];
    if (o.group < 0) return o.fixed;
    if (gp.node[size_t(o.group)] < 0) return gp.layouts[size_t(o.group)][size_t(choice)];
    return gp.sigs[size_t(o.group)][size_t(choice)].out[size_t(o.output)];
  };
  auto new_group = [&](std::string name, int node, int value) {
    gp.problem.groups.push_back({std::move(name), {}, {}});
    gp.node.push_back(node);
    gp.value.push_back(value);
    gp.copies.emplace_back();
    gp.sigs.emplace_back();
    gp.layouts.emplace_back();
    gp.compute.emplace_back();
    return int(gp.problem.groups.size()) - 1;
  };
  // Adds the cost of reading value v into `want` for each choice of group `to`, `weight` times:
  // an edge from v's group or, for a fixed layout, the reader's own cost.
  std::map<std::pair<int, int>, size_t> edge_of;
  // `streamed` (for an input the reader's compute streams, OpDef::streamed_inputs): the compute
  // seconds of choice b that its gather, made as the compute goes, hides, and its share of the
  // exchanges' latency, which nothing hides (as select_signature prices it).
  struct Streamed {
    double hidden = 0, latency = 0;
  };
  auto read = [&](int v, int to, const std::function<const NdSbp*(int choice)>& want,
                  bool same_or_forbidden, bool gradient, double weight,
                  const std::function<Streamed(const NdSbp& from, int choice)>& streamed =
                      nullptr) {
    const auto price = [&](const NdSbp& from, const NdSbp& w, int b) {
      if (same_or_forbidden) return w == from ? 0.0 : kForbidden;
      if (gradient) return weight * bucketed(v, from, w);
      const Streamed s = streamed ? streamed(from, b) : Streamed{};
      return weight * (std::max(0.0, boxing(v, from, w) - s.hidden) + s.latency);
    };
    Group& reader = gp.problem.groups[size_t(to)];
    const Origin& o = origin[size_t(v)];
    if (o.group < 0) {
      for (size_t b = 0; b < reader.cost.size(); ++b)
        if (const NdSbp* w = want(int(b))) reader.cost[b] += price(o.fixed, *w, int(b));
      return;
    }
    const size_t na = gp.problem.groups[size_t(o.group)].cost.size(), nb = reader.cost.size();
    auto [it, fresh] = edge_of.try_emplace({o.group, to}, gp.problem.edges.size());
    if (fresh) gp.problem.edges.push_back({o.group, to, std::vector<double>(na * nb, 0.0)});
    Edge& e = gp.problem.edges[it->second];
    for (size_t a = 0; a < na; ++a)
      for (size_t b = 0; b < nb; ++b)
        if (const NdSbp* w = want(int(b)))
          e.cost[a * nb + b] += price(layout_of(v, int(a)), *w, int(b));
  };

  // Variables: a group each, but a copied layer's take their counterpart's (adding their memory).
  const std::vector<graph::Variable>& variables = g.variables();
  for (int copies : {0, 1})
    for (const graph::Variable& var : variables) {
      const Value& v = values[size_t(var.value)];
      const int rep = repeats.value_rep[size_t(var.value)];
      if (!v.is_global() || (rep != var.value) != bool(copies)) continue;
      if (fixed.count(var.value)) {
        gp.constant_memory += bytes(v, v.nd_sbp);
        continue;
      }
      int grp = origin[size_t(rep)].group;
      if (copies && grp >= 0) {
        gp.copies[size_t(grp)].push_back(var.value);
      } else {  // a layer's first copy, or a copy whose counterpart is fixed
        grp = new_group("variable %" + std::to_string(var.value), -1, var.value);
        gp.layouts[size_t(grp)] = candidate_layouts(v.shape, *v.placement);
        gp.problem.groups[size_t(grp)].cost.assign(gp.layouts[size_t(grp)].size(), 0.0);
        gp.compute[size_t(grp)].assign(gp.layouts[size_t(grp)].size(), 0.0);
        gp.problem.groups[size_t(grp)].memory.assign(gp.layouts[size_t(grp)].size(), 0.0);
      }
      for (size_t b = 0; b < gp.layouts[size_t(grp)].size(); ++b)
        gp.problem.groups[size_t(grp)].memory[b] += bytes(v, gp.layouts[size_t(grp)][b]);
      origin[size_t(var.value)].group = grp;
    }
  // A parameter's gradient doubles its memory (once, however many micro-batches add to it).
  for (int param : with_gradients(g))
    if (fixed.count(param)) {
      gp.constant_memory += bytes(values[size_t(param)], values[size_t(param)].nd_sbp);
    } else if (const int grp = origin[size_t(param)].group; grp >= 0) {
      Group& group = gp.problem.groups[size_t(grp)];
      for (size_t b = 0; b < group.memory.size(); ++b)
        group.memory[b] += bytes(values[size_t(param)], gp.layouts[size_t(grp)][b]);
    }

  // Global ops: a group each with their signatures and computes, a copy adding its compute to
  // its counterpart's group.
  std::vector<int> group_of(nodes.size(), -1);
  for (int copies : {0, 1})
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      const int rep = repeats.node_rep[i];
      if (n.kind != NodeKind::kOp || (rep != int(i)) != bool(copies)) continue;
      const std::optional<Placement> placement = graph::placement_of(g, n);
      if (!placement) continue;
      if (copies) {
        group_of[i] = group_of[size_t(rep)];
        gp.copies[size_t(group_of[i])].push_back(int(i));
        continue;
      }
      // Any layout for the inputs: the candidates are all the rule allows (in-place ones are
      // filtered below), and what reading each input costs is the edges'.
      const NdSbp any(std::vector<Sbp>(size_t(placement->ndim()), Sbp::broadcast()));
      graph::NodeCall node_call(g, n, *placement, [&](size_t) { return &any; });
      SbpCall& call = node_call.call();
      call.inplace = false;
      const int grp = group_of[i] =
          new_group(n.name() + " (node " + std::to_string(i) + ")", int(i), -1);
      for (NdSbpSignature& sig : candidate_signatures(call)) {
        if (n.op->inplace && !(sig.out[0] == sig.in[0])) continue;
        const double seconds = compute_seconds(call, sig, cluster) * runs(i);
        gp.problem.groups[size_t(grp)].cost.push_back(seconds);
        gp.compute[size_t(grp)].push_back(seconds);
        gp.sigs[size_t(grp)].push_back(std::move(sig));
      }
      if (gp.sigs[size_t(grp)].empty()) fail(n.name().c_str(), "has no signature to plan with");
    }
  for (size_t grp = 0; grp < gp.node.size(); ++grp)
    for (size_t b = 0; b < gp.compute[grp].size(); ++b) {
      gp.compute[grp][b] *= double(1 + gp.copies[grp].size());
      gp.problem.groups[grp].cost[b] = gp.compute[grp][b];
    }

  // Activations: a forward output that the backward reads (directly or through a view) is held
  // from its op to the backward, so all of them are live when the forward ends: their bytes in
  // their op's output layouts count against the budget with the variables' (a bound on the
  // step's peak). Each copy of a repeated layer holds its own.
  const std::vector<int> owner = graph::memory_owner(g);
  std::vector<bool> saved(values.size(), false);
  for (const Node& n : nodes)
    if (activations > 0 && n.backward)
      for (int id : n.inputs)
        if (id >= 0) saved[size_t(owner[size_t(id)])] = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.kind != NodeKind::kOp || n.backward || repeats.node_rep[i] != int(i)) continue;
    const int grp = group_of[i];
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const int v = n.outputs[j];
      if (owner[size_t(v)] != v || !saved[size_t(v)]) continue;
      if (grp < 0) {
        gp.constant_memory += activations * double(graph::bytes_per_rank(values[size_t(v)]));
        continue;
      }
      Group& group = gp.problem.groups[size_t(grp)];
      if (group.memory.empty()) group.memory.assign(group.cost.size(), 0.0);
      for (size_t b = 0; b < group.memory.size(); ++b)
        group.memory[b] += activations * double(1 + gp.copies[size_t(grp)].size()) *
                           bytes(values[size_t(v)], gp.sigs[size_t(grp)][b].out[j]);
    }
  }

  // Where every value's layout comes from, in step order (an in-place result is its input's).
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.kind == NodeKind::kBoxing && n.grad_of >= 0 && origin[size_t(n.grad_of)].group >= 0 &&
        values[size_t(n.inputs[0])].is_global())
      origin[size_t(n.outputs[0])] = origin[size_t(n.grad_of)];  // the parameter's layout
    if (group_of[i] < 0) continue;
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      Origin& o = origin[size_t(n.outputs[j])];
      if (n.op->inplace && j == 0) {
        o = origin[size_t(n.inputs[0])];
      } else {
        o.group = group_of[i];
        o.output = int(j);
      }
    }
  }

  // What reading each value costs. A read from within a copied layer is its counterpart's,
  // counted once per copy there.
  const std::vector<bool> in_place =
      fixed_in_place ? fixed_derived(g, fixed, once) : std::vector<bool>(values.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const int rep = repeats.node_rep[i];
    // How many times the read of value v by this node is to be counted (0: its counterpart's).
    const double step_part = runs(i);
    // A gradient's reduction is once a step too: weighed here unless its node, after the
    // backward (a reduction deferred past the micro-batches), already is.
    const double grad_weight = once(i) ? 1.0 : update_weight;
    const auto weight = [&](int v) {
      if (!repeats.internal(g, int(i), v)) return step_part;
      return rep == int(i) ? step_part * double(repeats.copies[i]) : 0.0;
    };
    if (n.kind == NodeKind::kBoxing) {
      const int in = n.inputs[0], out = n.outputs[0];
      if (!values[size_t(in)].is_global() || weight(in) == 0) continue;
      if (n.grad_of >= 0 && origin[size_t(n.grad_of)].group >= 0) {
        // The gradient takes its parameter's layout: an edge to the parameter's group.
        const int param = origin[size_t(n.grad_of)].group;
        if (origin[size_t(in)].group == param) continue;
        read(
            in, param, [&](int b) { return &gp.layouts[size_t(param)][size_t(b)]; }, false, true,
            weight(in) * grad_weight);
        continue;
      }
      // An annotation (or a gradient taking a fixed parameter's layout): the value converted to
      // a fixed layout, paid by the value's group.
      const NdSbp target = values[size_t(out)].nd_sbp;
      const Origin& o = origin[size_t(in)];
      const auto price = [&](const NdSbp& from) {
        return weight(in) *
               (n.param_grad ? grad_weight * bucketed(in, from, target) : boxing(in, from, target));
      };
      if (o.group < 0) {
        gp.constant_seconds += price(o.fixed);
      } else {
        Group& src = gp.problem.groups[size_t(o.group)];
        for (size_t a = 0; a < src.cost.size(); ++a) src.cost[a] += price(layout_of(in, int(a)));
      }
      continue;
    }
    const int grp = group_of[i];
    if (grp < 0) continue;
    const std::vector<NdSbpSignature>& sigs = gp.sigs[size_t(grp)];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int id = n.inputs[k];
      if (id < 0 || !values[size_t(id)].is_global() || weight(id) == 0) continue;
      const bool kept_read = !once(i) && in_place[size_t(id)];
      if (kept_read && origin[size_t(id)].group < 0 &&
          std::none_of(sigs.begin(), sigs.end(), [&](const NdSbpSignature& sig) {
            return sig.in[k] == values[size_t(id)].nd_sbp;
          }))
        fail("auto_parallel", n.name(), " (node ", i, ") cannot read ",
             name_of ? name_of(id) : "%" + std::to_string(id), " as it is kept, ",
             values[size_t(id)].nd_sbp.str(), ": no signature of ", n.name(), " takes its input ",
             k,
             " so (in_place=True reads kept parameters as stored; keep another layout, or plan "
             "without in_place)");
      const bool as_it_is = (n.op->inplace && k == 0) || kept_read;
      // A streamed input's gather hides behind its share of one run's compute; the exchanges'
      // latency is shared among the streamed inputs.
      const auto streamed = [&](const NdSbp& from, int b) {
        const NdSbp& w = sigs[size_t(b)].in[k];
        if (streamed_axes(*n.op, k, from, w).empty()) return Streamed{};
        const double one_run = gp.compute[size_t(grp)][size_t(b)] /
                               (runs(i) * double(1 + gp.copies[size_t(grp)].size()));
        const double share = 1.0 / double(std::popcount(n.op->streamed_inputs));
        const Shape probe = stream_probe(*n.op, values[size_t(id)].shape);
        return Streamed{one_run * share, convert(id, probe, from, w) * share};
      };
      read(
          id, grp, [&](int b) { return &sigs[size_t(b)].in[k]; }, as_it_is, false, weight(id),
          n.op->streamed_inputs ? std::function<Streamed(const NdSbp&, int)>(streamed) : nullptr);
    }
  }
  gp.problem.memory_budget -= gp.constant_memory;  // plan() checks that the kept ones fit
  return gp;
}

Plan plan_of(const Graph& g, const GraphProblem& gp, const std::vector<int>& choice) {
  Plan p;
  p.sig.resize(g.nodes().size());
  for (size_t grp = 0; grp < gp.node.size(); ++grp) {
    const size_t c = size_t(choice[grp]);
    if (gp.node[grp] >= 0) {
      p.sig[size_t(gp.node[grp])] = gp.sigs[grp][c];
      for (int copy : gp.copies[grp]) p.sig[size_t(copy)] = gp.sigs[grp][c];
    } else {
      p.layout[gp.value[grp]] = gp.layouts[grp][c];
      for (int copy : gp.copies[grp]) p.layout[copy] = gp.layouts[grp][c];
    }
    p.compute_seconds += gp.compute[grp][c];
  }
  for (const graph::Variable& v : g.variables())  // the fixed ones keep theirs
    if (g.values()[size_t(v.value)].is_global())
      p.layout.try_emplace(v.value, g.values()[size_t(v.value)].nd_sbp);
  p.comm_seconds = cost_of(gp.problem, choice) + gp.constant_seconds - p.compute_seconds;
  p.memory = memory_of(gp.problem, choice) + gp.constant_memory;
  p.layers = gp.layers;
  p.copied_layers = gp.copied_layers;
  p.lower_bound_seconds = p.seconds();
  return p;
}

namespace {

std::string variable_label(int value) {
  return "%" + std::to_string(value);
}

// Raises when no plan fits the budget, with the least memory any plan needs (with layouts kept:
// the least with them, and with every layout free); or, when the kept variables' layouts
// (constraints) are what stands in the way, naming the largest of them, what they take, and the
// least a plan would need with them free.
void check_fits(const Graph& g, const GraphProblem& gp, double memory_budget,
                const std::set<int>& fixed, const std::function<std::string(int)>& name_of) {
  const double others = min_memory(gp.problem);
  if (gp.constant_memory + others <= memory_budget) return;
  const std::set<int> with_grad = with_gradients(g);
  std::vector<std::pair<double, int>> kept;         // (bytes with the gradient, value)
  double least_free = gp.constant_memory + others;  // with the kept ones at their smallest
  for (int id : fixed) {
    const Value& v = g.values()[size_t(id)];
    if (!v.is_global()) continue;
    const double copies = 1 + double(with_grad.count(id));
    kept.emplace_back(copies * double(graph::bytes_per_rank(v)), id);
    double smallest = INFINITY;
    for (const NdSbp& layout : candidate_layouts(v.shape, *v.placement))
      smallest = std::min(smallest, copies * double(graph::bytes_per_rank(v, layout)));
    least_free += smallest - kept.back().first;
  }
  if (kept.empty() || least_free > memory_budget)  // not the constraints' fault alone
    fail("auto_parallel", "no plan fits the memory budget of ", bytes_str(memory_budget),
         " per device; the least any plan needs is ",
         kept.empty() ? bytes_str(least_free)
                      : str_cat(bytes_str(gp.constant_memory + others), " with the kept layouts (",
                                bytes_str(least_free), " with every layout free)"));
  std::sort(kept.rbegin(), kept.rend());
  double kept_bytes = 0;
  std::ostringstream largest;
  for (size_t i = 0; i < kept.size(); ++i) {
    kept_bytes += kept[i].first;
    if (i < 3)
      largest << (i ? ", " : "") << name_of(kept[i].second) << " at "
              << g.values()[size_t(kept[i].second)].nd_sbp.str() << ": "
              << bytes_str(kept[i].first);
  }
  fail("auto_parallel", "the kept layouts contradict the memory budget of ",
       bytes_str(memory_budget), " per device: the kept variables take ", bytes_str(kept_bytes),
       " with their gradients (", largest.str(), kept.size() > 3 ? ", ..." : "",
       ") and the rest at least ", bytes_str(gp.constant_memory - kept_bytes + others),
       "; with every layout free the least any plan needs is ", bytes_str(least_free));
}

}  // namespace

double compiled_peak(const Graph& g, const Plan& p, PlanCache& cache) {
  const Graph laid = apply(g, p);
  double bytes = double(graph::peak_bytes(graph::lower_layout(laid, &cache)));
  for (const graph::Variable& v : laid.variables())
    bytes += double(graph::bytes_per_rank(laid.values()[size_t(v.value)]));
  return bytes;
}

Plan plan(const Graph& g, PlanCache& cache, double memory_budget, const std::set<int>& fixed,
          const std::function<std::string(int)>& name_of, double activations,
          const PlanOptions& options, std::vector<Plan>* lighter) {
  const GraphProblem gp = build_problem(
      g, cache, memory_budget, fixed, options.merge_repeats || g.nodes().size() > kWholeGraphNodes,
      activations, options.update_weight, options.forward_weight, options.fixed_in_place, name_of);
  check_fits(g, gp, memory_budget, fixed, name_of ? name_of : variable_label);
  const Solution s = solve(gp.problem);
  const auto plan_for = [&](const std::vector<int>& choice) {
    Plan p = plan_of(g, gp, choice);
    p.lower_bound_seconds = std::min(s.bound + gp.constant_seconds, p.seconds());
    // The budget bounds the count (variables, gradients, saved activations), not the compiled
    // step's peak, which has transients on top (a gathered bucket, a reduction's buffer, ops'
    // outputs the backward does not read): predicted, for the user to compare.
    if (activations > 0 && std::isfinite(memory_budget)) p.peak = compiled_peak(g, p, cache);
    return p;
  };
  if (lighter)
    for (const std::vector<int>& choice : s.lighter) lighter->push_back(plan_for(choice));
  return plan_for(s.choice);
}

Graph apply(const Graph& g, const Plan& plan) {
  Graph out = g;
  std::vector<Value>& values = out.values();
  for (const auto& [id, layout] : plan.layout) values[size_t(id)].nd_sbp = layout;
  for (size_t i = 0; i < out.nodes().size(); ++i) {
    Node& n = out.nodes()[i];
    if (n.kind == NodeKind::kBoxing && n.grad_of >= 0 && plan.layout.count(n.grad_of))
      values[size_t(n.outputs[0])].nd_sbp = plan.layout.at(n.grad_of);
    if (n.kind != NodeKind::kOp || plan.sig[i].in.empty()) continue;
    n.sig = plan.sig[i];
    for (size_t j = 0; j < n.outputs.size(); ++j)
      values[size_t(n.outputs[j])].nd_sbp = n.sig.out[j];
  }
  return out;
}

}  // namespace ofl::internal::auto_parallel
