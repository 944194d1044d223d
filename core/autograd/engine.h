// Runs the backward pass over the recorded graph.
#pragma once
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ofl::internal::autograd {

// Accumulates d(roots)/d(leaves) into every leaf's .grad. grads may hold undefined entries
// for scalar roots (an implicit 1).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph);

// Runs fn once the backward() running on this thread has finished, after every gradient is in
// .grad (as PyTorch's Variable._execution_engine.queue_callback; DDP waits for its buckets
// there); not on error. Raises outside a backward pass.
void queue_callback(std::function<void()> fn);

// Whether this thread is running a backward pass (graph mode marks the nodes it traces there).
bool executing_backward();

// Whether the backward node running on this thread makes only leaves' gradients (each of its
// edges leads to an AccumulateGrad), in backward() (not autograd.grad): global ops there may
// leave a gradient partial, as the leaves' reductions are fused at the end.
bool making_leaf_gradients();

// Returns d(outputs)/d(inputs) without touching .grad.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& grad_outputs, const std::vector<Tensor>& inputs,
                         bool retain_graph, bool create_graph, bool allow_unused);

}  // namespace ofl::internal::autograd
