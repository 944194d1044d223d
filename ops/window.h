// What the sliding-window op definitions (ops/conv.cpp, ops/pool.cpp) share: (H, W) pair
// attributes, image checks from metas, and the kernels' view of operands (contiguous NCHW planes
// in the dtype the kernels compute in). Internal to those two files.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "core/op_def.h"
#include "ops/conv.h"
#include "ops/kernels.h"

namespace ofl::internal::window {

using Ints = std::vector<int64_t>;

// Kernels compute in float32 or float64; 16-bit floats go through float32.
inline DType compute_dtype(DType t) {
  return t == DType::kFloat64 ? t : DType::kFloat32;
}

std::string pair_str(Pair p);
inline Ints ints(Pair p) {
  return {p[0], p[1]};
}
// The (H, W) attribute `name`, checked to hold two values (infer) or as checked (compute).
Pair checked_pair(const InferArgs& a, const char* name);
Pair pair_attr(const Attrs& attrs, const char* name);

// An image (C, H, W) or a batch of them (N, C, H, W), of a floating dtype; `what` names it.
void check_image(const char* op, const TensorMeta& x, const char* what = "input");
// The named operands (an absent one skipped) share the first one's dtype / device.
void check_dtypes(const InferArgs& a, std::initializer_list<const char*> names);
void check_devices(const InferArgs& a, std::initializer_list<const char*> names);

inline int64_t channels(const Shape& s) {
  return s[s.size() - 3];
}
inline Pair spatial(const Shape& s) {
  return {s[s.size() - 2], s[s.size() - 1]};
}
// s with its (H, W) replaced by hw and, when given, its channels by c.
Shape with_spatial(Shape s, Pair hw, std::optional<int64_t> c = {});
// The output shape of a window op on an image shape; `channels` for conv (pooling keeps C).
Shape windowed_shape(const Shape& xs, const Window2d& win, std::optional<int64_t> c = {});

// What a kernel reads: contiguous, in dtype dt, a 3-d image viewed as one of a batch of 1.
Tensor planes(const Tensor& t, DType dt);
// Runs `kernel` on the output's planes in dtype dt, converting into `out` where dt differs.
template <class F>
void into(const Tensor& out, DType dt, F&& kernel) {
  Tensor y = out.dtype() == dt ? out : Tensor::empty(out.shape(), dt, out.device());
  kernel(planes(y, dt));
  if (!y.same(out)) copy_kernel().get(out.device().type)(y, out);
}

}  // namespace ofl::internal::window
