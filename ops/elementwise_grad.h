// Helpers the backward rules of elementwise ops share (ops/elementwise*.cpp only).
#pragma once
#include "core/tensor.h"

namespace ofl::elementwise_grad {

// What a backward rule needs to know of an input it does not otherwise save.
struct InputMeta {
  Shape shape;
  DType dtype;
  explicit InputMeta(const Tensor& t) : shape(t.shape()), dtype(t.dtype()) {}
};

// The gradient for an input: summed over broadcast dims and cast back to its dtype.
Tensor grad_for(const Tensor& g, const InputMeta& input);
// t * s, or t itself when s is 1.
Tensor scaled(const Tensor& t, double s);

}  // namespace ofl::elementwise_grad
