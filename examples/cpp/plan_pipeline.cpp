// Planning from C++: the pipeline for the inputs flow.auto_parallel.plan_pipeline(..., save=DIR)
// saved (the traced stage steps, the cluster, the budget), without the model's Python code.
//   plan_pipeline DIR [MEMORY_BUDGET_BYTES]
// Prints the plan as JSON: stages, layer split, micro-batches, recomputation, predicted times and
// memory, and the chosen stage's layouts by variable name.
#include <oneflowlike/oneflowlike.h>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: " << argv[0] << " DIR [MEMORY_BUDGET_BYTES]\n";
    return 2;
  }
  try {
    std::optional<double> budget;
    if (argc == 3) budget = std::stod(argv[2]);
    const ofl::PipelinePlan p = ofl::plan_pipeline(argv[1], budget);
    const nlohmann::json out = {{"stages", p.stages},
                                {"devices_per_stage", p.devices_per_stage},
                                {"micro_batches", p.micro_batches},
                                {"recompute", p.recompute},
                                {"chunks", p.chunks},
                                {"first_layer", p.first_layer},
                                {"stage_seconds", p.stage_seconds},
                                {"stage_bytes", p.stage_bytes},
                                {"seconds", p.seconds},
                                {"description", p.description},
                                {"options", p.options},
                                {"layouts", p.layouts}};
    std::cout << out.dump(1) << "\n";
  } catch (const std::exception& e) {  // ofl::Error, or a budget that is not a number
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
