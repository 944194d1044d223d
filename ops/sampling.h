// Sampling from distributions given as tensors.
#pragma once
#include "core/random.h"
#include "core/tensor.h"

namespace ofl::internal {

// num_samples category indices (int64) per row of probs (1-d or 2-d, non-negative weights that
// need not sum to 1), drawn from gen (the default generator when null).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator* gen = nullptr);

}  // namespace ofl::internal
