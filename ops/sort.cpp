// sort, argsort and topk: one sort kernel over the lanes of [outer, n, inner]. The values'
// gradient goes back to where each value came from: scattered at the indices.
#include "ops/sort.h"

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

int64_t dim_of(const Attrs& attrs, int64_t ndim, const char* op) {
  return attrs.axis("dim", ndim, op);
}

// The lanes' length along dim (1 for a 0-d tensor).
int64_t lane_size(const Shape& shape, int64_t axis) {
  return shape.empty() ? 1 : shape[axis];
}

std::vector<TensorMeta> infer_sort(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  a.attrs.axis("dim", static_cast<int64_t>(x.shape.size()), a.op);
  TensorMeta indices{x.shape, DType::kInt64, x.device};
  if (a.attrs.has("k")) {  // topk
    const int64_t axis = a.attrs.axis("dim", static_cast<int64_t>(x.shape.size()), a.op);
    const int64_t k = a.attrs.get<int64_t>("k"), n = lane_size(x.shape, axis);
    if (k < 0 || k > n)
      fail(a.op, "k (", k, ") is out of range for dimension ", axis, " of size ", n,
           " of a tensor of shape ", shape_str(x.shape));
    if (x.shape.empty() && k != 1) fail(a.op, "k (", k, ") must be 1 for a 0-d tensor");
    if (!x.shape.empty()) indices.shape[axis] = k;
  }
  if (std::string(a.op) == "argsort") return {indices};
  return {{indices.shape, x.dtype, x.device}, indices};
}

// Runs the sort kernel: the first k of each sorted lane (k = n for sort and argsort).
void compute_sort(const ComputeArgs& c, const char* op, bool descending, const Tensor& values,
                  const Tensor& indices) {
  require_output_shapes(op_def(op), c);
  const Tensor& x = c.in[0];
  const int64_t axis = c.attrs.axis("dim", x.dim(), op);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < axis) outer *= x.shape()[d];
    if (d > axis) inner *= x.shape()[d];
  }
  const int64_t n = lane_size(x.shape(), axis);
  const int64_t k = indices.dim() ? indices.shape()[axis] : 1;
  sort_kernel().get(x.device().type)(contiguous(x), outer, n, inner, k, descending, values,
                                     indices);
}

// Zeros of the input's shape with the values' gradient added at the indices (distinct per lane).
std::vector<Tensor> sort_backward(const BackwardArgs& b) {
  const Shape& shape = b.in_meta[0].shape;
  const Tensor &g = b.grads[0], &idx = b.out[1];
  if (shape.empty()) return {g};
  const int64_t axis = b.attrs.axis("dim", shape.size(), "sort");
  const int64_t k = meta_of(g).shape[axis];
  Tensor zeros = zeros_like(g);  // in g's layout, also for global tensors
  if (k != shape[axis]) zeros = slice_backward(zeros, shape, axis, 0, k, 1);
  return {scatter_add(zeros, axis, idx, g)};
}

const std::vector<AttrDef> kSortAttrs{
    {"dim", AttrType::kInt}, {"descending", AttrType::kBool}, {"stable", AttrType::kBool}};

Attrs sort_attrs(int64_t dim, bool descending, bool stable) {
  return {{"dim", dim}, {"descending", descending}, {"stable", stable}};
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  static const OpDef& def = op_def("sort");
  std::vector<Tensor> out = dispatch(def, {x}, sort_attrs(dim, descending, stable));
  return {out[0], out[1]};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  static const OpDef& def = op_def("argsort");
  return dispatch1(def, {x}, sort_attrs(dim, descending, stable));
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  static const OpDef& def = op_def("topk");
  std::vector<Tensor> out =
      dispatch(def, {x}, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}});
  return {out[0], out[1]};
}

namespace {

// sort / argsort / topk (typed attr dim): any other axis may be split, on every output alike.
Sigs along_dim_sbp(const SbpQuery& q) {
  return splits_except(q, q.typed->axis("dim", rank_of(q.in[0]), "index"));
}
const SbpRule kAlongDim{"along_dim", along_dim_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "sort",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kAlongDim,
     .attrs = kSortAttrs,
     .infer = infer_sort,
     .compute =
         [](const ComputeArgs& c) {
           compute_sort(c, "sort", c.attrs.get<bool>("descending"), c.out[0], c.out[1]);
         },
     .backward = sort_backward,
     .saves = kSaveOutputs,
     .api = {{"sort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> "
              "(Tensor values, Tensor indices)",
              [](const CallArgs& a) {
                auto [v, i] = sort(a.tensor(0), a.integer(1), a.flag(2), a.flag(3));
                return std::vector<Tensor>{v, i};
              }}}},
    {.name = "argsort",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kAlongDim,
     .attrs = kSortAttrs,
     .infer = infer_sort,
     .compute =
         [](const ComputeArgs& c) {
           compute_sort(c, "argsort", c.attrs.get<bool>("descending"), Tensor(), c.out[0]);
         },
     .api = {{"argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> "
              "Tensor",
              call_front<argsort>()}}},
    {.name = "topk",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kAlongDim,
     .attrs = {{"k", AttrType::kInt},
               {"dim", AttrType::kInt},
               {"largest", AttrType::kBool},
               {"sorted", AttrType::kBool}},
     .infer = infer_sort,
     .compute =
         [](const ComputeArgs& c) {
           compute_sort(c, "topk", c.attrs.get<bool>("largest"), c.out[0], c.out[1]);
         },
     .backward = sort_backward,
     .saves = kSaveOutputs,
     .api = {{"topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
              "(Tensor values, Tensor indices)",
              [](const CallArgs& a) {
                auto [v, i] = topk(a.tensor(0), a.integer(1), a.integer(2), a.flag(3), a.flag(4));
                return std::vector<Tensor>{v, i};
              }}}},
});

}  // namespace ofl::internal
