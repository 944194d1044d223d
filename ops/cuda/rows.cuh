// Device helpers for kernels that reduce a row in a block (softmax, the norms): block-wide sums
// and maxima through a shared-memory tree, the statistics' type, the grid of row blocks.
#pragma once
#include <algorithm>

#include "ops/cuda/common.cuh"

namespace ofl::internal::cuda {
namespace {

// The sum of every thread's `v` in the block, on every thread (kThreads threads).
template <class A>
__device__ A block_sum(A v, A* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const A total = shared[0];
  __syncthreads();
  return total;
}

template <class A>
__device__ A block_max(A v, A* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half && shared[threadIdx.x + half] > shared[threadIdx.x])
      shared[threadIdx.x] = shared[threadIdx.x + half];
    __syncthreads();
  }
  const A total = shared[0];
  __syncthreads();
  return total;
}

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline int64_t row_blocks(int64_t rows) {
  return std::min<int64_t>(rows, 65535);
}

}  // namespace
}  // namespace ofl::internal::cuda
