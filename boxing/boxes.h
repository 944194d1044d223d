// Boxes: a shard's place in its logical tensor as one [begin, end) per axis (boxing/layout.h's
// local_ranges), and views and copies between tensors that hold boxes. Shared by the boxing
// executors (reshard.cpp, fused_collectives.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/primitives.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace ofl::internal::boxes {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

inline Shape shape_of(const Ranges& r) {
  Shape s(r.size());
  for (size_t a = 0; a < r.size(); ++a) s[a] = std::max<int64_t>(0, r[a].second - r[a].first);
  return s;
}

inline int64_t numel_of_ranges(const Ranges& r) {
  return numel_of(shape_of(r));
}

inline Ranges intersect(const Ranges& a, const Ranges& b) {
  Ranges out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i].first = std::max(a[i].first, b[i].first);
    out[i].second = std::max(out[i].first, std::min(a[i].second, b[i].second));
  }
  return out;
}

inline Ranges full_ranges(const Shape& shape) {
  Ranges r(shape.size());
  for (size_t a = 0; a < shape.size(); ++a) r[a] = {0, shape[a]};
  return r;
}

// The view of `t` (holding the logical box `have`) on the sub-box `want`.
inline Tensor sub_box(const Tensor& t, const Ranges& have, const Ranges& want) {
  Tensor v = t;
  for (size_t a = 0; a < have.size(); ++a)
    if (want[a] != have[a])
      v = narrow_view(v, int64_t(a), want[a].first - have[a].first, want[a].second - want[a].first);
  return v;
}

// Copies src (holding box `box`) into the box's place in dst (holding `have`).
inline void put(Tensor& dst, const Ranges& have, const Tensor& src, const Ranges& box) {
  if (numel_of_ranges(box) == 0) return;
  Tensor view = sub_box(dst, have, box);
  copy_into(view, src);
}

}  // namespace ofl::internal::boxes
