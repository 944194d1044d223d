// Indexing op definitions (joining: ops/join.cpp). Index bounds are checked by a kernel where the
// indices live (index_check_kernel), so no front end reads tensor data.
#include "ops/index_ops.h"

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/masked.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

const std::vector<AttrDef> kDimAttr{{"dim", AttrType::kInt}};

void require_integer_index(const char* op, const TensorMeta& index) {
  if (is_floating(index.dtype) || index.dtype == DType::kBool)
    fail<TypeError>(op, "index must be an integer tensor, got ", index.str());
}

// The call's dim, normalized against x's rank (a 0-d x indexes like a 1-element vector).
int64_t dim_of(const InferArgs& a) {
  return a.attrs.axis("dim", a.in[0].shape.size(), a.op);
}

// The indices as the kernels read them: contiguous int64, checked against `size` by the kernel.
Tensor checked_index(const char* op, const Tensor& index, int64_t size, int64_t axis) {
  Tensor idx = contiguous_local(converted(index, DType::kInt64));
  index_check_kernel().get(idx.device().type)(op, idx, size, axis);
  return idx;
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

// x and index of the same rank, index no larger than x off the indexed axis (gather, scatter).
void require_same_rank(const char* op, const Shape& x, int64_t axis, const Shape& index) {
  if (index.size() != x.size())
    fail(op, "index of shape ", shape_str(index), " must have as many dimensions as ",
         "the input of shape ", shape_str(x));
  for (size_t d = 0; d < x.size(); ++d)
    if (static_cast<int64_t>(d) != axis && index[d] > x[d])
      fail(op, "index of shape ", shape_str(index), " is larger than the input of shape ",
           shape_str(x), " at dimension ", d);
}

// --- index_select and index_add ---

std::vector<TensorMeta> infer_index_select(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &index = a.in[1];
  require_integer_index(a.op, index);
  if (index.shape.size() > 1) fail(a.op, "index must be 0-d or 1-d, got ", shape_str(index.shape));
  Shape out = x.shape;
  if (out.empty()) {  // a 0-d input stays 0-d (PyTorch's), its one element picked by index
    dim_of(a);
    if (numel_of(index.shape) != 1)
      fail(a.op, "a 0-d input takes an index of one element, got ", shape_str(index.shape));
  } else {
    out[dim_of(a)] = numel_of(index.shape);
  }
  return single_output(std::move(out), x.dtype, common_device(a));
}

void compute_index_select(const ComputeArgs& c) {
  const Tensor x = c.in[0].dim() == 0 ? reshape(c.in[0], {1}) : c.in[0];
  const int64_t axis = c.attrs.axis("dim", x.dim(), "index");
  const Tensor idx = checked_index("index_select", c.in[1], x.shape()[axis], axis);
  const Split3 s = split3(x.shape(), axis);
  // The output's device: a 0-d host x follows a device index there (common_device).
  index_select_kernel().get(c.out[0].device().type)(contiguous(x), idx, s.outer, s.n, s.inner,
                                                    c.out[0]);
}

std::vector<TensorMeta> infer_index_add(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &index = a.in[1], &src = a.in[2];
  require_integer_index(a.op, index);
  if (index.shape.size() > 1) fail(a.op, "index must be 0-d or 1-d, got ", shape_str(index.shape));
  Shape expect = x.shape.empty() ? Shape{1} : x.shape;
  expect[dim_of(a)] = numel_of(index.shape);
  if (src.shape != expect && !(x.shape.empty() && src.shape.empty()))
    fail(a.op, "source of shape ", shape_str(src.shape), " does not match the expected ",
         shape_str(expect));
  return single_output(x.shape, x.dtype, common_device(a));
}

void compute_index_add(const ComputeArgs& c) {
  const Tensor &x = c.in[0], &out = c.out[0];
  const Shape shape = x.dim() == 0 ? Shape{1} : x.shape();
  const int64_t axis = c.attrs.axis("dim", x.dim(), "index");
  const Tensor idx = checked_index("index_add", c.in[1], shape[axis], axis);
  copy_into(out, x);
  const Split3 s = split3(shape, axis);
  index_add_kernel().get(out.device().type)(contiguous_local(converted(c.in[2], x.dtype())), idx,
                                            s.outer, s.n, s.inner, out);
}

// --- gather and scatter_add ---

std::vector<TensorMeta> infer_gather(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &index = a.in[1];
  require_integer_index(a.op, index);
  const int64_t axis = dim_of(a);
  require_same_rank(a.op, x.shape, axis, index.shape);
  return single_output(index.shape, x.dtype, common_device(a));
}

void compute_gather(const ComputeArgs& c) {
  const Tensor& x = c.in[0];
  const int64_t axis = c.attrs.axis("dim", x.dim(), "index");
  const Tensor idx = checked_index("gather", c.in[1], x.dim() ? x.shape()[axis] : 1, axis);
  gather_kernel().get(c.out[0].device().type)(contiguous(x), axis, idx, c.out[0]);
}

std::vector<TensorMeta> infer_scatter_add(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &index = a.in[1], &src = a.in[2];
  require_integer_index(a.op, index);
  const int64_t axis = dim_of(a);
  require_same_rank(a.op, x.shape, axis, index.shape);
  for (size_t d = 0; d < index.shape.size(); ++d)
    if (d >= src.shape.size() || index.shape[d] > src.shape[d])
      fail(a.op, "index of shape ", shape_str(index.shape), " is larger than the source of shape ",
           shape_str(src.shape));
  return single_output(x.shape, x.dtype, common_device(a));
}

// The leading region of t with the given shape.
Tensor leading(const Tensor& t, const Shape& shape) {
  Tensor r = t;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (shape[d] != t.shape()[d]) r = narrow(r, d, 0, shape[d]);
  return r;
}

void compute_scatter_add(const ComputeArgs& c) {
  const Tensor &x = c.in[0], &out = c.out[0];
  const int64_t axis = c.attrs.axis("dim", x.dim(), "index");
  const Tensor idx = checked_index("scatter_add", c.in[1], x.dim() ? x.shape()[axis] : 1, axis);
  copy_into(out, x);
  const Tensor src = contiguous(leading(converted(c.in[2], x.dtype()), idx.shape()));
  scatter_add_kernel().get(out.device().type)(src, axis, idx, out);
}

// scatter: src's values written at the indices (PyTorch's scatter with a src tensor).
std::vector<TensorMeta> infer_scatter(const InferArgs& a) {
  std::vector<TensorMeta> out = infer_scatter_add(a);
  if (a.in[2].dtype != a.in[0].dtype)
    fail<TypeError>(a.op, "the source's dtype ", dtype_name(a.in[2].dtype),
                    " differs from the input's ", dtype_name(a.in[0].dtype));
  return out;
}

void compute_scatter(const ComputeArgs& c) {
  static const OpDef& def = op_def("scatter");
  require_output_shapes(def, c);
  const Tensor &x = c.in[0], &out = c.out[0];
  const int64_t axis = c.attrs.axis("dim", x.dim(), "index");
  const Tensor idx = checked_index("scatter", c.in[1], x.dim() ? x.shape()[axis] : 1, axis);
  copy_into(out, x);
  scatter_kernel().get(out.device().type)(contiguous(leading(c.in[2], idx.shape())), axis, idx,
                                          out);
}

// gather's gradient for scatter_add's source: zeros past the index's extent.
Tensor pad_to(Tensor t, const Shape& shape) {
  Shape sizes = meta_of(t).shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (sizes[d] == shape[d]) continue;
    const int64_t extent = sizes[d];
    sizes[d] = shape[d];
    t = slice_backward(t, sizes, static_cast<int64_t>(d), 0, extent, 1);
  }
  return t;
}

