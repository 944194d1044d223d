// Runs a graph's nodes in order on real tensors, in C++ (no Python per op): inputs bound to the
// call's tensors, variables to the tensors they capture, each node through the dispatcher.
#pragma once
#include <vector>

#include "graph/ir.h"

namespace ofl::graph {

// Raises naming the expected signature when the inputs do not match the graph's.
std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs);

// "(4, 8) float32 cpu, (4,) int64 cpu": the inputs a graph expects.
std::string signature_str(const Graph& g);

// The most bytes that values computed by the graph hold at once when run (inputs and variables
// not counted): each value lives until its last reader, views and in-place results share their
// base's memory. What memory planning reports.
int64_t peak_bytes(const Graph& g);

}  // namespace ofl::graph
