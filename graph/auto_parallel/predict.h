// The cost model's prediction for a compiled graph as the executor runs it: every op's roofline
// compute on its largest shard, every boxing node's plan, and each fused bucket as one collective
// of its bytes, added up in order (overlap not counted). What the planner optimises, checked
// against measured steps (benchmarks/bench_parallel.py).
#pragma once
#include "boxing/search.h"
#include "graph/ir.h"

namespace ofl::auto_parallel {

struct Prediction {
  double compute_seconds = 0, comm_seconds = 0;
  double seconds() const { return compute_seconds + comm_seconds; }
};

Prediction predict(const graph::Graph& g, PlanCache& cache);

}  // namespace ofl::auto_parallel
