// The auto-parallel planner on a traced step (DESIGN.md, "The planner"): every global op's
// signature and every global variable's layout (parameters and optimizer states) are chosen
// together, exactly under the cost model, within a per-device memory budget. Graph inputs keep
// their SBPs and to_global inside build() is a constraint; a parameter's gradient takes the
// parameter's chosen layout, so data, tensor, ZeRO-like and 2-d layouts are points of one search.
//
// Costs: each op's roofline compute on its largest shard (sbp/select.h) and the boxing planner's
// price for every conversion between a value's layout and its reader's. Memory: the variables'
// and the parameters' gradients' bytes on a device, and the activations the backward reads.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "boxing/search.h"
#include "graph/auto_parallel/problem.h"
#include "graph/ir.h"

namespace ofl::internal::auto_parallel {

struct Plan {
  std::vector<NdSbpSignature> sig;  // per node of the graph (empty: not a global op)
  std::map<int, NdSbp> layout;      // per global variable's value id
  double compute_seconds = 0, comm_seconds = 0;
  double memory = 0;  // bytes per device: variables, gradients and (if counted) activations
  int layers = 0, copied_layers = 0;  // repeated layers, and those that took another's choices
  // No plan is faster (the solver's proof): seconds(), but for the largest problems (solve()).
  double lower_bound_seconds = 0;
  // The compiled step's predicted peak bytes per device (graph::peak_bytes and the variables),
  // which the budget does not bound (transients come on top of the count); 0 when not computed
  // (no finite budget, or activations not counted).
  double peak = 0;
  double seconds() const { return compute_seconds + comm_seconds; }
};

// The problem the graph poses (for tests: brute_force on it gives the same plan's cost).
struct GraphProblem {
  Problem problem;
  // Per group: the node it chooses a signature for, or -1 for a variable (then `value`).
  std::vector<int> node;
  std::vector<int> value;
  // Per group: the nodes (or variables) of copied layers that take its choice too.
  std::vector<std::vector<int>> copies;
  std::vector<std::vector<NdSbpSignature>> sigs;  // a node group's choices
  std::vector<std::vector<NdSbp>> layouts;        // a variable group's choices
  std::vector<std::vector<double>> compute;       // per group and choice: the compute seconds
  double constant_seconds = 0;                    // conversions between fixed layouts
  double constant_memory = 0;                     // fixed variables' bytes per device
  int layers = 0, copied_layers = 0;              // repeated layers, and those solved as copies
};
// What build_problem poses. The variables whose value ids are in `fixed` keep their layouts
// (user constraints, a hand layout to price, or a plan already applied to the module); the ops'
// signatures are always chosen. With `merge_repeats`, a repeated layer's copies take its choices
// (layers.h): the problem has one layer's groups however deep the model, at the price of the
// copies' own best choices. The forward outputs the backward reads count against the budget
// `activations` times, in their ops' output layouts (all live when the forward ends): 0 not at
// all, 1 one micro-batch's, k the k micro-batches a pipeline stage holds in flight. The step's
// once-a-step part (the gradients' reductions and the optimizer's update, after the backward)
// counts `update_weight` times: 1/m when the step is one of m micro-batches sharing one update (a
// pipeline stage). The forward (its ops and the conversions they read through) counts
// `forward_weight` times: 2 when the stage recomputes it in the backward. With `fixed_in_place`,
// the fixed variables are also computed with as they are (no conversion between one, or a view or
// cast of one, and the forward's and backward's ops reading it): a hand layout priced as it runs,
// Megatron's tensor parallelism say, rather than with its weights gathered for the compute; an op
// that has no signature reading a kept variable as stored raises, naming both (`name_of`, default
// "%<id>").
struct ProblemOptions {
  std::set<int> fixed;
  bool merge_repeats = true;
  double activations = 1.0;
  double update_weight = 1.0;
  double forward_weight = 1.0;
  bool fixed_in_place = false;
  std::function<std::string(int)> name_of;
};
GraphProblem build_problem(const graph::Graph& g, PlanCache& cache, double memory_budget,
                           const ProblemOptions& options = {});
// The parameters (value ids) whose gradients the step computes.
std::set<int> with_gradients(const graph::Graph& g);
// Every variable's value id: to keep all their layouts.
std::set<int> all_variables(const graph::Graph& g);

// The cheapest plan of the traced (dead-code-free) graph within the budget. Graphs of up to
// kWholeGraphNodes nodes are solved whole (every layer its own choices); larger ones solve
// repeated layers once.
constexpr size_t kWholeGraphNodes = 5000;
// Raises when the budget leaves no plan, naming the least memory any plan needs, and when the
// kept variables and the budget contradict each other, naming the largest kept variables
// (`name_of`: a variable's name by value id; default "%<id>").
// How plan() weighs a step's parts (build_problem), and whether its repeated layers take one
// layout. plan_pipeline's stage steps: 1/m of the update for one of m micro-batches, the forward
// twice where the stage recomputes it, and one layout for every copy of a layer (the pipeline
// prices one traced layer for each of the model's, so distinct copies could not be applied).
struct PlanOptions {
  double update_weight = 1.0;
  double forward_weight = 1.0;
  bool merge_repeats = false;   // also for any graph of more than kWholeGraphNodes nodes
  bool fixed_in_place = false;  // build_problem's
};
// With weights other than 1, the plan's seconds weigh the update and the forward alike.
// `lighter`, if given, receives the plans of Solution::lighter (solve()).
Plan plan(const graph::Graph& g, PlanCache& cache, double memory_budget,
          const std::set<int>& fixed = {}, const std::function<std::string(int)>& name_of = nullptr,
          double activations = 1.0, const PlanOptions& options = {},
          std::vector<Plan>* lighter = nullptr);
// The plan's predicted peak bytes per device once compiled (lower_layout): the most bytes the
// step's values hold at once, and the variables.
double compiled_peak(const graph::Graph& g, const Plan& p, PlanCache& cache);
// The plan of a solution of build_problem's problem.
Plan plan_of(const graph::Graph& g, const GraphProblem& gp, const std::vector<int>& choice);

// The graph laid out by the plan (in place of the SBP pass): signatures, output layouts,
// variables' layouts and their gradients'.
graph::Graph apply(const graph::Graph& g, const Plan& plan);

// A variable's candidate layouts on a placement: per mesh axis B or a split of a dimension at
// least as long as the axis.
std::vector<NdSbp> candidate_layouts(const Shape& shape, const Placement& placement);

}  // namespace ofl::internal::auto_parallel
