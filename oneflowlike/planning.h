// Planning from C++: the pipeline flow.auto_parallel.plan_pipeline chooses, planned again from
// the inputs it saved (plan_pipeline(..., save=dir)): each stage step as traced, the cluster, the
// layers, the devices and the memory budget. The same search as Python's, on every core; the
// model's Python code is not needed.
//   ofl::PipelinePlan p = ofl::plan_pipeline("gpt_pipeline");
//   std::cout << p.description << ": " << p.seconds << " s per step\n";
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ofl {

struct PipelinePlan {
  int stages = 1;
  int devices_per_stage = 1;
  int micro_batches = 1;
  bool recompute = false;  // activations recomputed in the backward
  // Per stage, its first row: 0 is what comes before the repeated layers, 1..L the layers, L + 1
  // what comes after them (stage s runs up to stage s + 1's first row). With chunks > 1, per
  // virtual stage (stages x chunks of them; virtual stage c runs on stage c % stages's devices).
  std::vector<int> first_layer;
  std::vector<double> stage_seconds;  // per stage: forward and backward of one micro-batch
  std::vector<double> stage_bytes;    // per stage: memory per device
  double seconds = 0;                 // the predicted step
  std::string description;            // "2 stages x 4 devices, 8 micro-batches, ..."
  // (devices per stage, micro-batches) of every option the search weighed, in its order.
  std::vector<std::pair<int, int>> options;
  // Per option, the least step it predicts within the budget alone (inf: nothing fits).
  std::vector<double> option_seconds;
  // The chosen stage's variables by name (a parameter as its module names it, an optimizer
  // state as "state:<parameter>.<key>"): their SBP, "(S(0), B)" for a 2-D mesh, "S(1)" for 1-D.
  std::map<std::string, std::string> layouts;
  // Virtual stages a device: 1 for 1F1B, more for the interleaved schedule (plan_pipeline's
  // chunks, saved with the inputs).
  int chunks = 1;
};

// The pipeline least in predicted step time for the inputs plan_pipeline saved in `dir`, within
// `memory_budget` bytes per device (none: the saved budget). Throws ofl::Error naming the file
// and the entry for a missing, damaged or foreign folder, and when nothing fits (naming the
// least memory any choice needs).
PipelinePlan plan_pipeline(const std::string& dir,
                           std::optional<double> memory_budget = std::nullopt);

}  // namespace ofl
