// The pipeline pass: a traced step whose modules run in stages (GraphModule.set_stage) and whose
// micro-batches are traced one after another, reordered so that every rank, running the graph's
// nodes in order and skipping those outside its placement, runs its stage's forwards and
// backwards in the schedule's order. Sends and receives are the boxing nodes between stages'
// placements: the communication thread runs them while the compute goes on.
#pragma once
#include <vector>

#include "graph/ir.h"
#include "graph/pipeline/schedule.h"

namespace ofl::internal::graph::pipeline {

struct PipelineOptions {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int micro_batches = 1;
  std::vector<Placement> stages;  // stage id -> its placement
};

// The schedule of `o`'s stages: the distinct placements in stage order are the devices, and
// stage k must be on device k mod p's placement (more stages than placements: interleaved).
// Raises naming the stages and placements when two devices' placements share ranks, a stage id
// is missing, or stages do not go round the devices.
Schedule stage_schedule(const PipelineOptions& o);

// Nodes before the first micro-batch's stay first (the inputs split into micro-batches), nodes
// after the micro-batches last (the optimizer's update); every other node goes to its action
// (phase, micro-batch, stage), and the actions run in the order of the schedule's timeline. A
// node traced outside any stage takes the stage of its placement, or where that placement holds
// several, of the nearest node of its micro-batch and phase there; a move between stages goes
// with the action making what it moves (sent when made). Raises naming the nodes when
// the order would read a value before it is made or after it is written in place.
Graph order_by_schedule(const Graph& g, const PipelineOptions& o);

}  // namespace ofl::internal::graph::pipeline
