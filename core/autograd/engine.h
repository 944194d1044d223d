// Runs the backward pass over the recorded graph.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace ofl::internal::autograd {

// Accumulates d(roots)/d(leaves) into every leaf's .grad. grads may hold undefined entries
// for scalar roots (an implicit 1).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph);

// Whether this thread is running a backward pass (graph mode marks the nodes it traces there).
bool executing_backward();

// Returns d(outputs)/d(inputs) without touching .grad.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& grad_outputs, const std::vector<Tensor>& inputs,
                         bool retain_graph, bool create_graph, bool allow_unused);

}  // namespace ofl::internal::autograd
