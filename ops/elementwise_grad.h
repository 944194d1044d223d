// Helpers the backward rules of elementwise ops share (ops/elementwise*.cpp, unary, binary).
#pragma once
#include "core/op_def.h"
#include "core/tensor.h"

namespace ofl::internal::elementwise_grad {

// What a backward rule needs to know of an input it does not otherwise save.
struct InputMeta {
  Shape shape;
  DType dtype;
  explicit InputMeta(const Tensor& t) : shape(t.shape()), dtype(t.dtype()) {}
};

// The gradient for an input: summed over broadcast dims and cast back to its dtype.
Tensor grad_for(const Tensor& g, const InputMeta& input);
Tensor grad_for(const Tensor& g, const TensorMeta& input);
// t * s, or t itself when s is 1.
Tensor scaled(const Tensor& t, double s);
// A constant in a backward formula: a float64 wrapped number (does not drive promotion).
Tensor k(double v);

}  // namespace ofl::internal::elementwise_grad
