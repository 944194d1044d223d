// plan_pipeline's search (DESIGN.md, "The planner"): a stage's step laid out by the intra-op
// planner at every stage size and micro-batch count, each plan priced per layer (stages.h's
// LayerCost), and the inter-op search (plan_stages) over all of them. Python traces the steps
// (the model is Python code); everything after the tracing is here, planned on every core.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/auto_parallel/planner.h"
#include "graph/auto_parallel/stages.h"
#include "sbp/placement.h"

namespace ofl::internal::auto_parallel {

// The training step of one micro-batch on one stage's placement (stage_placement), traced for a
// step of `micro_batches` micro-batches. Its model holds two or more of the repeated layers
// (graph::Node::layer): each one's costs are per layer, used for every layer of the model.
struct StageStep {
  int devices_per_stage = 1;
  int micro_batches = 1;
  std::shared_ptr<const graph::Graph> traced;  // dead code dropped
  std::set<int> fixed;  // variables (value ids) that keep their layouts: a hand layout priced
  bool fixed_in_place = false;              // and are computed with as they are (build_problem's)
  std::function<std::string(int)> name_of;  // a variable's name by value id, for errors
};

// One option the search weighed: a step's intra-op plan and the costs priced from it.
struct StagePlan {
  int step = 0;  // index into the steps
  Plan plan;
  double budget = 0;         // bytes per device the plan was made within (inf: its fastest)
  bool activations = false;  // whether the budget counted one micro-batch's activations
  StageOption costs;         // rows: before the layers, each of the model's layers, after them
  // The least step this option alone predicts within the budget (inf: nothing fits): what the
  // search weighed against the choice.
  double seconds = std::numeric_limits<double>::infinity();
};

struct PipelineSearch {
  std::vector<StagePlan> options;  // in the order weighed
  PipelineChoice choice;           // choice.option indexes options
};

// The pipeline least in predicted step time within `budget` bytes per device, for a model of
// `layers` repeated layers on `total_devices` devices. For each step, its fastest layouts (the
// stage's update weighing 1/m: its micro-batches share it); then, in the order of the step each
// alone predicts, where those layouts overrun the budget's share for the stage's layers, layouts
// within that share, without and with one micro-batch's activations counted (and, where the
// micro-batches in flight make them overrun it, counted once for each), skipped where even
// the fastest layouts predict no faster a step than the best pipeline found that fits (a step
// that keeps its variables' layouts still chooses its activations': Megatron's sequence-parallel
// layer norms where memory binds). plan_stages then weighs every option, under each
// schedule of `chunks` virtual stages a device (1: 1F1B; more: interleaved). Raises when a step
// has no repeated layers, and when nothing fits (naming the least memory needed).
PipelineSearch search_pipeline(const std::vector<StageStep>& steps, int layers, int total_devices,
                               double budget, PlanCache& cache,
                               Recompute recompute = Recompute::kEither,
                               const std::vector<int>& chunks = {1});

// What search_pipeline plans from, whole: what plan_pipeline(save=) writes, for the C++ API (and
// any later run) to plan the same pipeline without the model's Python code.
struct PipelineInputs {
  std::vector<StageStep> steps;
  int layers = 0;
  int total_devices = 0;
  double budget = std::numeric_limits<double>::infinity();  // bytes per device
  ClusterSpec cluster;
  Recompute recompute = Recompute::kEither;
  std::vector<int> chunks{1};
};

// Writes `in` to the folder `dir` (made if missing): pipeline.json holds the numbers, the cluster
// and per step its stage size, micro-batches, and its variables' names, kept layouts and whether
// each is trained; step<i>.json holds step i's traced graph (graph/serialize.h, the planner's
// node marks included). No tensor data: the planner reads shapes.
void save_pipeline_inputs(const std::string& dir, const PipelineInputs& in);
// What save_pipeline_inputs wrote, its variables meta tensors (the planner needs no data).
// Raises naming the file and the entry for a missing, malformed or foreign folder.
PipelineInputs load_pipeline_inputs(const std::string& dir);

// The placement of one stage of `devices` devices on `cluster`, ranks first .. first + devices
// - 1: a (nodes, devices per node) mesh once it spans whole nodes, else a line.
Placement stage_placement(DeviceType type, int devices, const ClusterSpec& cluster, int first = 0);

}  // namespace ofl::internal::auto_parallel
