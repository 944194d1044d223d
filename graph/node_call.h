// What signature selection and the cost model (sbp/select.h) see of an op node on global values:
// its inputs' logical shapes and dtypes with a layout for each global input, its outputs' shapes,
// its placement (its global inputs'), its in-place flag and attributes. For the SBP pass, the
// planner and the prediction, which differ only in the layouts they give the inputs.
#pragma once
#include <functional>
#include <optional>

#include "graph/ir.h"
#include "sbp/select.h"

namespace ofl::internal::graph {

// The placement of the node's global inputs, or none for a local op.
std::optional<Placement> placement_of(const Graph& g, const Node& n);

class NodeCall {
 public:
  // layout(i): the layout input i is taken in (called for global inputs only).
  NodeCall(const Graph& g, const Node& n, const Placement& placement,
           const std::function<const NdSbp*(size_t input)>& layout);
  NodeCall(const NodeCall&) = delete;
  NodeCall& operator=(const NodeCall&) = delete;
  SbpCall& call() { return call_; }

 private:
  std::vector<Shape> out_shapes_;
  Placement placement_;
  SbpCall call_;
};

}  // namespace ofl::internal::graph
