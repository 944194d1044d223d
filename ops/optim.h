// The optimizers' fused in-place updates (Adam and AdamW).
#pragma once
#include "core/tensor.h"

namespace ofl::internal {

// x = decay x + (1 - decay) g, or (1 - decay) g * g when square: Adam's first and second moments.
Tensor& adam_moment_(Tensor& x, const Tensor& g, double decay, bool square);
// param = param * decay - step_size * m / (sqrt(v) / bias2_sqrt + eps): Adam's step, with
// AdamW's decoupled weight decay as `decay` (1 without). The per-step values are 0-d tensors
// (traced graph inputs under nn.Graph; wrapped numbers in eager mode).
Tensor& adam_step_(Tensor& param, const Tensor& m, const Tensor& v, const Tensor& decay,
                   const Tensor& step_size, const Tensor& bias2_sqrt, double eps);

}  // namespace ofl::internal
