// View and layout ops. Views share storage; their backward maps the gradient back.
#include "ops/shape_ops.h"

#include <algorithm>

#include "core/autograd/node.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/reduce.h"
#include "ops/sbp_rules.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;

namespace {

Tensor make_view(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  require_local("view", x);
  return Tensor::view_of(x.storage(), std::move(shape), std::move(strides), offset, x.dtype());
}

// Strides that let `shape` view x's memory without a copy (PyTorch's computeStride).
std::optional<Shape> view_strides(const Tensor& x, const Shape& shape) {
  const Shape& old = x.shape();
  const Shape& old_strides = x.strides();
  Shape out(shape.size());
  if (old.empty() || x.numel() == 0) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old.size()) - 1; d >= 0; --d) {
    tensor_numel *= old[d];
    if (d == 0 || (old[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

void record_reshape(const char* name, const Tensor& x, const Tensor& out) {
  if (autograd::needs_grad(x))
    autograd::record(name, {x}, {out}, [shape = x.shape()](const Grads& g, const Needs&) -> Grads {
      return {reshape(g[0], shape)};
    });
}

}  // namespace

Shape infer_shape(Shape shape, int64_t numel, const char* op) {
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) fail(op, "only one dimension can be -1 in ", shape_str(shape));
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail(op, "invalid dimension ", shape[i], " in ", shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      fail(op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
    shape[infer_at] = numel / known;
  } else if (known != numel) {
    fail(op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
  }
  return shape;
}

namespace {
// A reshaping view of a global tensor: the same front end on the shard, to its local shape.
template <class F>
Tensor global_reshape(const char* name, const Tensor& x, Shape shape, F f) {
  return run_global1(name, {x}, std::move(shape), {},
                     [f](const auto& l, const Shape& local) { return f(l[0], local); });
}
}  // namespace

Tensor view(const Tensor& x, Shape shape) {
  if (x.is_global())
    return global_reshape("view", x, infer_shape(std::move(shape), logical_numel(x), "view"),
                          [](const Tensor& l, const Shape& s) { return view(l, s); });
  shape = infer_shape(std::move(shape), x.numel(), "view");
  auto strides = view_strides(x, shape);
  if (!strides)
    fail("view", "a tensor of shape ", shape_str(x.shape()), " with strides ",
         shape_str(x.strides()), " cannot be viewed as ", shape_str(shape),
         " without a copy; use reshape()");
  Tensor out = make_view(x, shape, *strides, x.offset());
  record_reshape("view", x, out);
  return out;
}

Tensor reshape(const Tensor& x, Shape shape) {
  if (x.is_global())
    return global_reshape("reshape", x, infer_shape(std::move(shape), logical_numel(x), "reshape"),
                          [](const Tensor& l, const Shape& s) { return reshape(l, s); });
  shape = infer_shape(std::move(shape), x.numel(), "reshape");
  if (auto strides = view_strides(x, shape)) {
    Tensor out = make_view(x, shape, *strides, x.offset());
    record_reshape("reshape", x, out);
    return out;
  }
  Tensor c = contiguous_copy(x);
  Tensor out = make_view(c, shape, contiguous_strides(shape), 0);
  out.impl()->is_view = false;
  record_reshape("reshape", x, out);
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  if (static_cast<int64_t>(dims.size()) != x.dim())
    fail("permute", "got ", dims.size(), " dims for a tensor of shape ", shape_str(x.shape()));
  if (x.is_global()) {
    std::vector<int64_t> perm;
    Shape shape;
    for (int64_t d : dims) {
      perm.push_back(normalize_axis(d, x.dim(), "permute"));
      shape.push_back(logical_shape(x)[perm.back()]);
    }
    return run_global1("permute", {x}, shape, perm,
                       [perm](const auto& l, const Shape&) { return permute(l[0], perm); });
  }
  Shape shape(dims.size()), strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = normalize_axis(dims[i], x.dim(), "permute");
    if (inverse[d] != -1) fail("permute", "dimension ", d, " repeats in the permutation");
    inverse[d] = static_cast<int64_t>(i);
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  Tensor out = make_view(x, shape, strides, x.offset());
  if (autograd::needs_grad(x))
    autograd::record("permute", {x}, {out}, [inverse](const Grads& g, const Needs&) -> Grads {
      return {permute(g[0], inverse)};
    });
  return out;
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> dims(x.dim());
  for (int64_t i = 0; i < x.dim(); ++i) dims[i] = i;
  if (x.dim() == 0) return permute(x, dims);
  std::swap(dims[normalize_axis(d0, x.dim(), "transpose")],
            dims[normalize_axis(d1, x.dim(), "transpose")]);
  return permute(x, dims);
}

Tensor slice(const Tensor& x, int64_t axis, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step) {
  if (x.dim() == 0) fail<IndexError>("slice", "cannot slice a 0-d tensor");
  axis = normalize_axis(axis, x.dim(), "slice");
  if (step <= 0) fail("slice", "step must be positive, got ", step);
  if (x.is_global()) {
    Shape shape = logical_shape(x);
    const int64_t n = shape[axis];
    auto clampi = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
    int64_t b = start ? clampi(*start) : 0, e = stop ? clampi(*stop) : n;
    shape[axis] = e > b ? (e - b + step - 1) / step : 0;
    return run_global1("slice", {x}, shape, {axis, 0}, [=](const auto& l, const Shape&) {
      return slice(l[0], axis, start, stop, step);
    });
  }
  const int64_t n = x.shape()[axis];
  auto clampi = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  int64_t b = start ? clampi(*start) : 0;
  int64_t e = stop ? clampi(*stop) : n;
  int64_t len = e > b ? (e - b + step - 1) / step : 0;
  Shape shape = x.shape(), strides = x.strides();
  shape[axis] = len;
  strides[axis] *= step;
  Tensor out = make_view(x, shape, strides, x.offset() + b * x.strides()[axis]);
  if (autograd::needs_grad(x))
    autograd::record(
        "slice", {x}, {out},
        [shape = x.shape(), axis, b, step, len](const Grads& g, const Needs&) -> Grads {
          Tensor gx = zeros(shape, g[0].dtype(), g[0].device());
          Tensor region = slice(gx, axis, b, b + len * step, step);
          copy_(region, g[0]);
          return {gx};
        });
  return out;
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  axis = normalize_axis(axis, x.dim(), "narrow");
  int64_t n = logical_shape(x)[axis];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    fail<IndexError>("narrow", "start ", start, " + length ", length, " exceeds dimension ", axis,
                     " of size ", n, " in shape ", shape_str(x.shape()));
  return slice(x, axis, start, start + length, 1);
}

Tensor select(const Tensor& x, int64_t axis, int64_t index) {
  axis = normalize_axis(axis, x.dim(), "select");
  int64_t n = logical_shape(x)[axis];
  if (index < -n || index >= n)
    fail<IndexError>("select", "index ", index, " is out of bounds for dimension ", axis,
                     " with size ", n);
  if (index < 0) index += n;
  if (x.is_global()) {
    Shape shape = logical_shape(x);
    shape.erase(shape.begin() + axis);
    return run_global1("select", {x}, shape, {axis, 1},
                       [=](const auto& l, const Shape&) { return select(l[0], axis, index); });
  }
  Tensor s = slice(x, axis, index, index + 1, 1);
  return squeeze(s, std::vector<int64_t>{axis});
}

Tensor expand(const Tensor& x, Shape shape) {
  if (shape.size() < static_cast<size_t>(x.dim()))
    fail("expand", "cannot expand shape ", shape_str(x.shape()), " to fewer dimensions ",
         shape_str(shape));
  size_t off = shape.size() - x.dim();
  if (x.is_global()) {
    for (size_t i = off; i < shape.size(); ++i)
      if (shape[i] == -1) shape[i] = logical_shape(x)[i - off];
    broadcast_shapes(logical_shape(x), shape, "expand");
    return global_reshape("expand", x, shape,
                          [](const Tensor& l, const Shape& s) { return expand(l, s); });
  }
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < off) {
      if (shape[i] < 0) fail("expand", "-1 is not allowed for a new leading dimension");
      continue;
    }
    int64_t have = x.shape()[i - off];
    if (shape[i] == -1) shape[i] = have;
    if (have == shape[i]) {
      strides[i] = x.strides()[i - off];
    } else if (have != 1) {
      fail("expand", "the expanded size ", shape[i], " must match the existing size ", have,
           " at dimension ", i, " (shape ", shape_str(x.shape()), ")");
    }
  }
  Tensor out = make_view(x, shape, strides, x.offset());
  if (autograd::needs_grad(x))
    autograd::record("expand", {x}, {out},
                     [shape = x.shape()](const Grads& g, const Needs&) -> Grads {
                       return {sum_to(g[0], shape)};
                     });
  return out;
}

Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> axes) {
  if (x.is_global()) {
    Shape shape;
    const Shape& in = logical_shape(x);
    std::vector<bool> drop(x.dim(), !axes);
    if (axes)
      for (int64_t a : *axes) drop[normalize_axis(a, x.dim(), "squeeze")] = true;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!(drop[d] && in[d] == 1)) shape.push_back(in[d]);
    return global_reshape("squeeze", x, shape,
                          [](const Tensor& l, const Shape& s) { return reshape(l, s); });
  }
  std::vector<bool> drop(x.dim(), false);
  if (axes) {
    for (int64_t a : *axes) {
      int64_t d = normalize_axis(a, x.dim(), "squeeze");
      if (x.dim() > 0 && x.shape()[d] == 1) drop[d] = true;
    }
  } else {
    for (int64_t d = 0; d < x.dim(); ++d) drop[d] = x.shape()[d] == 1;
  }
  Shape shape, strides;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!drop[d]) {
      shape.push_back(x.shape()[d]);
      strides.push_back(x.strides()[d]);
    }
  Tensor out = make_view(x, shape, strides, x.offset());
  record_reshape("squeeze", x, out);
  return out;
}

