#include "ops/window.h"

#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace ofl::internal::window {

std::string pair_str(Pair p) {
  return str_cat("(", p[0], ", ", p[1], ")");
}

Pair checked_pair(const InferArgs& a, const char* name) {
  const Ints& v = a.attrs.get<Ints>(name);
  if (v.size() != 2) fail(a.op, name, " must hold 2 values (H, W), got ", v.size());
  return {v[0], v[1]};
}

Pair pair_attr(const Attrs& attrs, const char* name) {
  const Ints& v = attrs.get<Ints>(name);
  return {v[0], v[1]};
}

void check_image(const char* op, const TensorMeta& x, const char* what) {
  if (x.shape.size() != 3 && x.shape.size() != 4)
    fail(op, "expects a 3-d (C, H, W) or 4-d (N, C, H, W) ", what, ", got ", shape_str(x.shape));
  if (!is_floating(x.dtype))
    fail<TypeError>(op, "expects a floating-point ", what, ", got ", x.str());
}

void check_dtypes(const InferArgs& a, std::initializer_list<const char*> names) {
  bool same = true;
  std::string list;
  size_t i = 0;
  for (const char* name : names) {
    const TensorMeta& t = a.in[i++];
    if (!t.defined) continue;
    same &= t.dtype == a.in[0].dtype;
    list += str_cat(list.empty() ? "" : ", ", name, " ", t.str());
  }
  if (!same) fail<TypeError>(a.op, list, ": dtypes must be the same");
}

void check_devices(const InferArgs& a, std::initializer_list<const char*> names) {
  size_t i = 0;
  for (const char* name : names) {
    const TensorMeta& t = a.in[i++];
    if (t.defined && t.device != a.in[0].device)
      fail(a.op, *names.begin(), " is on ", a.in[0].device.str(), " but ", name, " is on ",
           t.device.str());
  }
}

Shape with_spatial(Shape s, Pair hw, std::optional<int64_t> c) {
  const size_t n = s.size();
  if (c) s[n - 3] = *c;
  s[n - 2] = hw[0];
  s[n - 1] = hw[1];
  return s;
}

Shape windowed_shape(const Shape& xs, const Window2d& win, std::optional<int64_t> c) {
  const Pair hw = spatial(xs);
  return with_spatial(xs, {win.out_h(hw[0]), win.out_w(hw[1])}, c);
}

Tensor planes(const Tensor& t, DType dt) {
  if (!t.defined()) return t;
  Tensor c = contiguous_local(converted(t, dt));
  if (c.dim() != 3) return c;
  Shape s = c.shape();
  s.insert(s.begin(), 1);
  return Tensor::view_of(c.storage(), s, contiguous_strides(s), c.offset(), c.dtype());
}

}  // namespace ofl::internal::window
