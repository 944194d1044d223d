// Indexing and joining op definitions.
#include "ops/index_ops.h"

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/reduce.h"
#include "ops/sbp_rules.h"
#include "ops/shape_ops.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;

namespace {

Tensor check_index(const char* op, const Tensor& index, int64_t size, const Tensor& x,
                   int64_t axis) {
  if (is_floating(index.dtype()) || index.dtype() == DType::kBool)
    fail<TypeError>(op, "index must be an integer tensor, got ", index.str());
  Tensor idx = contiguous(to_dtype(detach(index), DType::kInt64));
  if (idx.numel() > 0) {
    int64_t lo = amin(idx).item<int64_t>(), hi = amax(idx).item<int64_t>();
    if (lo < 0 || hi >= size)
      fail<IndexError>(op, "index ", lo < 0 ? lo : hi, " is out of range for dimension ", axis,
                       " of size ", size, " (input ", shape_str(x.shape()), ")");
  }
  return idx;
}

// The view of t's leading region with the given shape.
Tensor narrow_to(const Tensor& t, const Shape& shape) {
  Tensor r = t;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (shape[d] != t.shape()[d]) r = narrow(r, d, 0, shape[d]);
  return r;
}

struct Split3 {
  int64_t outer = 1, n = 1, inner = 1;
};
Split3 split3(const Shape& shape, int64_t axis) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.n = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

Tensor index_select_raw(const Tensor& x, int64_t axis, const Tensor& idx) {
  Tensor xc = contiguous(detach(x));
  Split3 s = split3(x.shape(), axis);
  Shape shape = x.shape();
  shape[axis] = idx.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  index_select_kernel().get(x.device().type)(xc, idx, s.outer, s.n, s.inner, out);
  return out;
}

Tensor index_add_raw(const Tensor& x, int64_t axis, const Tensor& idx, const Tensor& src) {
  Tensor out = contiguous_copy(detach(x));
  Split3 s = split3(x.shape(), axis);
  index_add_kernel().get(x.device().type)(contiguous(to_dtype(detach(src), x.dtype())), idx,
                                          s.outer, s.n, s.inner, out);
  return out;
}

void check_same_rank(const char* op, const Tensor& x, int64_t axis, const Tensor& index) {
  if (index.dim() != x.dim())
    fail(op, "index of shape ", shape_str(index.shape()), " must have as many dimensions as ",
         "the input of shape ", shape_str(x.shape()));
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != axis && index.shape()[d] > x.shape()[d])
      fail(op, "index of shape ", shape_str(index.shape()), " is larger than the input of shape ",
           shape_str(x.shape()), " at dimension ", d);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  if (index.dim() > 1)
    fail("index_select", "index must be 0-d or 1-d, got ", shape_str(index.shape()));
  axis = normalize_axis(axis, x.dim(), "index_select");
  if (any_global({x, index})) {
    Shape shape = x.dim() == 0 ? Shape{1} : logical_shape(x);
    shape[axis] = logical_numel(index);
    return run_global1(
        "index_select", {x, index}, shape, {axis},
        [axis](const auto& l, const Shape&) { return index_select(l[0], axis, l[1]); });
  }
  Tensor xx = x.dim() == 0 ? reshape(x, {1}) : x;
  Tensor idx = reshape(check_index("index_select", index, xx.shape()[axis], x, axis), {-1});
  Tensor out = index_select_raw(xx, axis, idx);
  if (autograd::needs_grad(x)) {
    autograd::record(
        "index_select", {x}, {out},
        [shape = xx.shape(), axis, idx](const Grads& g, const Needs&) -> Grads {
          return {index_add(zeros(shape, g[0].dtype(), g[0].device()), axis, idx, g[0])};
        });
  }
  return out;
}

Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  axis = normalize_axis(axis, x.dim(), "index_add");
  if (any_global({x, index, src}))
    return run_global1(
        "index_add", {x, index, src}, logical_shape(x), {axis},
        [axis](const auto& l, const Shape&) { return index_add(l[0], axis, l[1], l[2]); });
  Tensor idx = reshape(check_index("index_add", index, x.shape()[axis], x, axis), {-1});
  Shape expect = x.shape();
  expect[axis] = idx.numel();
  if (src.shape() != expect)
    fail("index_add", "source of shape ", shape_str(src.shape()), " does not match the expected ",
         shape_str(expect));
  Tensor out = index_add_raw(x, axis, idx, src);
  if (autograd::needs_grad(x, src)) {
    autograd::record(
        "index_add", {x, src}, {out}, [axis, idx](const Grads& g, const Needs& n) -> Grads {
          return {n[0] ? g[0] : Tensor(), n[1] ? index_select(g[0], axis, idx) : Tensor()};
        });
  }
  return out;
}

