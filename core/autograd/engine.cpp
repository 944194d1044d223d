#include "core/autograd/engine.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "core/primitives.h"

namespace ofl::internal::autograd {

namespace {
thread_local int backward_depth = 0;
// The callbacks queued during the innermost backward() running on this thread.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;
}  // namespace

void queue_callback(std::function<void()> fn) {
  if (!queued_callbacks)
    fail("queue_callback",
         "no backward pass is running on this thread: queue a callback from a "
         "hook that backward() calls");
  queued_callbacks->push_back(std::move(fn));
}

thread_local bool making_leaf_grads = false;

bool making_leaf_gradients() {
  return making_leaf_grads;
}

bool executing_backward() {
  return backward_depth > 0;
}

namespace {

struct ByNewestFirst {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// Gradients waiting for a node, one slot per forward output of that node.
using Buffers = std::unordered_map<Node*, Grads>;

void accumulate(Grads& slots, size_t index, size_t size, const Tensor& g) {
  if (slots.size() < size) slots.resize(size);
  slots[index] = slots[index].defined() ? add_grads(slots[index], g) : g;
}

// A contiguous copy of g that keeps its global layout: a gradient the caller may then own.
Tensor owned_copy(const Tensor& g) {
  Tensor copy = contiguous_copy(g);
  copy.impl()->global = g.impl()->global;
  return copy;
}

// Counts, for every node reachable from the roots, how many edges point at it.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Edge>& roots) {
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const auto& e : roots)
    if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges()) {
      if (!e.valid()) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  return deps;
}

Tensor root_grad(const Tensor& root, const Tensor& g, const char* op) {
  if (g.defined()) {
    if (g.shape() != root.shape())
      fail(op, "gradient has shape ", shape_str(g.shape()), " but the output has shape ",
           shape_str(root.shape()));
    if (g.device() != root.device())  // else the backward would mix devices (PyTorch raises too)
      fail(op, "gradient is on ", g.device().str(), " but the output is on ", root.device().str());
    // Not copied (as PyTorch does not): where it could end up aliased, in a leaf's .grad (which
    // steals only a gradient nothing else holds), a retained .grad or autograd.grad's result,
    // those copy it.
    return g;
  }
  if (root.numel() != 1)
    fail(op, "grad can be implicitly created only for scalar outputs, but the output has shape ",
         shape_str(root.shape()), "; pass a gradient of that shape");
  return call_op("full_like", {root}, {{"value", 1.0}, {"dtype", root.dtype()}});
}

// Runs the graph from `roots`. With `captures`, gradients reaching those edges are returned
// instead of being accumulated into leaves.
void run(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
         bool create_graph, const char* op, const std::vector<Edge>* captures,
         std::vector<Tensor>* captured) {
  ++backward_depth;
  struct Leave {
    ~Leave() { --backward_depth; }
  } leave;
  if (grads.size() != roots.size())
    fail(op, "got ", grads.size(), " gradients for ", roots.size(), " outputs");
  GradModeGuard mode(create_graph);
  std::vector<Edge> root_edges;
  Buffers buffers;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].requires_grad())
      fail(op, "output ", i, " of shape ", shape_str(roots[i].shape()),
           " does not require grad and has no grad_fn");
    Edge e = gradient_edge(roots[i]);
    Tensor g = root_grad(roots[i], grads[i], op);
    accumulate(buffers[e.fn.get()], e.input_nr, e.fn->outputs().size() ? e.fn->outputs().size() : 1,
               g);
    root_edges.push_back(e);
  }
  auto deps = count_dependencies(root_edges);

  std::unordered_map<Node*, std::vector<size_t>> capture_at;  // node -> capture indices
  if (captures) {
    captured->assign(captures->size(), Tensor());
    for (size_t i = 0; i < captures->size(); ++i)
      if ((*captures)[i].valid()) capture_at[(*captures)[i].fn.get()].push_back(i);
  }

  std::priority_queue<Node*, std::vector<Node*>, ByNewestFirst> ready;
  std::unordered_set<Node*> queued;
  std::vector<std::shared_ptr<Node>> keep_alive;
  for (const auto& e : root_edges)
    if (deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) {
      ready.push(e.fn.get());
      keep_alive.push_back(e.fn);
    }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    const PlaceScope place(node->place());
    Grads in = std::move(buffers[node]);
    buffers.erase(node);
    if (auto it = capture_at.find(node); it != capture_at.end()) {
      for (size_t ci : it->second) {
        uint32_t slot = (*captures)[ci].input_nr;
        if (slot >= in.size()) continue;
        // A gradient the caller passed, come through unchanged: theirs, so a copy.
        const bool given = std::any_of(grads.begin(), grads.end(), [&](const Tensor& g) {
          return g.defined() && in[slot].defined() && g.impl() == in[slot].impl();
        });
        (*captured)[ci] = given ? owned_copy(in[slot]) : in[slot];
      }
    }
    bool is_leaf_acc = dynamic_cast<AccumulateGrad*>(node) != nullptr;
    if (is_leaf_acc && captures) continue;  // autograd.grad leaves .grad alone
    node->run_grad_hooks(in);
    for (size_t i = 0; i < node->retained().size() && i < in.size(); ++i)
      if (auto impl = node->retained()[i].lock(); impl && in[i].defined()) {
        Tensor t(impl);
        // A copy: in[i] flows on to the inputs, and the user may change t.grad in place.
        t.set_grad(t.grad().defined() ? add_grads(t.grad(), in[i]) : owned_copy(in[i]));
      }
    in.resize(std::max<size_t>(in.size(), node->outputs().size()));
    Grads out;
    {
      bool to_leaves = false;  // every gradient the node makes goes into a leaf's .grad
      for (const Edge& e : node->next_edges()) {
        if (!e.valid()) continue;
        to_leaves = dynamic_cast<AccumulateGrad*>(e.fn.get()) != nullptr;
        if (!to_leaves) break;
      }
      const bool outer = making_leaf_grads;
      making_leaf_grads = to_leaves && !captures;
      struct Restore {
        bool was;
        ~Restore() { making_leaf_grads = was; }
      } restore{outer};
      out = node->apply(std::move(in));
    }
    if (!retain_graph) node->release();
    auto& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.fn.get();
      if (i < out.size() && out[i].defined()) {
        size_t n = std::max<size_t>(next->outputs().size(), 1);
        accumulate(buffers[next], e.input_nr, n, out[i]);
      }
      if (--deps[next] == 0 && queued.insert(next).second) {
        ready.push(next);
        keep_alive.push_back(e.fn);
      }
    }
  }
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph) {
  const GlobalGradHooks& hooks = global_grad_hooks();
  std::vector<std::function<void()>> callbacks;
  struct Scope {
    std::vector<std::function<void()>>* outer = queued_callbacks;
    ~Scope() { queued_callbacks = outer; }
  } scope;
  queued_callbacks = &callbacks;
  try {
    run(roots, grads, retain_graph, create_graph, "backward", nullptr, nullptr);
  } catch (...) {
    if (hooks.flush) hooks.flush(false);
    throw;
  }
  if (hooks.flush) hooks.flush(true);
  for (size_t i = 0; i < callbacks.size(); ++i) {  // a callback may queue another
    auto fn = std::move(callbacks[i]);
    fn();
  }
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& grad_outputs, const std::vector<Tensor>& inputs,
                         bool retain_graph, bool create_graph, bool allow_unused) {
  std::vector<Edge> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad())
      fail("autograd.grad", "input ", i, " of shape ", shape_str(inputs[i].shape()),
           " does not require grad");
    captures.push_back(gradient_edge(inputs[i]));
  }
  std::vector<Tensor> result;
  run(outputs, grad_outputs, retain_graph, create_graph, "autograd.grad", &captures, &result);
  for (size_t i = 0; i < result.size(); ++i)
    if (!result[i].defined() && !allow_unused)
      fail("autograd.grad", "input ", i, " of shape ", shape_str(inputs[i].shape()),
           " was not used in computing the outputs; pass allow_unused=True");
  return result;
}

}  // namespace ofl::internal::autograd
