// The graph IR (DESIGN.md, "Graph mode"): nodes are registered ops with their typed attributes;
// values carry shape, dtype and device. Built by the tracer (graph/trace.h), run by the executor
// (graph/executor.h), printed by repr(graph).
#pragma once
#include <string>
#include <vector>

#include "core/op_def.h"
#include "core/tensor.h"

namespace ofl::graph {

struct Value {
  Shape shape;
  DType dtype = DType::kFloat32;
  Device device;
};

struct Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids
  // A random op drawing from the default generator: how many Philox counters a run reserves
  // (each run draws fresh values, as the same calls in eager mode would). 0: not random.
  uint64_t random_counters = 0;
};

// A tensor the graph reads but does not compute: a module's parameter or buffer, or a constant
// made while tracing. Bound by reference: the graph sees its current values when it runs.
struct Variable {
  int value;
  Tensor tensor;
};

class Graph {
 public:
  // A new value; returns its id.
  int add_value(Value v);
  int add_input(Value v);
  int add_variable(const Tensor& t);
  void add_node(Node n);
  void set_outputs(std::vector<int> outputs) { outputs_ = std::move(outputs); }
  // This graph's values, inputs, variables and outputs, with no nodes (for passes to refill).
  Graph without_nodes() const {
    Graph g = *this;
    g.nodes_.clear();
    return g;
  }

  const std::vector<Value>& values() const { return values_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<Variable>& variables() const { return variables_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& outputs() const { return outputs_; }

  // One line per input, variable and node, then the outputs:
  //   %2 = matmul(%0, %1) : (4, 8) float32 cpu
  std::string str() const;

 private:
  std::vector<Value> values_;
  std::vector<int> inputs_;
  std::vector<Variable> variables_;
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
};

std::string value_str(const Value& v);  // "(4, 8) float32 cpu"

}  // namespace ofl::graph
