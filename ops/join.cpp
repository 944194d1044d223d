// Joining and splitting: cat (an op) and its composites stack, split and chunk, and NumPy's
// stacking functions as PyTorch has them: atleast_1d/2d/3d, hstack, vstack (row_stack), dstack,
// column_stack.
#include "ops/join.h"

#include "core/dispatcher.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

// --- cat ---

std::vector<TensorMeta> infer_cat(const InferArgs& a) {
  if (a.in.empty()) fail(a.op, "expects a non-empty list of tensors");
  const Shape& first = a.in[0].shape;
  const int64_t axis = a.attrs.axis("dim", a.in[0].shape.size(), a.op);
  if (first.empty()) fail(a.op, "zero-dimensional tensors cannot be concatenated");
  Shape out = first;
  out[axis] = 0;
  DType dt = a.in[0].dtype;
  for (size_t i = 0; i < a.in.size(); ++i) {
    const Shape& s = a.in[i].shape;
    if (s.size() != first.size())
      fail(a.op, "tensor 0 has shape ", shape_str(first), " but tensor ", i, " has shape ",
           shape_str(s), ": ranks differ");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != first[d])
        fail(a.op, "tensor 0 has shape ", shape_str(first), " but tensor ", i, " has shape ",
             shape_str(s), ": sizes differ at dimension ", d);
    out[axis] += s[axis];
    dt = promote_types(dt, a.in[i].dtype);
  }
  return single_output(std::move(out), dt, common_device(a));
}

void compute_cat(const ComputeArgs& c) {
  const Tensor& out = c.out[0];
  const int64_t axis = c.attrs.axis("dim", out.dim(), "index");
  int64_t at = 0;
  for (const Tensor& t : c.in) {
    copy_kernel().get(out.device().type)(t, narrow(out, axis, at, t.shape()[axis]));
    at += t.shape()[axis];
  }
}

std::vector<Tensor> cat_grad(const BackwardArgs& b) {
  const int64_t axis = b.attrs.axis("dim", b.in_meta[0].shape.size(), "index");
  std::vector<int64_t> sizes;
  for (const TensorMeta& m : b.in_meta) sizes.push_back(m.shape[axis]);
  std::vector<Tensor> parts = split_sizes(b.grads[0], sizes, axis);
  for (size_t i = 0; i < parts.size(); ++i)
    parts[i] = b.needs[i] ? to_dtype(parts[i], b.in_meta[i].dtype) : Tensor();
  return parts;
}

// cat: typed attr dim; split on another axis, or all P(sum).
Sigs cat_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = q.typed->axis("dim", rank_of(q.out[0]), "index");
  for (int64_t d = 0; d < rank_of(q.out[0]); ++d)
    if (d != axis) sigs.push_back(uniform(q, Sbp::split(d)));
  sigs.push_back(uniform(q, kPSum));
  return sigs;
}

const SbpRule kCat{"cat", cat_sbp};

}  // namespace

