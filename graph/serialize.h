// A compiled graph as JSON (DESIGN.md: "saves as JSON + safetensors weights"): values, inputs,
// variables (named "v<id>"; their data is written separately), nodes with their typed
// attributes, outputs. What graph.save writes and the C++ API will load.
#pragma once
#include <string>

#include "graph/ir.h"

namespace ofl::graph {

inline constexpr int kGraphFormatVersion = 1;

std::string to_json(const Graph& g);
// The name a variable's data is saved under.
std::string variable_name(const Variable& v);

}  // namespace ofl::graph
