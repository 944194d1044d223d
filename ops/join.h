// Joining and splitting: cat, stack, split, split_sizes, chunk (ops/join.cpp).
#pragma once
#include <vector>

#include "core/tensor.h"

namespace ofl::internal {

Tensor cat(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis = 0);
std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes,
                                int64_t axis = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0);

}  // namespace ofl::internal