// --- embedding ---

std::vector<TensorMeta> infer_embedding(const InferArgs& a) {
  const TensorMeta &w = a.in[0], &indices = a.in[1];
  if (w.shape.size() != 2)
    fail(a.op, "weight must be 2-d (num_embeddings, dim), got ", shape_str(w.shape));
  require_integer_index(a.op, indices);
  Shape out = indices.shape;
  out.push_back(w.shape[1]);
  return single_output(std::move(out), w.dtype, common_device(a));
}

// A vocabulary-split table holds rows [first_row, first_row + rows) of num_embeddings; its
// shard looks up only those and gives zeros elsewhere, so the parts add up (P(sum)).
Attrs embedding_shard(const Attrs& attrs, const ShardArgs& s) {
  Attrs out = attrs;
  out.set("first_row", s.in_offsets[0].at(0));
  out.set("num_embeddings", s.in_shapes[0].at(0));
  return out;
}

void compute_embedding(const ComputeArgs& c) {
  const Tensor& w = c.in[0];
  const int64_t rows = w.shape()[0], dim = w.shape()[1];
  const int64_t first = c.attrs.has("first_row") ? c.attrs.get<int64_t>("first_row") : 0;
  const int64_t vocab =
      c.attrs.has("num_embeddings") ? c.attrs.get<int64_t>("num_embeddings") : rows;
  Tensor idx = reshape(checked_index("embedding", c.in[1], vocab, 0), {-1});
  const Tensor out = reshape(c.out[0], {idx.numel(), dim});
  auto lookup = index_select_kernel().get(w.device().type);
  if (first == 0 && rows == vocab) {
    lookup(contiguous(w), idx, 1, rows, dim, out);
    return;
  }
  Tensor local = sub(idx, wrap_scalar(static_cast<double>(first), DType::kInt64));
  Tensor mine = logical_and(ge(local, wrap_scalar(0.0, DType::kInt64)),
                            lt(local, wrap_scalar(static_cast<double>(rows), DType::kInt64)));
  lookup(contiguous(w), where(mine, local, zeros_like(local)), 1, rows, dim, out);
  copy_into(out, mul(out, unsqueeze(mine, 1)));
}

