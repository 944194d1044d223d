// Device helpers for kernels that reduce a row in a block (softmax, the norms): block-wide sums
// and maxima by warp shuffles, the statistics' type, the grid of row blocks.
#pragma once
#include <algorithm>

#include "ops/cuda/common.cuh"

namespace ofl::internal::cuda {
namespace {

// Block-wide reductions: each warp's lanes combine by shuffles, then every warp combines the warps'
// results from shared memory, so every thread of the block gets the total (blockDim.x a multiple
// of 32, at most 32 warps; `shared` holds a value a warp). Two barriers a reduction, where a
// shared-memory tree over kThreads took log2(kThreads).
template <class A, class Op>
__device__ A warp_reduce(A v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

template <class A, class Op>
__device__ A block_reduce(A v, A* shared, A identity, Op op) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = warp_reduce(lane < warps ? shared[lane] : identity, op);
  __syncthreads();  // the next reduction writes shared again
  return v;
}

// The sum of every thread's `v` in the block, on every thread.
template <class A>
__device__ A block_sum(A v, A* shared) {
  return block_reduce(v, shared, A(0), [](A a, A b) { return a + b; });
}

// The largest `v` in the block, on every thread (a NaN met first stays, as the CPU's max).
template <class A>
__device__ A block_max(A v, A* shared) {
  return block_reduce(v, shared, A(-INFINITY), [](A a, A b) { return b > a ? b : a; });
}

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline int64_t row_blocks(int64_t rows) {
  return std::min<int64_t>(rows, 65535);
}

}  // namespace
}  // namespace ofl::internal::cuda
