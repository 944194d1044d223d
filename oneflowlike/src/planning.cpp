#include "oneflowlike/planning.h"

#include "graph/auto_parallel/pipeline.h"
#include "oneflowlike/src/api_util.h"

namespace ofl {

PipelinePlan plan_pipeline(const std::string& dir, std::optional<double> memory_budget) {
  namespace ap = internal::auto_parallel;
  return api::guarded([&] {
    ap::PipelineInputs in = ap::load_pipeline_inputs(dir);
    if (memory_budget) in.budget = *memory_budget;
    internal::PlanCache cache(in.cluster);
    const ap::PipelineSearch found = ap::search_pipeline(in.steps, in.layers, in.total_devices,
                                                         in.budget, cache, in.recompute, in.chunks);
    const internal::auto_parallel::PipelineChoice& c = found.choice;
    PipelinePlan out{c.stages,
                     c.devices_per_stage,
                     c.micro_batches,
                     c.recompute,
                     c.first_layer,
                     c.stage_seconds,
                     c.stage_bytes,
                     c.seconds,
                     c.str(),
                     {},
                     {}};
    out.chunks = c.chunks;
    for (const ap::StagePlan& o : found.options) {
      out.options.emplace_back(o.costs.devices_per_stage, o.costs.micro_batches);
      out.option_seconds.push_back(o.seconds);
    }
    const ap::StagePlan& chosen = found.options[size_t(c.option)];
    const ap::StageStep& step = in.steps[size_t(chosen.step)];
    for (const auto& [value, nd_sbp] : chosen.plan.layout)
      out.layouts[step.name_of(value)] = nd_sbp.str();
    return out;
  });
}

}  // namespace ofl