// The written-over positions pass no gradient to x; src gets the gradient at its indices.
std::vector<Tensor> scatter_grad(const BackwardArgs& b) {
  const Tensor &g = b.grads[0], &index = b.in[1];
  const int64_t dim = b.attrs.get<int64_t>("dim");
  Tensor gx, gsrc;
  if (b.needs[0]) gx = scatter(g, dim, index, full_like(index, 0.0, g.dtype()));
  if (b.needs[2]) gsrc = pad_to(gather(g, dim, index), b.in_meta[2].shape);
  return {gx, Tensor(), gsrc};
}

std::vector<Tensor> embedding_grad(const BackwardArgs& b) {
  const Tensor &w = b.in[0], &indices = b.in[1];
  const int64_t pad = b.attrs.get<int64_t>("padding_idx");
  Tensor idx = reshape(indices, {-1});
  Tensor g = reshape(b.grads[0], {-1, b.in_meta[0].shape[1]});
  if (pad >= 0)
    g = mul(g, unsqueeze(ne(idx, wrap_scalar(static_cast<double>(pad), DType::kInt64)), 1));
  return {index_add(zeros_like(w), 0, idx, g), Tensor()};
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  static const OpDef& def = op_def("index_select");
  return dispatch1(def, {x, index}, {{"dim", axis}});
}

Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  static const OpDef& def = op_def("index_add");
  return dispatch1(def, {x, index, src}, {{"dim", axis}});
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  static const OpDef& def = op_def("embedding");
  return dispatch1(def, {weight, indices}, {{"padding_idx", padding_idx.value_or(-1)}});
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  static const OpDef& def = op_def("gather");
  return dispatch1(def, {x, index}, {{"dim", axis}});
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  static const OpDef& def = op_def("scatter_add");
  return dispatch1(def, {x, index, src}, {{"dim", axis}});
}

Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  static const OpDef& def = op_def("scatter");
  return dispatch1(def, {x, index, src}, {{"dim", axis}});
}

Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, double value) {
  return scatter(x, axis, index, full_like(index, value, x.dtype()));
}

