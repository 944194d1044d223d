// Repeated layers, found on the traced step (DESIGN.md, "The planner": repeated layers are solved
// once). nn.Graph tags every node with the layer it was traced in (Node::layer: a module of a
// ModuleList, its backward and its parameters' updates). A layer whose nodes match an earlier
// layer's one for one (op, attributes, shapes, layouts, and inputs from the same places: the
// same node of the layer, the corresponding parameter, or outside the layer) is a copy of it:
// the planner gives the copy's ops and variables the earlier layer's choices, so the problem it
// solves has one layer's groups however deep the model is.
#pragma once
#include <vector>

#include "graph/ir.h"

namespace ofl::internal::auto_parallel {

struct Repeats {
  // Per node: the node whose choice it takes (itself unless in a copied layer).
  std::vector<int> node_rep;
  // Per value: for a variable of a copied layer, the variable whose choice it takes; else itself.
  std::vector<int> value_rep;
  // Per value: the layer it belongs to (made by a node of it, or a variable only it reads), -1
  // for none.
  std::vector<int> value_layer;
  // Per node: for a node that others copy, how many nodes take its choice (itself included).
  std::vector<int> copies;
  int layers = 0, copied_layers = 0;

  // Whether node i's input value v comes from within i's own layer.
  bool internal(const graph::Graph& g, int i, int v) const {
    return g.nodes()[size_t(i)].layer >= 0 && value_layer[size_t(v)] == g.nodes()[size_t(i)].layer;
  }
};

// With `copy` false, layers are counted but none is made a copy.
Repeats find_repeats(const graph::Graph& g, bool copy = true);

}  // namespace ofl::internal::auto_parallel
