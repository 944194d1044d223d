// Sampling from distributions given as tensors.
#pragma once
#include "core/random.h"
#include "core/tensor.h"

namespace ofl::internal {

// num_samples category indices (int64) per row of probs (1-d or 2-d, non-negative weights that
// need not sum to 1), drawn from gen (the default generator when null).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator* gen = nullptr);

// One token id (int64) per row of logits (B, V): greedy where temperature <= 0, else sampled at
// that temperature from the top_k largest logits (0: all), cut to the fewest whose probability
// reaches top_p, with the Philox draw (steps[r], seeds[r]): a request's tokens depend only on its
// logits, seed and step. seeds, steps, top_k: integer (B,); temperature, top_p: floating (B,).
Tensor sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                     const Tensor& temperature, const Tensor& top_k, const Tensor& top_p);

}  // namespace ofl::internal