Tensor cat(const std::vector<Tensor>& xs, int64_t axis) {
  static const OpDef& def = op_def("cat");
  return dispatch1(def, xs, {{"dim", axis}});
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail("stack", "expects a non-empty list of tensors");
  axis = normalize_axis(axis, xs[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (meta_of(xs[i]).shape != meta_of(xs[0]).shape)
      fail("stack", "tensor 0 has shape ", shape_str(meta_of(xs[0]).shape), " but tensor ", i,
           " has shape ", shape_str(meta_of(xs[i]).shape), "; stack needs equal shapes");
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
  if (total != meta_of(x).shape[axis])
    fail("split", "split sizes sum to ", total, " but dimension ", axis, " of shape ",
         shape_str(meta_of(x).shape), " has size ", meta_of(x).shape[axis]);
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
  for (int64_t at = 0, n = meta_of(x).shape[axis]; at < n; at += split_size)
    sizes.push_back(std::min(split_size, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return split_sizes(x, sizes, axis);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
  if (chunks <= 0) fail("chunk", "chunks must be positive, got ", chunks);
  int64_t n = meta_of(x).shape[normalize_axis(axis, x.dim(), "chunk")];
  return split(x, std::max<int64_t>(1, (n + chunks - 1) / chunks), axis);
}

namespace {

// x with at least `n` dimensions, as NumPy adds them: 0-d -> (1, ...), 1-d (k) -> (1, k) and
// for 3 dimensions (1, k, 1), 2-d (m, k) -> (m, k, 1).
Tensor at_least(const Tensor& x, int64_t n) {
  const Shape s = meta_of(x).shape;
  if (int64_t(s.size()) >= n) return x;
  if (s.empty()) return reshape(x, Shape(size_t(n), 1));
  if (s.size() == 1) return reshape(x, n == 2 ? Shape{1, s[0]} : Shape{1, s[0], 1});
  return reshape(x, {s[0], s[1], 1});
}

std::vector<Tensor> all_at_least(const std::vector<Tensor>& xs, int64_t n, const char* op) {
  if (xs.empty()) fail(op, "expects a non-empty list of tensors");
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(at_least(x, n));
  return out;
}

Tensor hstack(const CallArgs& a) {
  const std::vector<Tensor> xs = all_at_least(a.tensors(0), 1, "hstack");
  return cat(xs, xs[0].dim() == 1 ? 0 : 1);
}

Tensor column_stack(const CallArgs& a) {
  std::vector<Tensor> xs;
  for (const Tensor& x : a.tensors(0))
    xs.push_back(x.dim() <= 1 ? reshape(x, {-1, 1}) : x);  // vectors as columns
  if (xs.empty()) fail("column_stack", "expects a non-empty list of tensors");
  return cat(xs, 1);
}

Api at_least_api(const char* text, int64_t n) {
  return {text,
          [n](const CallArgs& a) -> CallResult { return at_least(a.tensor(0), n); },
          kFunction,
          {}};
}

// atleast_Nd([x, y, ...]): each of a list.
Api at_least_list_api(const char* text, int64_t n) {
  return {text,
          [n](const CallArgs& a) -> CallResult {
            std::vector<Tensor> out;
            for (const Tensor& x : a.tensors(0)) out.push_back(at_least(x, n));
            return out;
          },
          kFunction,
          {}};
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "split",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .api = {{"split(Tensor input, int split_size_or_sections, int dim=0) -> Tensor[]",
              call_front<split>()},
             {"split(Tensor input, int[] split_size_or_sections, int dim=0) -> Tensor[]",
              call_front<split_sizes>()}}},
    {.name = "chunk",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .api = {{"chunk(Tensor input, int chunks, int dim=0) -> Tensor[]", call_front<chunk>()}}},
    {.name = "cat",
     .num_inputs = -1,
     .cost = elementwise_cost,
     .sbp = &kCat,
     .attrs = {{"dim", AttrType::kInt}},
     .infer = infer_cat,
     .compute = compute_cat,
     .backward = cat_grad,
     .api = {{"cat(Tensor[] tensors, int dim=0) -> Tensor",
              [](const CallArgs& a) {
                // PyTorch's legacy rule: 1-d empty tensors are skipped beside others.
                std::vector<Tensor> xs;
                for (const Tensor& x : a.tensors(0))
                  if (!(x.dim() == 1 && meta_of(x).shape[0] == 0)) xs.push_back(x);
                if (xs.empty() || xs.size() == a.tensors(0).size())
                  return cat(a.tensors(0), a.integer(1));
                return cat(xs, a.integer(1));
              },
              kFunction}}},
    {.name = "stack",
     .num_inputs = -1,
     .cost = elementwise_cost,
     .api = {{"stack(Tensor[] tensors, int dim=0) -> Tensor", call_front<stack>(), kFunction}}},
    {.name = "atleast_1d",
     .api = {at_least_api("atleast_1d(Tensor input) -> Tensor", 1),
             at_least_api("atleast_2d(Tensor input) -> Tensor", 2),
             at_least_api("atleast_3d(Tensor input) -> Tensor", 3),
             at_least_list_api("atleast_1d(Tensor[] tensors) -> Tensor[]", 1),
             at_least_list_api("atleast_2d(Tensor[] tensors) -> Tensor[]", 2),
             at_least_list_api("atleast_3d(Tensor[] tensors) -> Tensor[]", 3)},
     .doc = "The tensor with at least 1, 2 or 3 dimensions, as NumPy adds them"},
    {.name = "hstack",
     .num_inputs = -1,
     .api = {{"hstack(Tensor[] tensors) -> Tensor", hstack, kFunction},
             {"vstack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 2, "vstack"), 0); },
              kFunction},
             {"row_stack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 2, "row_stack"), 0); },
              kFunction},
             {"dstack(Tensor[] tensors) -> Tensor",
              [](const CallArgs& a) { return cat(all_at_least(a.tensors(0), 3, "dstack"), 2); },
              kFunction},
             {"column_stack(Tensor[] tensors) -> Tensor", column_stack, kFunction}},
     .doc = "Tensors joined along columns (hstack), rows (vstack), depth (dstack) or as columns"},
});

}  // namespace ofl::internal