Tensor unsqueeze(const Tensor& x, int64_t axis) {
  axis = normalize_axis(axis, x.dim() + 1, "unsqueeze");
  if (x.is_global()) {
    Shape shape = logical_shape(x);
    shape.insert(shape.begin() + axis, 1);
    return global_reshape("unsqueeze", x, shape,
                          [](const Tensor& l, const Shape& s) { return reshape(l, s); });
  }
  Shape shape = x.shape(), strides = x.strides();
  int64_t stride = axis < x.dim() ? x.strides()[axis] * x.shape()[axis] : 1;
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, stride);
  Tensor out = make_view(x, shape, strides, x.offset());
  record_reshape("unsqueeze", x, out);
  return out;
}

Tensor flatten(const Tensor& x, int64_t start, int64_t end) {
  if (x.dim() == 0) return reshape(x, {1});
  start = normalize_axis(start, x.dim(), "flatten");
  end = normalize_axis(end, x.dim(), "flatten");
  if (start > end) fail("flatten", "start_dim ", start, " comes after end_dim ", end);
  const Shape& in = logical_shape(x);
  Shape shape(in.begin(), in.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= in[d];
  shape.push_back(merged);
  shape.insert(shape.end(), in.begin() + end + 1, in.end());
  return reshape(x, shape);
}

Tensor contiguous(const Tensor& x) {
  return x.is_contiguous() ? x : clone(x);
}

Tensor clone(const Tensor& x) {
  if (x.is_global())
    return run_global1("clone", {x}, logical_shape(x), {},
                       [](const auto& l, const Shape&) { return clone(l[0]); });
  Tensor out = contiguous_copy(x);
  if (autograd::needs_grad(x))
    autograd::record("clone", {x}, {out},
                     [](const Grads& g, const Needs&) -> Grads { return {g[0]}; });
  return out;
}

Tensor detach(const Tensor& x) {
  if (x.is_global()) {
    Tensor out = x.alias();
    out.impl()->global = x.impl()->global;
    return out;
  }
  Tensor out = make_view(x, x.shape(), x.strides(), x.offset());
  out.impl()->is_view = x.impl()->is_view;
  return out;
}

Tensor view_as_dtype(const Tensor& x, DType dtype) {
  if (itemsize(dtype) != itemsize(x.dtype()))
    fail("view", "cannot view ", dtype_name(x.dtype()), " as ", dtype_name(dtype),
         ": element sizes differ");
  return Tensor::view_of(x.storage(), x.shape(), x.strides(), x.offset(), dtype);
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  const Shape& have = logical_shape(g);
  if (have == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  OFL_CHECK(lead >= 0, "sum_to ", shape_str(have), " -> ", shape_str(shape));
  Axes axes;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && have[d] != 1)) axes.push_back(d);
  Tensor r = axes.empty() ? g : sum(g, axes, true);
  return reshape(r, shape);
}

