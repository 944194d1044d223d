// Graph passes (DESIGN.md, "Graph mode"): each rewrites a Graph and is unit-tested on small
// hand-built graphs. compile() runs them in order; OFL_GRAPH_PRINT=1 prints the IR before the
// first pass and after each one (to stderr).
#pragma once
#include <limits>
#include <memory>

#include "boxing/fused_collectives.h"
#include "boxing/reshard.h"
#include "graph/ir.h"
#include "graph/pipeline/order.h"

namespace ofl::internal::graph {

// Drops nodes whose outputs nothing uses (transitively). Kept: nodes that write in place into
// a value the graph does not own (an input or variable: a parameter's update) and random ops,
// whose draws advance the generator as the eager calls would.
Graph dead_code(const Graph& g);

// Drops the views that give their input as it is (OpDef::identity: a slice of everything, a
// reshape to its own shape, an identity permutation): their readers read the input.
Graph drop_identity_views(const Graph& g);

// Gives every global value a layout: inputs, variables and boxing targets keep theirs; every
// other op on global values takes the eager rule's signature (sbp/select.h) given its inputs'
// layouts, boxing priced by `cache`'s plans. Sets each such node's `sig`.
Graph assign_sbp(const Graph& g, PlanCache& cache);

// Makes conversions explicit: a boxing node wherever an op's input is laid out otherwise than
// its signature wants; drops boxing nodes that convert nothing.
Graph insert_boxing(const Graph& g);

// Converts a value wanted in several layouts once to B, and each layout from there by a local
// slice, where the cost model prices that below the separate conversions.
Graph share_conversions(const Graph& g, PlanCache& cache);

// Fuses the parameters' gradient reductions (P(sum) -> B or S) into buckets of up to
// bucket_bytes, each one reduce node where its last member was (DDP's buckets).
Graph bucket_grads(const Graph& g, int64_t bucket_bytes = kGradBucketBytes);

// Fuses the split parameters' gathers (S -> B) into buckets of up to bucket_bytes, each one gather
// node issued when the previous bucket's last parameter comes into use (prefetch), ZeRO-3 / FSDP
// style: once in forward and again in backward, so that gathered parameters are not held in
// between.
inline constexpr int64_t kGatherBucketBytes = 1 << 19;  // half a MiB: FSDP-unit sized
Graph gather_params(const Graph& g, int64_t bucket_bytes = kGatherBucketBytes);

// Moves each conversion that communicates a value of at most max_bytes, computed by at most
// max_nodes nodes from inputs and variables only (a loss's target count), with those nodes to the
// graph's start (after the moves of inputs onto other placements that start it: a pipeline's
// inputs going to their stages): issued early, it overlaps the compute on the communication
// thread.
Graph hoist_collectives(const Graph& g, int64_t max_bytes = 4096, size_t max_nodes = 16);

// Fuses chains of elementwise ops (those whose OpDef::elementwise makes them a step) into one
// `_fused_elementwise` node each (ops/fused.h), at the place of the chain's first node: one pass
// over memory, one node for the executor. Values only the chain reads are never stored. A fused
// node keeps its parts' layouts (global graphs: it runs on the shards as they did).
// Without add_to_output (config.allow_fuse_add_to_output(False)), adds and subtractions start
// chains but join none: a residual stays apart from the chain computing the branch it adds.
struct FusionOptions {
  bool add_to_output = true;
};
Graph fuse_elementwise(const Graph& g, const FusionOptions& options = {});
// Whether compile() fuses: unless OFL_GRAPH_FUSION=0 (for bisecting a wrong result).
bool fusion_enabled();

// The passes after every global op has its signature (assign_sbp's or the planner's): boxing
// made explicit, conversions shared, a pipeline's nodes ordered by its schedule
// (pipeline/order.h; when `pipeline` has stages), gradients bucketed, split parameters
// gathered, small collectives hoisted, dead views dropped. What compile() runs after the
// layout; the planner runs it to predict a plan's peak memory.
Graph lower_layout(const Graph& laid, PlanCache* cache,
                   const pipeline::PipelineOptions* pipeline = nullptr);

// The passes in order, on a traced graph. Global graphs are laid out with `cache`'s cost model
// (a default one for their placement's size when null): by the eager rule (assign_sbp), or with
// auto_parallel by the planner (graph/auto_parallel/), which chooses every op's signature for the
// variables' layouts (a plan applied to the module already chose those) within the budget.
struct CompileOptions {
  bool auto_parallel = false;
  double memory_budget = std::numeric_limits<double>::infinity();  // bytes per device
  pipeline::PipelineOptions pipeline;                              // no stages: no pipeline
  bool fuse_elementwise = true;                                    // and fusion_enabled()
  FusionOptions fusion;
};
Graph compile(Graph g, std::shared_ptr<PlanCache> cache = nullptr,
              const CompileOptions& options = {});

}  // namespace ofl::internal::graph
