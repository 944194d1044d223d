// The cost model's prediction for a compiled graph as the executor runs it: every op's roofline
// compute on its largest shard, every boxing node's plan, and each fused bucket as one collective
// of its bytes, on a timeline of the executor's two threads (compute in order, waiting only for
// the collectives it reads; collectives in order on their own thread, each starting once posted).
// What the planner optimises, checked against measured steps (benchmarks/bench_parallel.py).
#pragma once
#include "boxing/search.h"
#include "graph/ir.h"

namespace ofl::internal::auto_parallel {

struct Prediction {
  double compute_seconds = 0, comm_seconds = 0;  // each thread's busy time
  double step_seconds = 0;                       // the timeline's end: with the overlap
  std::vector<double> node_seconds;              // each node's compute or collective
};

Prediction predict(const graph::Graph& g, PlanCache& cache);

}  // namespace ofl::internal::auto_parallel
