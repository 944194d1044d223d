// Runs a graph's nodes in order on real tensors, in C++ (no Python per op): inputs bound to the
// call's tensors, variables to the tensors they capture, each node through the dispatcher.
#pragma once
#include <vector>

#include "graph/ir.h"

namespace ofl::internal::graph {

// When a node ran on this rank, in seconds on the steady clock (one clock for every process of
// a machine): on the compute thread, or the communication thread (comm).
struct NodeSpan {
  size_t node = 0;
  bool comm = false;
  double start = 0, end = 0;
};

// Raises naming the expected signature when the inputs do not match the graph's. With `spans`,
// records when each node that works on this rank ran (not ops outside its placement).
std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs,
                        std::vector<NodeSpan>* spans = nullptr);

// "(4, 8) float32 cpu, (4,) int64 cpu": the inputs a graph expects.
std::string signature_str(const Graph& g);

// The most bytes that values computed by the graph hold at once when run (inputs and variables
// not counted): each value lives until its last reader, views and in-place results share their
// base's memory. What memory planning reports.
int64_t peak_bytes(const Graph& g);

}  // namespace ofl::internal::graph
