#include "graph/auto_parallel/planner.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

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

// The parameters (value ids) whose gradients the step computes.
std::set<int> with_gradients(const Graph& g) {
  std::set<int> out;
  for (const Node& n : g.nodes())
    if (n.kind == NodeKind::kBoxing && n.grad_of >= 0) out.insert(n.grad_of);
  return out;
}

std::set<int> all_variables(const Graph& g) {
  std::set<int> out;
  for (const graph::Variable& v : g.variables()) out.insert(v.value);
  return out;
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
  const GraphProblem gp =
      build_problem(g, cache, memory_budget,
                    {.fixed = fixed,
                     .merge_repeats = options.merge_repeats || g.nodes().size() > kWholeGraphNodes,
                     .activations = activations,
                     .update_weight = options.update_weight,
                     .forward_weight = options.forward_weight,
                     .fixed_in_place = options.fixed_in_place,
                     .name_of = name_of});
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
