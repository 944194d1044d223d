#include "graph/auto_parallel/pipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "core/parallel.h"
#include "graph/passes/passes.h"

namespace ofl::internal::auto_parallel {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Each step's plan runs as a task of its own (the planner's solves are long and independent).
template <class F>
void each_in_parallel(size_t n, F&& f) {
  parallel_for(int64_t(n), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) f(size_t(i));
  });
}

// The step as the plan lays it out and graph mode compiles it, priced per row: the embeddings,
// each traced layer, the head.
std::vector<LayerCost> rows_of(const StageStep& step, const Plan& plan, PlanCache& cache) {
  std::vector<LayerCost> rows =
      layer_costs(graph::lower_layout(apply(*step.traced, plan), &cache), cache);
  if (rows.size() < 3)
    fail("auto_parallel",
         "plan_pipeline: the stage's step has no repeated layers (nn.Graph finds them as the "
         "children of a ModuleList that share one structure): give its model at least two");
  return rows;
}

// The option a step's plan gives: its traced layers' mean costs (rows between the first and the
// last) for each of the model's layers.
StagePlan option_of(int step_index, const StageStep& step, Plan plan, double budget,
                    bool activations, const std::vector<LayerCost>& rows, int layers,
                    int total_devices, const ClusterSpec& cluster) {
  const double traced = double(rows.size() - 2);
  LayerCost layer;
  for (size_t r = 1; r + 1 < rows.size(); ++r) {
    layer.forward += rows[r].forward / traced;
    layer.backward += rows[r].backward / traced;
    layer.update += rows[r].update / traced;
    layer.state_bytes += rows[r].state_bytes / traced;
    layer.activation_bytes += rows[r].activation_bytes / traced;
    layer.input_bytes += rows[r].input_bytes / traced;
  }
  StageOption costs{.devices_per_stage = step.devices_per_stage,
                    .micro_batches = step.micro_batches};
  // A stage boundary sends one micro-batch's layer input to the next stage's first device.
  if (step.devices_per_stage < total_devices)
    costs.send_seconds = cluster.send_recv(0, step.devices_per_stage, layer.input_bytes);
  costs.layers.push_back(rows.front());
  costs.layers.insert(costs.layers.end(), size_t(layers), layer);
  costs.layers.push_back(rows.back());
  return {step_index, std::move(plan), budget, activations, std::move(costs)};
}

// Each option once per schedule (chunks a device): option k's copies at k * chunks.size() + i.
std::vector<StageOption> costs_of(const std::vector<StagePlan>& options,
                                  const std::vector<int>& chunks) {
  std::vector<StageOption> costs;
  for (const StagePlan& o : options)
    for (int v : chunks) {
      costs.push_back(o.costs);
      costs.back().chunks = v;
    }
  return costs;
}

// The least predicted step over `options` within the budget (inf when nothing fits).
double best_seconds(const std::vector<StagePlan>& options, int total_devices, double budget,
                    Recompute recompute, const std::vector<int>& chunks) {
  try {
    return plan_stages(costs_of(options, chunks), total_devices, budget, recompute).seconds;
  } catch (const Error&) {
    return kInf;
  }
}

// The budgets a step's layouts are planned within where its fastest layouts (priced as `rows`)
// overrun the budget's share for the stage's layers. Counting the state alone, and counting one
// micro-batch's activations too (plan_stages multiplies them by the micro-batches in flight).
// Both, even for a stage that recomputes: layouts with fewer activations also keep smaller
// inputs (on the 310.1B row, leaving those out for steps planned to recompute cost 3%). And
// where the micro-batches in flight (1F1B's first stage holds min(S, m)) make the activations
// overrun the share, layouts counting them that many times, within the share and the state of
// the rows before and after the layers (Korthikanti et al.'s 1T with selective recomputation:
// its sequence-parallel layer norms).
struct Within {
  double bytes;
  double activations;
};
std::vector<Within> budgets_of(const StageStep& step, const std::vector<LayerCost>& rows,
                               int layers, int total_devices, double budget) {
  const int stages = total_devices / step.devices_per_stage;
  const double traced = double(rows.size() - 2);
  const double share = budget * traced / std::ceil(double(layers) / stages);
  double state = 0, held = 0, all_state = 0;
  for (size_t r = 1; r + 1 < rows.size(); ++r) {
    state += rows[r].state_bytes;
    held += rows[r].state_bytes + rows[r].activation_bytes;
  }
  for (const LayerCost& r : rows) all_state += r.state_bytes;
  std::vector<Within> out;
  if (state > share) out.push_back({share, 0});
  if (held > share) out.push_back({share, 1});
  const double in_flight = std::min(stages, step.micro_batches);
  if (in_flight > 1 && state + in_flight * (held - state) > share)
    out.push_back({share + all_state - state, in_flight});
  return out;
}

}  // namespace

