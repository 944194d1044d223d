// A compiled graph as JSON (DESIGN.md: "saves as JSON + safetensors weights"): values, inputs,
// variables (named "v<id>"; their data is written separately), nodes with their typed
// attributes, outputs. What graph.save writes and the C++ API loads.
#pragma once
#include <map>
#include <string>

#include "graph/ir.h"

namespace ofl::internal::graph {

inline constexpr int kGraphFormatVersion = 1;

std::string to_json(const Graph& g);
// The graph to_json wrote, its variables bound to `variables` by name (each checked against the
// value's shape and dtype). Only registered ops are created: nothing in the text is executed.
// Raises naming `where` (the file) and the offending entry for a malformed or foreign text, an
// unknown op or attribute, or a missing variable. Global graphs are not loaded yet.
Graph from_json(const std::string& text, const std::map<std::string, Tensor>& variables,
                const std::string& where);
// The graph graph.save wrote to the folder `dir`: graph.json with the variables of
// weights.safetensors.
Graph load(const std::string& dir);
// The name a variable's data is saved under.
std::string variable_name(const Variable& v);

}  // namespace ofl::internal::graph
