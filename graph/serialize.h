// A compiled graph as JSON (DESIGN.md: "saves as JSON + safetensors weights"): values, inputs,
// variables (named "v<id>"; their data is written separately), nodes with their typed
// attributes, outputs. What graph.save writes and the C++ API loads.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "graph/ir.h"

namespace ofl::internal {
struct BoxingContext;
namespace comm {
class Communicator;
}
}  // namespace ofl::internal

namespace ofl::internal::graph {

inline constexpr int kGraphFormatVersion = 1;

std::string to_json(const Graph& g);
// The graph to_json wrote, its variables bound to `variables` by name (each checked against the
// value's shape and dtype). Only registered ops are created: nothing in the text is executed.
// Raises naming `where` (the file) and the offending entry for a malformed or foreign text, an
// unknown op or attribute, or a missing variable. A graph over placements loads with a world
// (LoadOptions::ctx). The tracer's node marks (phase, repeated layer, stage, micro-batch, a
// parameter's gradient) are kept: a traced step saved loads as the planner saw it.
// Where a loaded graph's variables come from: the tensor saved under `name` for the value `v`
// (for a global value, this rank's shard of it); undefined when there is none.
using VariableSource = std::function<Tensor(const std::string& name, const Value& v)>;

struct LoadOptions {
  // The batch to build the graph for (a graph saved with a dynamic batch: graph.save traced it
  // at two batch sizes and marked the dimensions and attributes that follow it); 0: as saved.
  int64_t batch = 0;
  std::optional<Device> device;  // where to put its values and variables; none: as saved
  // The world and plan cache a graph over placements runs with (required for one).
  std::shared_ptr<BoxingContext> ctx;
};
Graph from_json(const std::string& text, const std::map<std::string, Tensor>& variables,
                const std::string& where, const LoadOptions& options = {});
Graph from_json(const std::string& text, const VariableSource& variables, const std::string& where,
                const LoadOptions& options = {});

// What a saved graph takes and gives, by name; a dimension that follows the batch is -1.
struct ValueInfo {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  Device device;
};
struct Signature {
  std::vector<ValueInfo> inputs, outputs;
  bool single_output = false;  // build() returned one tensor, not a tuple
  int64_t batch = 0;           // the batch it was traced at; 0: every shape fixed
};
Signature signature_from_json(const std::string& text, const std::string& where);
// The whole file at `path`; raises naming it when it cannot be read.
std::string read_text(const std::string& path);
// This process's rank in the world (its global rank, as placements name ranks).
int rank_of(const comm::Communicator& world);
// The graph graph.save wrote to the folder `dir`: graph.json with the variables of
// weights.safetensors, or for a graph over placements, of the distributed checkpoint weights/
// (each rank reading its shards).
Graph load(const std::string& dir, const LoadOptions& options = {});
// The name a variable's data is saved under.
std::string variable_name(const Variable& v);

}  // namespace ofl::internal::graph