PipelineSearch search_pipeline(const std::vector<StageStep>& steps, int layers, int total_devices,
                               double budget, PlanCache& cache, Recompute recompute,
                               const std::vector<int>& chunks) {
  if (steps.empty()) fail("auto_parallel", "plan_pipeline: no stage size to plan");
  if (chunks.empty() || *std::min_element(chunks.begin(), chunks.end()) < 1)
    fail("auto_parallel",
         "plan_pipeline: chunks (virtual stages a device) must be one or more "
         "counts of at least 1");
  // A stage that recomputes runs its forward twice: its layouts are planned with the forward
  // weighed so, and with it once where it may keep its activations.
  std::vector<double> forward_weights;
  if (recompute != Recompute::kAlways) forward_weights.push_back(1.0);
  if (recompute != Recompute::kNever) forward_weights.push_back(2.0);
  struct Task {
    size_t step;
    double forward_weight;
  };
  std::vector<Task> tasks;
  for (size_t i = 0; i < steps.size(); ++i)
    for (double w : forward_weights) tasks.push_back({i, w});
  const auto plan_step = [&](const Task& t, double within, double activations,
                             std::vector<Plan>* lighter = nullptr) {
    const StageStep& s = steps[t.step];
    return plan(*s.traced, cache, within, s.fixed, s.name_of, activations,
                {.update_weight = 1.0 / s.micro_batches,
                 .forward_weight = t.forward_weight,
                 .merge_repeats = true,
                 .fixed_in_place = s.fixed_in_place},
                lighter);
  };
  const ClusterSpec& cluster = cache.cluster();
  PipelineSearch out;
  const auto add = [&](size_t i, Plan p, double within, bool activations) {
    const std::vector<LayerCost> rows = rows_of(steps[i], p, cache);
    out.options.push_back(option_of(int(i), steps[i], std::move(p), within, activations, rows,
                                    layers, total_devices, cluster));
    return rows;
  };
  // Each step's fastest layouts, on every core.
  std::vector<Plan> fastest(tasks.size());
  each_in_parallel(tasks.size(), [&](size_t k) { fastest[k] = plan_step(tasks[k], kInf, false); });
  struct Pending {
    double alone;  // the step's fastest layouts' predicted pipeline, with no budget
    int devices, micro_batches;
    size_t task;
    std::vector<LayerCost> rows;
    bool operator<(const Pending& o) const {
      return std::tie(alone, devices, micro_batches) <
             std::tie(o.alone, o.devices, o.micro_batches);
    }
  };
  std::vector<Pending> pending;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const StageStep& step = steps[tasks[k].step];
    // The forward weighed twice often lays the step out alike: one option then.
    if (k > 0 && tasks[k - 1].step == tasks[k].step && fastest[k].sig == fastest[k - 1].sig &&
        fastest[k].layout == fastest[k - 1].layout)
      continue;
    std::vector<LayerCost> rows = add(tasks[k].step, fastest[k], kInf, false);
    pending.push_back({best_seconds({out.options.back()}, total_devices, kInf, recompute, chunks),
                       step.devices_per_stage, step.micro_batches, k, std::move(rows)});
  }
  // Where those overrun the budget's share for the stage's layers, layouts within it (budgets_of).
  double found = best_seconds(out.options, total_devices, budget, recompute, chunks);
  std::stable_sort(pending.begin(), pending.end());
  // In waves of as many entries as threads, each wave's plans on every core (an entry's own
  // budgets are one to three plans, some of them long): the entries that may still beat the best
  // pipeline found when the wave starts.
  struct Job {
    size_t task;
    Within within;
    std::vector<Plan> plans;
  };
  const size_t wave = size_t(std::max(1, get_num_threads()));
  for (size_t next = 0; next < pending.size();) {
    std::vector<Job> jobs;
    for (size_t taken = 0; next < pending.size() && taken < wave; ++next) {
      const Pending& p = pending[next];
      if (p.alone >= found) continue;
      ++taken;
      for (const Within& w :
           budgets_of(steps[tasks[p.task].step], p.rows, layers, total_devices, budget))
        jobs.push_back({p.task, w, {}});
    }
    // Within the share, the plan least in time; where the share's knapsack was large, also
    // lighter plans found on the way: the share is a guess, and the memory they leave can keep
    // activations or fit fewer stages (on the 310.1B row a lighter plan's pipeline was 1.3x
    // faster than the share's fastest plan's).
    each_in_parallel(jobs.size(), [&](size_t k) {
      Job& job = jobs[k];
      try {
        std::vector<Plan> lighter;
        job.plans.push_back(
            plan_step(tasks[job.task], job.within.bytes, job.within.activations, &lighter));
        for (Plan& l : lighter) job.plans.push_back(std::move(l));
      } catch (const Error&) {
        // nothing fits the share: the other layouts stay the options
      }
    });
    for (Job& job : jobs)
      for (Plan& plan : job.plans)
        add(tasks[job.task].step, std::move(plan), job.within.bytes, job.within.activations > 0);
    found = best_seconds(out.options, total_devices, budget, recompute, chunks);
  }
  out.choice = plan_stages(costs_of(out.options, chunks), total_devices, budget, recompute);
  out.choice.option /= int(chunks.size());
  for (StagePlan& o : out.options)
    o.seconds = best_seconds({o}, total_devices, budget, recompute, chunks);
  return out;
}

Placement stage_placement(DeviceType type, int devices, const ClusterSpec& cluster, int first) {
  std::vector<int> ranks(static_cast<size_t>(devices));
  for (int r = 0; r < devices; ++r) ranks[size_t(r)] = first + r;
  const int per_node = cluster.devices_per_node;
  if (per_node > 1 && devices > per_node && devices % per_node == 0)
    return Placement(type, std::move(ranks), Shape{devices / per_node, per_node});
  return Placement(type, std::move(ranks), Shape{devices});
}

}  // namespace ofl::internal::auto_parallel