OFL_REGISTER_OPS({
    {.name = "view", .num_inputs = 1, .sbp = &sbp_rules::kReshape},
    {.name = "reshape", .num_inputs = 1, .sbp = &sbp_rules::kReshape},
    {.name = "permute", .num_inputs = 1, .sbp = &sbp_rules::kPermute},
    {.name = "transpose", .num_inputs = 1, .sbp = &sbp_rules::kPermute},
    {.name = "narrow", .num_inputs = 1, .sbp = &sbp_rules::kSlice},
    {.name = "slice", .num_inputs = 1, .sbp = &sbp_rules::kSlice},
    {.name = "select", .num_inputs = 1, .sbp = &sbp_rules::kSlice},
    {.name = "expand", .num_inputs = 1, .sbp = &sbp_rules::kExpand},
    {.name = "squeeze", .num_inputs = 1, .sbp = &sbp_rules::kReshape},
    {.name = "unsqueeze", .num_inputs = 1, .sbp = &sbp_rules::kReshape},
    {.name = "flatten", .num_inputs = 1, .sbp = &sbp_rules::kReshape},
    {.name = "contiguous", .num_inputs = 1, .sbp = &sbp_rules::kIdentity},
    {.name = "clone", .num_inputs = 1, .sbp = &sbp_rules::kIdentity},
    {.name = "detach", .num_inputs = 1, .differentiable = false, .sbp = &sbp_rules::kIdentity},
});

}  // namespace ofl