namespace {

// A vocabulary-split table's part of the lookup: weight holds rows [start, start + rows) of a
// table of `vocab` rows; indices elsewhere give zeros, so the parts add up to the lookup (the
// P(sum) output of embedding's S(0), B signature).
Tensor embedding_rows(const Tensor& weight, const Tensor& indices, int64_t start, int64_t vocab,
                      std::optional<int64_t> padding_idx) {
  const int64_t rows = weight.shape()[0];
  Tensor idx = check_index("embedding", indices, vocab, weight, 0);
  Tensor local = sub(idx, wrap_scalar(double(start), DType::kInt64));
  Tensor mine = logical_and(ge(local, wrap_scalar(0.0, DType::kInt64)),
                            lt(local, wrap_scalar(double(rows), DType::kInt64)));
  Tensor safe = where(mine, local, zeros_like(local));
  std::optional<int64_t> pad;
  if (padding_idx && *padding_idx >= start && *padding_idx < start + rows)
    pad = *padding_idx - start;
  return mul(embedding(weight, safe, pad), to_dtype(unsqueeze(mine, -1), weight.dtype()));
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  if (weight.dim() != 2)
    fail("embedding", "weight must be 2-d (num_embeddings, dim), got ",
         shape_str(logical_shape(weight)));
  if (any_global({weight, indices})) {
    Shape shape = logical_shape(indices);
    shape.push_back(logical_shape(weight)[1]);
    const int64_t vocab = logical_shape(weight)[0];
    return run_global1("embedding", {weight, indices}, shape, {},
                       [padding_idx, vocab](const auto& l, const Shape&) {
                         if (l[0].shape()[0] == vocab) return embedding(l[0], l[1], padding_idx);
                         return embedding_rows(l[0], l[1], shard_offsets(0)[0], vocab, padding_idx);
                       });
  }
  Tensor idx = reshape(check_index("embedding", indices, weight.shape()[0], weight, 0), {-1});
  Tensor rows = index_select_raw(weight, 0, idx);
  Shape shape = indices.shape();
  shape.push_back(weight.shape()[1]);
  Tensor out = reshape(rows, shape);
  if (autograd::needs_grad(weight)) {
    autograd::record(
        "embedding", {weight}, {out},
        [wshape = weight.shape(), idx, padding_idx](const Grads& g, const Needs&) -> Grads {
          Tensor g2 = reshape(g[0], {-1, wshape[1]});
          if (padding_idx) {
            Tensor keep = ne(idx, wrap_scalar(static_cast<double>(*padding_idx), DType::kInt64));
            g2 = mul(g2, unsqueeze(keep, 1));
          }
          return {index_add(zeros(wshape, g2.dtype(), g2.device()), 0, idx, g2)};
        });
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  axis = normalize_axis(axis, x.dim(), "gather");
  if (any_global({x, index}))
    return run_global1("gather", {x, index}, logical_shape(index), {axis},
                       [axis](const auto& l, const Shape&) { return gather(l[0], axis, l[1]); });
  check_same_rank("gather", x, axis, index);
  Tensor idx = check_index("gather", index, x.dim() ? x.shape()[axis] : 1, x, axis);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  gather_kernel().get(x.device().type)(contiguous(detach(x)), axis, idx, out);
  if (autograd::needs_grad(x)) {
    autograd::record(
        "gather", {x}, {out},
        [shape = x.shape(), axis, idx](const Grads& g, const Needs&) -> Grads {
          return {scatter_add(zeros(shape, g[0].dtype(), g[0].device()), axis, idx, g[0])};
        });
  }
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  axis = normalize_axis(axis, x.dim(), "scatter_add");
  if (any_global({x, index, src}))
    return run_global1(
        "scatter_add", {x, index, src}, logical_shape(x), {axis},
        [axis](const auto& l, const Shape&) { return scatter_add(l[0], axis, l[1], l[2]); });
  check_same_rank("scatter_add", x, axis, index);
  for (int64_t d = 0; d < index.dim(); ++d)
    if (index.shape()[d] > src.shape()[d])
      fail("scatter_add", "index of shape ", shape_str(index.shape()),
           " is larger than the source of shape ", shape_str(src.shape()));
  Tensor idx = check_index("scatter_add", index, x.dim() ? x.shape()[axis] : 1, x, axis);
  Tensor out = contiguous_copy(detach(x));
  Tensor srcc = contiguous(to_dtype(detach(src), x.dtype()));
  if (srcc.shape() != idx.shape()) srcc = contiguous(narrow_to(srcc, idx.shape()));
  scatter_add_kernel().get(x.device().type)(srcc, axis, idx, out);
  if (autograd::needs_grad(x, src)) {
    autograd::record("scatter_add", {x, src}, {out},
                     [axis, idx, sshape = src.shape()](const Grads& g, const Needs& n) -> Grads {
                       Tensor gs;
                       if (n[1]) {
                         gs = zeros(sshape, g[0].dtype(), g[0].device());
                         Tensor region = narrow_to(gs, idx.shape());
                         copy_(region, gather(g[0], axis, idx));
                       }
                       return {n[0] ? g[0] : Tensor(), gs};
                     });
  }
  return out;
}

Tensor cat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail("cat", "expects a non-empty list of tensors");
  const Tensor& first = xs[0];
  axis = normalize_axis(axis, first.dim(), "cat");
  if (first.dim() == 0) fail("cat", "zero-dimensional tensors cannot be concatenated");
  bool global = false;
  for (const Tensor& t : xs) global |= t.is_global();
  if (global) {
    Shape shape = logical_shape(first);
    shape[axis] = 0;
    for (const Tensor& t : xs) {
      if (t.dim() != first.dim())
        fail("cat", "tensors of shapes ", shape_str(logical_shape(first)), " and ",
             shape_str(logical_shape(t)), " have different ranks");
      shape[axis] += logical_shape(t)[axis];
    }
    return run_global1("cat", xs, shape, {axis},
                       [axis](const auto& l, const Shape&) { return cat(l, axis); });
  }
  DType dt = first.dtype();
  Shape shape = first.shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    if (t.dim() != first.dim())
      fail("cat", "tensor 0 has shape ", shape_str(first.shape()), " but tensor ", i, " has shape ",
           shape_str(t.shape()), ": ranks differ");
    for (int64_t d = 0; d < t.dim(); ++d)
      if (d != axis && t.shape()[d] != shape[d])
        fail("cat", "tensor 0 has shape ", shape_str(first.shape()), " but tensor ", i,
             " has shape ", shape_str(t.shape()), ": sizes differ at dimension ", d);
    total += t.shape()[axis];
    dt = promote_types(dt, t.dtype());
  }
  shape[axis] = total;
  Tensor out = Tensor::empty(shape, dt, first.device());
  std::vector<int64_t> sizes;
  {
    autograd::NoGradGuard no_grad;
    int64_t at = 0;
    for (const auto& t : xs) {
      Tensor region = narrow(out, axis, at, t.shape()[axis]);
      copy_kernel().get(out.device().type)(t, region);
      at += t.shape()[axis];
      sizes.push_back(t.shape()[axis]);
    }
  }
  if (autograd::any_requires_grad(xs)) {
    std::vector<DType> dtypes;
    for (const auto& t : xs) dtypes.push_back(t.dtype());
    autograd::record("cat", xs, {out},
                     [axis, sizes, dtypes](const Grads& g, const Needs& n) -> Grads {
                       Grads parts = split_sizes(g[0], sizes, axis);
                       for (size_t i = 0; i < parts.size(); ++i)
                         parts[i] = n[i] ? to_dtype(parts[i], dtypes[i]) : Tensor();
                       return parts;
                     });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail("stack", "expects a non-empty list of tensors");
  axis = normalize_axis(axis, xs[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (logical_shape(xs[i]) != logical_shape(xs[0]))
      fail("stack", "tensor 0 has shape ", shape_str(logical_shape(xs[0])), " but tensor ", i,
           " has shape ", shape_str(logical_shape(xs[i])), "; stack needs equal shapes");
    parts.push_back(unsqueeze(xs[i], axis));
  }
  return cat(parts, axis);
}

std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  axis = normalize_axis(axis, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail("split", "split sizes must be non-negative, got ", s);
    total += s;
  }
  if (total != logical_shape(x)[axis])
    fail("split", "split sizes sum to ", total, " but dimension ", axis, " of shape ",
         shape_str(logical_shape(x)), " has size ", logical_shape(x)[axis]);
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, axis, at, s));
    at += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis) {
  if (split_size <= 0) fail("split", "split_size must be positive, got ", split_size);
  axis = normalize_axis(axis, x.dim(), "split");
  std::vector<int64_t> sizes;
  for (int64_t at = 0, n = logical_shape(x)[axis]; at < n; at += split_size)
    sizes.push_back(std::min(split_size, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return split_sizes(x, sizes, axis);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
  if (chunks <= 0) fail("chunk", "chunks must be positive, got ", chunks);
  int64_t n = logical_shape(x)[normalize_axis(axis, x.dim(), "chunk")];
  return split(x, std::max<int64_t>(1, (n + chunks - 1) / chunks), axis);
}

OFL_REGISTER_OPS({
    {.name = "index_select",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kIndexSelect},
    {.name = "gather", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kGather},
    {.name = "embedding", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kEmbedding},
    {.name = "split", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "chunk", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "cat", .num_inputs = -1, .cost = elementwise_cost, .sbp = &sbp_rules::kCat},
    {.name = "stack", .num_inputs = -1, .cost = elementwise_cost},
    {.name = "scatter_add", .num_inputs = 3, .cost = elementwise_cost, .sbp = &sbp_rules::kScatter},
    {.name = "index_add", .num_inputs = 3, .cost = elementwise_cost, .sbp = &sbp_rules::kScatter},
});

}  // namespace ofl
