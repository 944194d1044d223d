// build_problem: the integer program a traced step poses the planner (planner.h), built phase by
// phase by ProblemBuilder.
#include "graph/auto_parallel/planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "graph/auto_parallel/layers.h"
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

// build_problem, a phase a method: the variables' groups, the gradients' memory, the ops' groups,
// the activations' memory, where each value's layout comes from, and what reading each value
// costs (edges between groups, or a group's own cost for a fixed layout).
class ProblemBuilder {
 public:
  ProblemBuilder(const Graph& g, PlanCache& cache, double memory_budget,
                 const ProblemOptions& options)
      : g_(g),
        cache_(cache),
        o_(options),
        values_(g.values()),
        nodes_(g.nodes()),
        repeats_(find_repeats(g, options.merge_repeats)),
        origin_(values_.size()),
        placement_id_(values_.size(), -1),
        group_of_(nodes_.size(), -1) {
    gp_.problem.memory_budget = memory_budget;
    gp_.layers = repeats_.layers;
    gp_.copied_layers = repeats_.copied_layers;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].backward) last_backward_ = i;
    for (size_t v = 0; v < values_.size(); ++v) origin_[v].fixed = values_[v].nd_sbp;
    // Conversions are priced once per shape and pair of layouts (a deep model asks for the same
    // ones thousands of times; the cache's key would copy and hash a thousand-rank placement
    // each time): placements by number.
    for (size_t v = 0; v < values_.size(); ++v) {
      if (!values_[v].is_global()) continue;
      auto it = std::find_if(placements_.begin(), placements_.end(),
                             [&](const Placement* p) { return *p == *values_[v].placement; });
      placement_id_[v] = int(it - placements_.begin());
      if (it == placements_.end()) placements_.push_back(&*values_[v].placement);
    }
  }

  GraphProblem build() {
    add_variables();
    add_gradients();
    add_ops();
    add_activations();
    trace_origins();
    add_reads();
    gp_.problem.memory_budget -= gp_.constant_memory;  // plan() checks that the kept ones fit
    return std::move(gp_);
  }

 private:
  // A read's hidden share of a streamed input's gather (OpDef::streamed_inputs): the compute
  // seconds of choice b that the gather, made as the compute goes, hides, and its share of the
  // exchanges' latency, which nothing hides (as select_signature prices it).
  struct Streamed {
    double hidden = 0, latency = 0;
  };
  using StreamedFn = std::function<Streamed(const NdSbp& from, int choice)>;

  // The once-a-step nodes: after the backward (the optimizer), weighed update_weight times.
  bool once(size_t i) const {
    return last_backward_ < nodes_.size() && i > last_backward_ && !nodes_[i].backward;
  }
  // How many times node i runs per micro-batch (the forward twice where the stage recomputes
  // it), or the update's share of it.
  double runs(size_t i) const {
    return once(i) ? o_.update_weight : nodes_[i].backward ? 1.0 : o_.forward_weight;
  }
  double bytes(const Value& v, const NdSbp& sbp) const {
    return double(graph::bytes_per_rank(v, sbp));
  }
  double convert(int v, const Shape& shape, const NdSbp& from, const NdSbp& to) {
    if (from == to) return 0.0;
    const Value& val = values_[size_t(v)];
    auto [it, fresh] = prices_.try_emplace({placement_id_[size_t(v)], val.dtype, shape, from, to});
    if (fresh)
      it->second = cache_.get(shape, val.dtype, *val.placement, from, *val.placement, to)->seconds;
    return it->second;
  }
  double boxing(int v, const NdSbp& from, const NdSbp& to) {
    return convert(v, values_[size_t(v)].shape, from, to);
  }
  // A gradient's reduction goes out fused with the others (bucket_grads): it adds its bytes to a
  // bucket, not a collective's latency. Priced as its conversion less that of a tiny tensor of
  // the same rank (each dimension cut to the placement's size, so that every split still fits).
  double bucketed(int v, const NdSbp& from, const NdSbp& to) {
    if (from == to) return 0.0;
    Shape tiny = values_[size_t(v)].shape;
    for (int64_t& d : tiny) d = std::min(d, values_[size_t(v)].placement->size());
    return std::max(boxing(v, from, to) - convert(v, tiny, from, to), 0.0);
  }
  const NdSbp& layout_of(int v, int choice) const {
    const Origin& o = origin_[size_t(v)];
    if (o.group < 0) return o.fixed;
    if (gp_.node[size_t(o.group)] < 0) return gp_.layouts[size_t(o.group)][size_t(choice)];
    return gp_.sigs[size_t(o.group)][size_t(choice)].out[size_t(o.output)];
  }
  int new_group(std::string name, int node, int value) {
    gp_.problem.groups.push_back({std::move(name), {}, {}});
    gp_.node.push_back(node);
    gp_.value.push_back(value);
    gp_.copies.emplace_back();
    gp_.sigs.emplace_back();
    gp_.layouts.emplace_back();
    gp_.compute.emplace_back();
    return int(gp_.problem.groups.size()) - 1;
  }

  // Adds the cost of reading value v into `want` for each choice of group `to`, `weight` times:
  // an edge from v's group or, for a fixed layout, the reader's own cost.
  void read(int v, int to, const std::function<const NdSbp*(int choice)>& want,
            bool same_or_forbidden, bool gradient, double weight,
            const StreamedFn& streamed = nullptr) {
    const auto price = [&](const NdSbp& from, const NdSbp& w, int b) {
      if (same_or_forbidden) return w == from ? 0.0 : kForbidden;
      if (gradient) return weight * bucketed(v, from, w);
      const Streamed s = streamed ? streamed(from, b) : Streamed{};
      return weight * (std::max(0.0, boxing(v, from, w) - s.hidden) + s.latency);
    };
    Group& reader = gp_.problem.groups[size_t(to)];
    const Origin& o = origin_[size_t(v)];
    if (o.group < 0) {
      for (size_t b = 0; b < reader.cost.size(); ++b)
        if (const NdSbp* w = want(int(b))) reader.cost[b] += price(o.fixed, *w, int(b));
      return;
    }
    const size_t na = gp_.problem.groups[size_t(o.group)].cost.size(), nb = reader.cost.size();
    auto [it, fresh] = edge_of_.try_emplace({o.group, to}, gp_.problem.edges.size());
    if (fresh) gp_.problem.edges.push_back({o.group, to, std::vector<double>(na * nb, 0.0)});
    Edge& e = gp_.problem.edges[it->second];
    for (size_t a = 0; a < na; ++a)
      for (size_t b = 0; b < nb; ++b)
        if (const NdSbp* w = want(int(b)))
          e.cost[a * nb + b] += price(layout_of(v, int(a)), *w, int(b));
  }

  // Variables: a group each, but a copied layer's take their counterpart's (adding their memory).
  void add_variables() {
    for (int copies : {0, 1})
      for (const graph::Variable& var : g_.variables()) {
        const Value& v = values_[size_t(var.value)];
        const int rep = repeats_.value_rep[size_t(var.value)];
        if (!v.is_global() || (rep != var.value) != bool(copies)) continue;
        if (o_.fixed.count(var.value)) {
          gp_.constant_memory += bytes(v, v.nd_sbp);
          continue;
        }
        int grp = origin_[size_t(rep)].group;
        if (copies && grp >= 0) {
          gp_.copies[size_t(grp)].push_back(var.value);
        } else {  // a layer's first copy, or a copy whose counterpart is fixed
          grp = new_group("variable %" + std::to_string(var.value), -1, var.value);
          gp_.layouts[size_t(grp)] = candidate_layouts(v.shape, *v.placement);
          const size_t choices = gp_.layouts[size_t(grp)].size();
          gp_.problem.groups[size_t(grp)].cost.assign(choices, 0.0);
          gp_.compute[size_t(grp)].assign(choices, 0.0);
          gp_.problem.groups[size_t(grp)].memory.assign(choices, 0.0);
        }
        for (size_t b = 0; b < gp_.layouts[size_t(grp)].size(); ++b)
          gp_.problem.groups[size_t(grp)].memory[b] += bytes(v, gp_.layouts[size_t(grp)][b]);
        origin_[size_t(var.value)].group = grp;
      }
  }

  // A parameter's gradient doubles its memory (once, however many micro-batches add to it).
  void add_gradients() {
    for (int param : with_gradients(g_))
      if (o_.fixed.count(param)) {
        gp_.constant_memory += bytes(values_[size_t(param)], values_[size_t(param)].nd_sbp);
      } else if (const int grp = origin_[size_t(param)].group; grp >= 0) {
        Group& group = gp_.problem.groups[size_t(grp)];
        for (size_t b = 0; b < group.memory.size(); ++b)
          group.memory[b] += bytes(values_[size_t(param)], gp_.layouts[size_t(grp)][b]);
      }
  }

  // Global ops: a group each with their signatures and computes, a copy adding its compute to
  // its counterpart's group.
  void add_ops() {
    const ClusterSpec& cluster = cache_.cluster();
    for (int copies : {0, 1})
      for (size_t i = 0; i < nodes_.size(); ++i) {
        const Node& n = nodes_[i];
        const int rep = repeats_.node_rep[i];
        if (n.kind != NodeKind::kOp || (rep != int(i)) != bool(copies)) continue;
        const std::optional<Placement> placement = graph::placement_of(g_, n);
        if (!placement) continue;
        if (copies) {
          group_of_[i] = group_of_[size_t(rep)];
          gp_.copies[size_t(group_of_[i])].push_back(int(i));
          continue;
        }
        // Any layout for the inputs: the candidates are all the rule allows (in-place ones are
        // filtered below), and what reading each input costs is the edges'.
        const NdSbp any(std::vector<Sbp>(size_t(placement->ndim()), Sbp::broadcast()));
        graph::NodeCall node_call(g_, n, *placement, [&](size_t) { return &any; });
        SbpCall& call = node_call.call();
        call.inplace = false;
        const int grp = group_of_[i] =
            new_group(n.name() + " (node " + std::to_string(i) + ")", int(i), -1);
        for (NdSbpSignature& sig : candidate_signatures(call)) {
          if (n.op->inplace && !(sig.out[0] == sig.in[0])) continue;
          const double seconds = compute_seconds(call, sig, cluster) * runs(i);
          gp_.problem.groups[size_t(grp)].cost.push_back(seconds);
          gp_.compute[size_t(grp)].push_back(seconds);
          gp_.sigs[size_t(grp)].push_back(std::move(sig));
        }
        if (gp_.sigs[size_t(grp)].empty()) fail(n.name().c_str(), "has no signature to plan with");
      }
    for (size_t grp = 0; grp < gp_.node.size(); ++grp)
      for (size_t b = 0; b < gp_.compute[grp].size(); ++b) {
        gp_.compute[grp][b] *= double(1 + gp_.copies[grp].size());
        gp_.problem.groups[grp].cost[b] = gp_.compute[grp][b];
      }
  }

  // Activations: a forward output that the backward reads (directly or through a view) is held
  // from its op to the backward, so all of them are live when the forward ends: their bytes in
  // their op's output layouts count against the budget with the variables' (a bound on the
  // step's peak). Each copy of a repeated layer holds its own.
  void add_activations() {
    const std::vector<int> owner = graph::memory_owner(g_);
    std::vector<bool> saved(values_.size(), false);
    for (const Node& n : nodes_)
      if (o_.activations > 0 && n.backward)
        for (int id : n.inputs)
          if (id >= 0) saved[size_t(owner[size_t(id)])] = true;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.kind != NodeKind::kOp || n.backward || repeats_.node_rep[i] != int(i)) continue;
      const int grp = group_of_[i];
      for (size_t j = 0; j < n.outputs.size(); ++j) {
        const int v = n.outputs[j];
        if (owner[size_t(v)] != v || !saved[size_t(v)]) continue;
        if (grp < 0) {
          gp_.constant_memory += o_.activations * double(graph::bytes_per_rank(values_[size_t(v)]));
          continue;
        }
        Group& group = gp_.problem.groups[size_t(grp)];
        if (group.memory.empty()) group.memory.assign(group.cost.size(), 0.0);
        for (size_t b = 0; b < group.memory.size(); ++b)
          group.memory[b] += o_.activations * double(1 + gp_.copies[size_t(grp)].size()) *
                             bytes(values_[size_t(v)], gp_.sigs[size_t(grp)][b].out[j]);
      }
    }
  }

  // Where every value's layout comes from, in step order (an in-place result is its input's).
  void trace_origins() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.kind == NodeKind::kBoxing && n.grad_of >= 0 && origin_[size_t(n.grad_of)].group >= 0 &&
          values_[size_t(n.inputs[0])].is_global())
        origin_[size_t(n.outputs[0])] = origin_[size_t(n.grad_of)];  // the parameter's layout
      if (group_of_[i] < 0) continue;
      for (size_t j = 0; j < n.outputs.size(); ++j) {
        Origin& o = origin_[size_t(n.outputs[j])];
        if (n.op->inplace && j == 0) {
          o = origin_[size_t(n.inputs[0])];
        } else {
          o.group = group_of_[i];
          o.output = int(j);
        }
      }
    }
  }

  // What reading each value costs. A read from within a copied layer is its counterpart's,
  // counted once per copy there.
  void add_reads() {
    const std::vector<bool> in_place =
        o_.fixed_in_place ? fixed_derived(g_, o_.fixed, [&](size_t i) { return once(i); })
                          : std::vector<bool>(values_.size(), false);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      const int rep = repeats_.node_rep[i];
      // How many times the read of value v by this node is to be counted (0: its counterpart's).
      const double step_part = runs(i);
      // A gradient's reduction is once a step too: weighed here unless its node, after the
      // backward (a reduction deferred past the micro-batches), already is.
      const double grad_weight = once(i) ? 1.0 : o_.update_weight;
      const auto weight = [&](int v) {
        if (!repeats_.internal(g_, int(i), v)) return step_part;
        return rep == int(i) ? step_part * double(repeats_.copies[i]) : 0.0;
      };
      if (n.kind == NodeKind::kBoxing) {
        read_through_boxing(n, weight(n.inputs[0]), grad_weight);
        continue;
      }
      const int grp = group_of_[i];
      if (grp < 0) continue;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int id = n.inputs[k];
        if (id < 0 || !values_[size_t(id)].is_global() || weight(id) == 0) continue;
        const bool kept_read = !once(i) && in_place[size_t(id)];
        read_input(i, k, kept_read, weight(id));
      }
    }
  }

  // A boxing node's read of its input: a gradient taking its parameter's layout (an edge to the
  // parameter's group), or an annotation converting the value to a fixed layout (paid by the
  // value's group).
  void read_through_boxing(const Node& n, double weight, double grad_weight) {
    const int in = n.inputs[0], out = n.outputs[0];
    if (!values_[size_t(in)].is_global() || weight == 0) return;
    if (n.grad_of >= 0 && origin_[size_t(n.grad_of)].group >= 0) {
      const int param = origin_[size_t(n.grad_of)].group;
      if (origin_[size_t(in)].group == param) return;
      read(
          in, param, [&](int b) { return &gp_.layouts[size_t(param)][size_t(b)]; }, false, true,
          weight * grad_weight);
      return;
    }
    const NdSbp target = values_[size_t(out)].nd_sbp;
    const Origin& o = origin_[size_t(in)];
    const auto price = [&](const NdSbp& from) {
      return weight *
             (n.param_grad ? grad_weight * bucketed(in, from, target) : boxing(in, from, target));
    };
    if (o.group < 0) {
      gp_.constant_seconds += price(o.fixed);
      return;
    }
    Group& src = gp_.problem.groups[size_t(o.group)];
    for (size_t a = 0; a < src.cost.size(); ++a) src.cost[a] += price(layout_of(in, int(a)));
  }

  // Op node i's read of its input k, `weight` times; `kept_read`: a fixed variable (or a view
  // of one) that fixed_in_place reads as it is stored.
  void read_input(size_t i, size_t k, bool kept_read, double weight) {
    const Node& n = nodes_[i];
    const int grp = group_of_[i], id = n.inputs[k];
    const std::vector<NdSbpSignature>& sigs = gp_.sigs[size_t(grp)];
    if (kept_read && origin_[size_t(id)].group < 0 &&
        std::none_of(sigs.begin(), sigs.end(), [&](const NdSbpSignature& sig) {
          return sig.in[k] == values_[size_t(id)].nd_sbp;
        }))
      fail("auto_parallel", n.name(), " (node ", i, ") cannot read ",
           o_.name_of ? o_.name_of(id) : "%" + std::to_string(id), " as it is kept, ",
           values_[size_t(id)].nd_sbp.str(), ": no signature of ", n.name(), " takes its input ", k,
           " so (in_place=True reads kept parameters as stored; keep another layout, or plan "
           "without in_place)");
    const bool as_it_is = (n.op->inplace && k == 0) || kept_read;
    // A streamed input's gather hides behind its share of one run's compute; the exchanges'
    // latency is shared among the streamed inputs.
    const auto streamed = [&](const NdSbp& from, int b) {
      const NdSbp& w = sigs[size_t(b)].in[k];
      if (streamed_axes(*n.op, k, from, w).empty()) return Streamed{};
      const double one_run = gp_.compute[size_t(grp)][size_t(b)] /
                             (runs(i) * double(1 + gp_.copies[size_t(grp)].size()));
      const double share = 1.0 / double(std::popcount(n.op->streamed_inputs));
      const Shape probe = stream_probe(*n.op, values_[size_t(id)].shape);
      return Streamed{one_run * share, convert(id, probe, from, w) * share};
    };
    read(
        id, grp, [&](int b) { return &sigs[size_t(b)].in[k]; }, as_it_is, false, weight,
        n.op->streamed_inputs ? StreamedFn(streamed) : nullptr);
  }

  const Graph& g_;
  PlanCache& cache_;
  const ProblemOptions& o_;
  const std::vector<Value>& values_;
  const std::vector<Node>& nodes_;
  const Repeats repeats_;
  GraphProblem gp_;
  size_t last_backward_ = SIZE_MAX;  // none: no node is once a step
  std::vector<Origin> origin_;
  std::vector<const Placement*> placements_;
  std::vector<int> placement_id_;
  std::unordered_map<PriceKey, double, PriceKey::Hash> prices_;
  std::map<std::pair<int, int>, size_t> edge_of_;
  std::vector<int> group_of_;
};

}  // namespace

GraphProblem build_problem(const Graph& g, PlanCache& cache, double memory_budget,
                           const ProblemOptions& options) {
  return ProblemBuilder(g, cache, memory_budget, options).build();
}

}  // namespace ofl::internal::auto_parallel
