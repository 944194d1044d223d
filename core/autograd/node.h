// Autograd graph nodes: one per recorded op, edges point at the producers of its inputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/tensor.h"

namespace ofl::internal::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

using Grads = std::vector<Tensor>;
// Which of the node's inputs need a gradient; a backward rule may skip the others.
using Needs = std::vector<bool>;

// Where ops are called from, -1 outside one: the repeated layer (a module of a ModuleList,
// numbered by nn.Graph while it traces: the planner solves repeated layers once) and the pipeline
// stage (GraphModule.set_stage: the schedule orders each stage's work). A node remembers where it
// was recorded and the engine runs its backward there, so every traced op of a step knows both.
struct Place {
  int layer = -1;
  int stage = -1;
};
Place current_place();
void set_current_place(Place place);

class PlaceScope {
 public:
  explicit PlaceScope(Place place) : prev_(current_place()) { set_current_place(place); }
  ~PlaceScope() { set_current_place(prev_); }
  PlaceScope(const PlaceScope&) = delete;
  PlaceScope& operator=(const PlaceScope&) = delete;

 private:
  Place prev_;
};

// A hook on the gradient that flows into a tensor (Tensor.register_hook): returns the gradient
// to use instead, or an undefined tensor to keep it.
using GradHook = std::function<Tensor(const Tensor& grad)>;
// Runs once a leaf's gradient was added into its .grad (register_post_accumulate_grad_hook).
using PostAccumulateHook = std::function<void(const Tensor& leaf)>;

// Hooks in registration order, each with the id remove_hook takes.
template <class Hook>
struct Hooks {
  std::vector<std::pair<int, Hook>> entries;
  bool remove(int id) {
    return std::erase_if(entries, [id](const auto& e) { return e.first == id; }) > 0;
  }
};

struct LeafHooks {
  Hooks<GradHook> grad;  // before the gradient reaches .grad
  Hooks<PostAccumulateHook> post_accumulate;
};

class Node {
 public:
  explicit Node(std::string name);
  virtual ~Node() = default;
  // grads holds one gradient per forward output; returns one per input (undefined = none).
  virtual Grads apply(Grads&& grads) = 0;
  // Frees saved tensors once the graph will not be replayed (retain_graph=false).
  virtual void release() {}

  const std::string& name() const { return name_; }
  uint64_t sequence_nr() const { return seq_; }
  const Place& place() const { return place_; }
  std::vector<Edge>& next_edges() { return next_; }
  // Shapes/dtypes of the forward outputs, so missing output grads can be zero-filled.
  struct OutputMeta {
    Shape shape;  // local
    DType dtype;
    Device device;
    std::shared_ptr<const GlobalInfo> global;
  };
  std::vector<OutputMeta>& outputs() { return outputs_; }
  // Non-leaf tensors that asked for retain_grad(), by output index.
  std::vector<std::weak_ptr<TensorImpl>>& retained() { return retained_; }
  // Hooks on the gradient of forward output `output_nr` (a non-leaf's register_hook), by
  // output; run_grad_hooks applies them to the gradients the node got, before its backward.
  std::vector<Hooks<GradHook>>& grad_hooks() { return grad_hooks_; }
  void run_grad_hooks(Grads& grads) const;

 private:
  std::string name_;
  uint64_t seq_;
  Place place_;
  std::vector<Edge> next_;
  std::vector<OutputMeta> outputs_;
  std::vector<std::weak_ptr<TensorImpl>> retained_;
  std::vector<Hooks<GradHook>> grad_hooks_;
};

// A tensor kept for backward, with the version it had; unpack() rejects later in-place writes.
class SavedTensor {
 public:
  SavedTensor() = default;
  // An op's own output is saved without its history, so the node does not own itself; its
  // producer is kept weakly and given back on unpack, so gradients of gradients flow through it.
  explicit SavedTensor(const Tensor& t, bool is_output = false);
  Tensor unpack(const std::string& op) const;
  bool defined() const { return t_.defined(); }
  void reset() { t_ = Tensor(); }

 private:
  Tensor t_;
  uint64_t version_ = 0;
  std::weak_ptr<Node> producer_;
  uint32_t output_nr_ = 0;
};

using BackwardFn = std::function<Grads(const Grads& grads, const Needs& needs)>;

class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  Grads apply(Grads&& grads) override;
  void release() override { fn_ = nullptr; }

 private:
  BackwardFn fn_;
};

// Adds incoming gradients into a leaf tensor's .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(const Tensor& var);
  Grads apply(Grads&& grads) override;
  std::shared_ptr<TensorImpl> variable() const { return var_.lock(); }

 private:
  std::weak_ptr<TensorImpl> var_;
};

// How a global leaf's gradient takes the leaf's own placement and SBP (set by the global
// executor, which knows boxing; the engine does not). `take` returns the gradient in the leaf's
// layout, or an undefined tensor when it defers that to `flush`, which backward() calls once the
// graph has run (ok=false after an error: drop what was deferred). Deferring lets the
// data-parallel all-reduces of many parameters go out as a few fused buffers.
struct GlobalGradHooks {
  Tensor (*take)(const Tensor& var, const Tensor& grad) = nullptr;
  void (*flush)(bool ok) = nullptr;
};
void set_global_grad_hooks(GlobalGradHooks hooks);
const GlobalGradHooks& global_grad_hooks();
// While tracing (graph mode), a global leaf's traced gradient takes the leaf's layout through
// this instead: a conversion recorded in the graph (set by graph/).
void set_traced_grad_hook(Tensor (*take)(const Tensor& var, const Tensor& grad));

// Adds `grad` (in var's layout) into var.grad, then runs var's post-accumulate hooks: what
// AccumulateGrad does with a leaf's gradient.
void accumulate_grad(Tensor var, Tensor grad);

// Registers a hook on t's gradient: a leaf's runs before its gradient is accumulated, a
// non-leaf's on its grad_fn. Returns the id remove_hook takes. t must require grad.
int add_grad_hook(const Tensor& t, GradHook hook);
// Leaf only: the hook sees the leaf once its .grad holds this backward's gradient.
int add_post_accumulate_grad_hook(const Tensor& t, PostAccumulateHook hook);
// Removes the hook with that id from t (false when it has none such: removed already).
bool remove_hook(const Tensor& t, int id);

// The edge a gradient for `t` flows into (its grad_fn, or its accumulator if a leaf).
Edge gradient_edge(const Tensor& t);

// True when grad mode is on and any defined tensor among `ts` requires grad.
template <class... Ts>
bool needs_grad(const Ts&... ts) {
  return grad_enabled() && ((ts.defined() && ts.requires_grad()) || ...);
}
bool any_requires_grad(const std::vector<Tensor>& ts);

// Records an op: outputs get a FunctionNode whose edges lead to the inputs' producers.
void record(const std::string& name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, BackwardFn fn);

}  // namespace ofl::internal::autograd
