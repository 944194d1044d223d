// Graph passes (DESIGN.md, "Graph mode"): each rewrites a Graph and is unit-tested on small
// hand-built graphs. compile() runs them in order; OFL_GRAPH_PRINT=1 prints the IR before the
// first pass and after each one (to stderr).
#pragma once
#include "graph/ir.h"

namespace ofl::graph {

// Drops nodes whose outputs nothing uses (transitively). Kept: nodes that write in place into
// a value the graph does not own (an input or variable: a parameter's update) and random ops,
// whose draws advance the generator as the eager calls would.
Graph dead_code(const Graph& g);

// The passes in order, on a traced graph.
Graph compile(Graph g);

}  // namespace ofl::graph