namespace {

// index_select(x, dim, index): typed attr dim; x split on another axis, a 1-d index split along
// it, or P(sum) x with B index.
Sigs index_select_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = q.typed->axis("dim", rank_of(q.in[0]), "index");
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back({{Sbp::split(d), kB}, {Sbp::split(d)}});
  if (rank_of(q.in[1]) == 1) sigs.push_back({{kB, Sbp::split(0)}, {Sbp::split(axis)}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  return sigs;
}

// gather(x, dim, index): typed attr dim; x and index split on another axis where they agree.
Sigs gather_sbp(const SbpQuery& q) {
  Sigs sigs;
  const Shape &x = q.in[0], &index = q.in[1];
  const int64_t axis = q.typed->axis("dim", rank_of(x), "index");
  for (int64_t d = 0; d < rank_of(index); ++d)
    if (d != axis && x[d] == index[d]) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

// embedding(weight, indices): split indices, or the weight's embedding dim, or its vocabulary
// (S(0) weight, B indices -> P(sum): each rank looks up only the rows it holds).
Sigs embedding_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t ni = rank_of(q.in[1]);
  for (int64_t d = 0; d < ni; ++d) sigs.push_back({{kB, Sbp::split(d)}, {Sbp::split(d)}});
  sigs.push_back({{Sbp::split(1), kB}, {Sbp::split(ni)}});
  sigs.push_back({{Sbp::split(0), kB}, {kPSum}});  // vocabulary split: each part its own rows
  sigs.push_back({{kPSum, kB}, {kPSum}});
  return sigs;
}

// scatter / scatter_add / index_add (x, index, src), typed attr dim: every input split on
// another axis (index B for index_add), or P(sum) x and src with B index.
Sigs scatter_sbp(const SbpQuery& q) {
  Sigs sigs;
  const Shape &x = q.in[0], &index = q.in[1], &src = q.in[2];
  const bool index_select_like = rank_of(index) == 1 && rank_of(x) > 1;  // index_add
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (d == q.typed->axis("dim", rank_of(x), "index") || src[d] != x[d]) continue;
    if (index_select_like)
      sigs.push_back({{Sbp::split(d), kB, Sbp::split(d)}, {Sbp::split(d)}});
    else if (index[d] == x[d])
      sigs.push_back(uniform(q, Sbp::split(d)));
  }
  sigs.push_back({{kPSum, kB, kPSum}, {kPSum}});
  return sigs;
}

// The additive scatters (scatter_add, index_add) also let each rank add its own part of index and
// source, split along `dim` (where the index's values, not positions, say where each goes), into
// a partial self; the parts sum to the whole.
Sigs scatter_add_sbp(const SbpQuery& q) {
  Sigs sigs = scatter_sbp(q);
  const Shape &x = q.in[0], &index = q.in[1], &src = q.in[2];
  const int64_t dim = q.typed->axis("dim", rank_of(x), "index");
  if (rank_of(index) == 1 && rank_of(x) > 1)  // index_add: index (n,), source's dim of n
    sigs.push_back({{kPSum, Sbp::split(0), Sbp::split(dim)}, {kPSum}});
  else if (dim < rank_of(index) && index[dim] == src[dim])
    sigs.push_back({{kPSum, Sbp::split(dim), Sbp::split(dim)}, {kPSum}});
  return sigs;
}

const SbpRule kIndexSelect{"index_select", index_select_sbp};
const SbpRule kGather{"gather", gather_sbp};
const SbpRule kEmbedding{"embedding", embedding_sbp};
const SbpRule kScatter{"scatter", scatter_sbp};
const SbpRule kScatterAdd{"scatter_add", scatter_add_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "index_select",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kIndexSelect,
     .attrs = kDimAttr,
     .infer = infer_index_select,
     .compute = compute_index_select,
     .backward =
         [](const BackwardArgs& b) {
           const Tensor &x = b.in[0], &index = b.in[1];
           const Tensor x1 = b.in_meta[0].shape.empty() ? reshape(x, {1}) : x;
           const Tensor& g = b.grads[0];
           Tensor gx = index_add(zeros_like(x1), b.attrs.get<int64_t>("dim"), reshape(index, {-1}),
                                 g.dim() == 0 ? reshape(g, {1}) : g);
           return std::vector<Tensor>{reshape(gx, b.in_meta[0].shape), Tensor()};
         },
     .saves = kSaveInputs,
     .api = {{"index_select(Tensor input, int dim, Tensor index) -> Tensor",
              call_front<index_select>()}}},
    {.name = "gather",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kGather,
     .attrs = kDimAttr,
     .infer = infer_gather,
     .compute = compute_gather,
     .backward =
         [](const BackwardArgs& b) {
           return std::vector<Tensor>{
               scatter_add(zeros_like(b.in[0]), b.attrs.get<int64_t>("dim"), b.in[1], b.grads[0]),
               Tensor()};
         },
     .saves = kSaveInputs,
     .api = {{"gather(Tensor input, int dim, Tensor index) -> Tensor", call_front<gather>()}}},
    {.name = "embedding",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kEmbedding,
     .attrs = {{"padding_idx", AttrType::kInt}},
     .infer = infer_embedding,
     .compute = compute_embedding,
     .backward = embedding_grad,
     .saves = kSaveInputs,
     .shard_attrs = embedding_shard,
     .api = {{"embedding(Tensor input, Tensor weight, int? padding_idx=None) -> Tensor",
              [](const CallArgs& a) {
                return embedding(a.tensor(1), a.tensor(0), a.optional_integer(2));
              },
              kInternal}}},
    {.name = "scatter_add",
     .num_inputs = 3,
     .cost = elementwise_cost,
     .sbp = &kScatterAdd,
     .attrs = kDimAttr,
     .infer = infer_scatter_add,
     .compute = compute_scatter_add,
     .backward =
         [](const BackwardArgs& b) {
           const int64_t dim = b.attrs.get<int64_t>("dim");
           Tensor gsrc;
           if (b.needs[2]) gsrc = pad_to(gather(b.grads[0], dim, b.in[1]), b.in_meta[2].shape);
           return std::vector<Tensor>{b.needs[0] ? b.grads[0] : Tensor(), Tensor(), gsrc};
         },
     .saves = kSaveInputs,
     .api = {{"scatter_add(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
              call_front<scatter_add>()}}},
    {.name = "scatter",
     .num_inputs = 3,
     .cost = elementwise_cost,
     .sbp = &kScatter,
     .attrs = kDimAttr,
     .infer = infer_scatter,
     .compute = compute_scatter,
     .backward = scatter_grad,
     .saves = kSaveInputs,
     .api = {{"scatter(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
              [](const CallArgs& a) {
                return scatter(a.tensor(0), a.integer(1), a.tensor(2), a.tensor(3));
              }},
             {"scatter(Tensor input, int dim, Tensor index, float value) -> Tensor",
              [](const CallArgs& a) {
                return scatter(a.tensor(0), a.integer(1), a.tensor(2), a.number(3));
              }}}},
    {.name = "index_add",
     .num_inputs = 3,
     .cost = elementwise_cost,
     .sbp = &kScatterAdd,
     .attrs = kDimAttr,
     .infer = infer_index_add,
     .compute = compute_index_add,
     .backward =
         [](const BackwardArgs& b) {
           const int64_t dim = b.attrs.get<int64_t>("dim");
           Tensor gsrc;
           if (b.needs[2]) gsrc = index_select(b.grads[0], dim, reshape(b.in[1], {-1}));
           return std::vector<Tensor>{b.needs[0] ? b.grads[0] : Tensor(), Tensor(), gsrc};
         },
     .saves = kSaveInputs,
     .api = {{"index_add(Tensor input, int dim, Tensor index, Tensor source, *, Number alpha=1) -> "
              "Tensor",
              [](const CallArgs& a) {
                const Tensor& src = a.tensor(3);
                const double alpha = a.scalar(4);
                return index_add(a.tensor(0), a.integer(1), a.tensor(2),
                                 alpha == 1 ? src
                                            : mul(src, wrap_scalar(alpha, is_floating(src.dtype())
                                                                              ? DType::kFloat64
                                                                              : DType::kInt64)));
              }}}},
});

OFL_REGISTER_OPS({with_api({{"scatter_(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
                             [](const CallArgs& a) {
                               Tensor self = a.tensor(0);
                               return scatter_(self, a.integer(1), a.tensor(2), a.tensor(3));
                             },
                             kMethod},
                            {"scatter_(Tensor input, int dim, Tensor index, float value) -> Tensor",
                             [](const CallArgs& a) {
                               Tensor self = a.tensor(0);
                               return scatter_(self, a.integer(1), a.tensor(2), a.number(3));
                             },
                             kMethod}},
                           inplace_variant("scatter_", op_def("scatter")))});

}  // namespace ofl::internal
