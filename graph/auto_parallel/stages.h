// The planner's inter-op search (DESIGN.md, "The planner"): how many pipeline stages, which
// layers each runs, how many micro-batches and whether to recompute activations, on top of the
// intra-op plans (every op's signature on a stage's devices) that price each layer. Alpa's
// decomposition: the intra-op planner gives each layer's costs for a stage size and micro-batch
// size; this search is exact over the rest, under the model below.
#pragma once
#include <string>
#include <vector>

#include "boxing/search.h"
#include "graph/ir.h"

namespace ofl::internal::auto_parallel {

// One layer's costs on one stage's devices at one micro-batch size (from the intra-op plan).
// Layers are in model order; the embeddings and the head count as layers of their own.
struct LayerCost {
  double forward = 0, backward = 0;  // seconds per micro-batch
  double update = 0;                 // seconds per step: gradient reductions and the optimizer
  double state_bytes = 0;            // per device: parameters, gradients, optimizer states
  double activation_bytes = 0;       // per device and micro-batch: what its backward reads
  double input_bytes = 0;            // per device and micro-batch: its input (recompute keeps it)
};

// The layers' costs for stages of `devices_per_stage` devices running `micro_batches` micro-
// batches per step, and what sending one micro-batch's activation between stages costs.
struct StageOption {
  int devices_per_stage = 1;
  int micro_batches = 1;
  // Virtual stages per device (Megatron-LM's interleaved 1F1B when > 1): the layers split evenly
  // into stages x chunks pieces, device s running pieces s, s + stages, ...
  int chunks = 1;
  double send_seconds = 0;  // one way, per micro-batch and stage boundary
  std::vector<LayerCost> layers;
};

struct PipelineChoice {
  int option = -1;  // the StageOption chosen, by index
  int stages = 1;
  int devices_per_stage = 1;
  int micro_batches = 1;
  int chunks = 1;  // virtual stages per device (StageOption::chunks)
  bool recompute = false;
  // Per stage (per virtual stage: stages x chunks of them, virtual stage c on device c % stages,
  // where chunks > 1): its first layer (it runs to the next one's).
  std::vector<int> first_layer;
  std::vector<double> stage_seconds;  // per device: forward + backward of one micro-batch
  std::vector<double> stage_bytes;    // per device: memory
  double seconds = 0;                 // the predicted step
  std::string str() const;            // "4 stages x 8 devices, 16 micro-batches, ..."
};

// Whether a pipeline recomputes its activations in the backward: the search's choice (the faster
// that fits), or forced one way (plan_pipeline(recompute=True / False): a configuration priced as
// it ran).
enum class Recompute : uint8_t { kEither, kAlways, kNever };
const char* recompute_name(Recompute r);  // "either", "always", "never"
Recompute parse_recompute(const std::string& name);

// Over every option (a stage size must divide total_devices; its stage count S =
// total_devices / devices_per_stage must not exceed the layers), the recomputation settings
// `recompute` allows and
// every split of the layers into S contiguous non-empty stages, the choice with the least
// predicted step under 1F1B:
//   T = sum_s t_s + max_s ((m - 1) t_s + U_s)
// t_s: stage s's forward and backward of one micro-batch (recomputation adds the forward again),
// plus receiving from its neighbours (send_seconds each way); U_s: its layers' updates, once per
// step. The first term fills and drains the pipeline, the second is the last stage to finish its
// m - 1 other micro-batches and its update. Each stage fits `budget` bytes per device:
//   state + min(S - s, m) x (activations, or with recompute the layers' inputs) (+ the largest
//   layer's activations while it recomputes).
// Exact: a min-max dynamic program over (stage, layers so far) per option. Raises when nothing
// fits, with the least memory any choice needs.
//
// An option of chunks v > 1 (the interleaved schedule) splits the repeated layers into S x v
// virtual stages of at least a layer each (the option is skipped where there are fewer layers),
// the rows before and after them going to the first and last; device s runs virtual stages s,
// s + S, ... How many layers each device runs is chosen (Llama 3's 126 layers on 16 stages: not
// every device the same count), its chunks as even as they go; exact where the repeated layers
// cost alike, as plan_pipeline's do. Then
//   T = (1/v) sum_s t_s + max_s ((m - 1/v) t_s + U_s)
// (the bubble shrinks v-fold: (m + (S - 1)/v) t for equal stages, Narayanan et al. 2021), t_s
// with 2v - [s = 0] - [s = S - 1] sends, and device s holds
//   min(2 (S - s - 1) + (v - 1) S + 1, m v)
// virtual stages' activations of a micro-batch in flight (Megatron-LM's warm-up, plus the one
// running), each 1/v of its layers'.
PipelineChoice plan_stages(const std::vector<StageOption>& options, int total_devices,
                           double budget, Recompute recompute = Recompute::kEither);

// The layers of a compiled step of one micro-batch (its repeated layers tagged, graph::Node::
// layer): the embeddings before the first (row 0), each repeated layer, the head after the last
// (row L + 1), each priced by the cost model (predict.h). Untagged nodes go by where they are
// (forward before the layers: the embeddings; backward before them: the head); a parameter
// belongs where the forward first reads it, and its gradient's reduction and update there too.
std::vector<LayerCost> layer_costs(const graph::Graph& compiled, PlanCache& cache);

// The predicted step of one choice under the same model (for tests and explain()); first_layer
// per virtual stage where option.chunks > 1.
double pipeline_seconds(const StageOption& option, const std::vector<int>& first_layer,
                        bool recompute, std::vector<double>* stage_seconds = nullptr);
// Device s's memory under the same model.
double stage_bytes(const StageOption& option, const std::vector<int>& first_layer, int s,
                   bool recompute);

}  // namespace ofl::internal::auto_parallel
