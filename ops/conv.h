// Convolution, pooling and batch norm (NCHW).
#pragma once
#include <array>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ofl::internal {

using Pair = std::array<int64_t, 2>;
// An int or a pair of ints (a signature's int[] argument) as a pair; raises naming op and what.
Pair to_pair(const std::vector<int64_t>& v, const char* op, const char* what);

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, Pair stride = {1, 1},
              Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);
Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding = {0, 0});
// The values and the argmax of each window, as h * W + w in its (H, W) plane (int64).
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel, Pair stride,
                                                  Pair padding = {0, 0});
Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding = {0, 0},
                  bool count_include_pad = true);
// Updates running_mean/var in place when training and they are defined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps);

}  // namespace ofl::internal
