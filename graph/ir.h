// The graph IR (DESIGN.md, "Graph mode"): nodes are registered ops with their typed attributes,
// or the collectives that convert layouts (boxing, fused gradient reductions); values carry
// logical shape, dtype, device, and for global values placement and SBP. Built by the tracer
// (graph/trace.h), laid out by the passes (graph/passes/), run by the executor
// (graph/executor.h), printed by repr(graph).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/op_def.h"
#include "core/tensor.h"
#include "sbp/placement.h"
#include "sbp/signature.h"

namespace ofl::internal::graph {

struct Value {
  Shape shape;  // logical
  DType dtype = DType::kFloat32;
  Device device;
  // A global value is laid over `placement` by `nd_sbp`. Inputs, variables and boxing targets
  // come with theirs; the SBP pass (passes/assign_sbp) assigns the rest (empty until then).
  std::optional<Placement> placement;
  NdSbp nd_sbp;
  bool is_global() const { return placement.has_value(); }
};

enum class NodeKind : uint8_t {
  kOp,      // a registered op
  kBoxing,  // one input to one output: the same logical tensor in the output's layout
  kReduce,  // n inputs to n outputs: reductions from P(sum) on `axes`, fused into one collective
  kGather,  // n inputs to n outputs: gathers from S to B on `axes`, fused into one collective
};

// What a tensor is as a value: its logical shape, dtype, device, and placement and SBP if global.
Value value_like(const Tensor& t);

struct Node {
  NodeKind kind = NodeKind::kOp;
  const OpDef* op = nullptr;  // kOp
  Attrs attrs;
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids
  // A random op drawing from the default generator: how many Philox counters a run reserves
  // (each run draws fresh values, as the same calls in eager mode would). 0: not random.
  uint64_t random_counters = 0;
  // A random op repeating an earlier one's draws (the recompute of a checkpointed block): both
  // carry the same traced "offset" attribute, and a run gives this one what it gave the first.
  bool replays_draws = false;
  // kOp with global inputs: the layouts its inputs are converted to and its outputs get (the SBP
  // pass's choice).
  NdSbpSignature sig;
  // kBoxing: a parameter's gradient taking the parameter's layout (what bucketing fuses).
  bool param_grad = false;
  int grad_of = -1;           // kBoxing with param_grad: the parameter's value id (when traced)
  std::vector<int64_t> axes;  // kReduce, kGather: the mesh axes reduced or gathered over
  bool backward = false;      // traced while autograd ran backward (the step's second phase)
  // The repeated layer it was traced in (autograd::current_place), -1 outside one: the planner
  // gives isomorphic layers one plan.
  int layer = -1;
  // The pipeline stage it was traced in (autograd::current_place) and the micro-batch (the
  // trace's), -1 outside one: the pipeline pass orders the nodes by the schedule.
  int stage = -1;
  int micro = -1;

  std::string name() const;  // the op's name, "boxing", "reduce" or "gather"
};

// A node calling a registered op.
inline Node op_node(const OpDef& op, std::vector<int> inputs, std::vector<int> outputs,
                    Attrs attrs = {}) {
  Node n;
  n.op = &op;
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// A boxing node: `in` laid out as value `out` is.
inline Node boxing_node(int in, int out, bool param_grad = false) {
  Node n;
  n.kind = NodeKind::kBoxing;
  n.inputs = {in};
  n.outputs = {out};
  n.param_grad = param_grad;
  return n;
}

// A node a pass makes for `origin` runs where it does: same phase, repeated layer, pipeline stage
// and micro-batch.
inline void place_like(Node& made, const Node& origin) {
  made.backward = origin.backward;
  made.layer = origin.layer;
  made.stage = origin.stage;
  made.micro = origin.micro;
}

// An in-place op: output 0 is input 0's memory, written.
inline bool writes_in_place(const Node& n) {
  return n.kind == NodeKind::kOp && n.op->inplace && !n.inputs.empty() && n.inputs[0] >= 0;
}

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
  std::vector<Value>& values() { return values_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<Variable>& variables() const { return variables_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& nodes() { return nodes_; }
  const std::vector<int>& outputs() const { return outputs_; }

  // One line per input, variable and node, then the outputs:
  //   %2 = matmul(%0, %1) : (4, 8) float32 cpu
  //   %5 = boxing(%4) : (4, 8) float32 cpu [B] on cpu[0, 1]
  std::string str() const;

 private:
  std::vector<Value> values_;
  std::vector<int> inputs_;
  std::vector<Variable> variables_;
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
};

// The value whose memory each value uses: itself, or for a view's output or an in-place write's
// result, its input's (transitively).
std::vector<int> memory_owner(const Graph& g);

// The bytes a value holds on the rank with the largest shard (all of it for a local value).
int64_t bytes_per_rank(const Value& v);
// The same laid out by `nd_sbp` instead of its own layout.
int64_t bytes_per_rank(const Value& v, const NdSbp& nd_sbp);

// "(4, 8) float32 cpu", and for a global value " [S(0)] on cpu[0, 1]" after it.
std::string value_str(const Value& v);

}  // namespace ofl::internal::graph
