// The strided N-operand loop behind every elementwise kernel: broadcasting, coalescing of
// dimensions, and a parallel split of the index space. Operand 0 is the output.
#pragma once
#include <algorithm>
#include <array>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ofl::internal {

inline constexpr size_t kMaxLoopDims = 64;

// Up to kMaxLoopDims extents or strides, held inline: planning a loop allocates nothing.
class LoopDims {
 public:
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](size_t i) { return v_[i]; }
  int64_t operator[](size_t i) const { return v_[i]; }
  int64_t& back() { return v_[n_ - 1]; }
  int64_t back() const { return v_[n_ - 1]; }
  void push_back(int64_t x) { v_[n_++] = x; }
  void assign(size_t n, int64_t x) {
    n_ = n;
    std::fill_n(v_.begin(), n, x);
  }
  const int64_t* begin() const { return v_.data(); }
  const int64_t* end() const { return v_.data() + n_; }
  bool operator==(const std::vector<int64_t>& o) const {
    return std::equal(begin(), end(), o.begin(), o.end());
  }

 private:
  std::array<int64_t, kMaxLoopDims> v_;
  size_t n_ = 0;
};

template <int N>
struct LoopPlan {
  LoopDims shape;                   // coalesced
  std::array<LoopDims, N> strides;  // in bytes, per operand
  std::array<char*, N> base;
};

// Strides (in bytes) of `t` broadcast to `shape` (0 on broadcast dimensions).
void broadcast_byte_strides(const Tensor& t, const Shape& shape, LoopDims& out);

template <int N>
LoopPlan<N> make_loop(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  if (shape.size() > kMaxLoopDims)
    fail("elementwise", "tensors of more than ", kMaxLoopDims,
         " dimensions are not supported, got ", shape.size());
  LoopPlan<N> plan;
  std::array<LoopDims, N> strides;
  for (int k = 0; k < N; ++k) {
    broadcast_byte_strides(*ops[k], shape, strides[k]);
    plan.base[k] = static_cast<char*>(ops[k]->raw_data());
  }
  // Drop size-1 dims and merge dims that are contiguous with their inner neighbour.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!plan.shape.empty()) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        if (plan.strides[k].back() != strides[k][d] * shape[d]) mergeable = false;
      if (mergeable) {
        plan.shape.back() *= shape[d];
        for (int k = 0; k < N; ++k) plan.strides[k].back() = strides[k][d];
        continue;
      }
    }
    plan.shape.push_back(shape[d]);
    for (int k = 0; k < N; ++k) plan.strides[k].push_back(strides[k][d]);
  }
  if (plan.shape.empty()) {
    plan.shape.push_back(1);
    for (int k = 0; k < N; ++k) plan.strides[k].push_back(0);
  }
  return plan;
}

// Calls row(ptrs, inner_strides, n) over runs of the innermost dimension, in parallel.
template <int N, class Row>
void run_loop(const LoopPlan<N>& plan, Row&& row) {
  const int64_t nd = static_cast<int64_t>(plan.shape.size());
  const int64_t inner = plan.shape.back();
  int64_t total = 1;
  for (int64_t d : plan.shape) total *= d;
  std::array<int64_t, N> inner_strides;
  for (int k = 0; k < N; ++k) inner_strides[k] = plan.strides[k].back();
  parallel_for(total, kGrainSize, [&](int64_t begin, int64_t end) {
    std::array<int64_t, kMaxLoopDims> idx;
    int64_t rem = begin;
    for (int64_t d = nd - 1; d >= 0; --d) {
      idx[d] = rem % plan.shape[d];
      rem /= plan.shape[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      std::array<char*, N> ptrs;
      for (int k = 0; k < N; ++k) {
        char* p = plan.base[k];
        for (int64_t d = 0; d < nd; ++d) p += idx[d] * plan.strides[k][d];
        ptrs[k] = p;
      }
      int64_t n = std::min(inner - idx[nd - 1], end - pos);
      row(ptrs, inner_strides, n);
      pos += n;
      idx[nd - 1] += n;
      for (int64_t d = nd - 1; d > 0 && idx[d] == plan.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  });
}

}  // namespace ofl::internal
