// cumsum, tril and triu. cumsum's backward is the prefix sum from the other end; tril and triu
// mask their gradient as they mask their input.
#include "ops/scan.h"

#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

// cumsum with the internal attribute reverse (sums from the end): its own backward.
Tensor cumsum_call(const Tensor& x, int64_t dim, DType dtype, bool reverse) {
  static const OpDef& def = op_def("cumsum");
  return dispatch1(def, {x}, {{"dim", dim}, {"dtype", dtype}, {"reverse", reverse}});
}

std::vector<TensorMeta> infer_cumsum(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  a.attrs.axis("dim", static_cast<int64_t>(x.shape.size()), a.op);
  const DType dtype = a.attrs.get<DType>("dtype");
  if (dtype == DType::kBool)
    fail<TypeError>(a.op, "cannot accumulate into bool; got input ", x.str());
  return single_output(x.shape, dtype, x.device);
}

void compute_cumsum(const ComputeArgs& c) {
  static const OpDef& def = op_def("cumsum");
  require_output_shapes(def, c);
  const Tensor& out = c.out[0];
  const Tensor x = contiguous_local(converted(c.in[0], out.dtype()));
  const int64_t axis = c.attrs.axis("dim", x.dim(), "cumsum");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < axis) outer *= x.shape()[d];
    if (d > axis) inner *= x.shape()[d];
  }
  cumsum_kernel().get(out.device().type)(x, outer, x.dim() ? x.shape()[axis] : 1, inner,
                                         c.attrs.get<bool>("reverse"), out);
}

std::vector<Tensor> cumsum_backward(const BackwardArgs& b) {
  const Tensor& g = b.grads[0];
  const bool reverse = b.attrs.get<bool>("reverse");
  Tensor gx = cumsum_call(g, b.attrs.get<int64_t>("dim"), g.dtype(), !reverse);
  return {to_dtype(gx, b.in_meta[0].dtype)};
}

std::vector<TensorMeta> infer_triangular(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  if (x.shape.size() < 2)
    fail(a.op, "expects a tensor of at least 2 dimensions, got shape ", shape_str(x.shape));
  return single_output(x.shape, x.dtype, x.device);
}

// A shard of rows [r0, ...) and columns [c0, ...) keeps j - i against diagonal + r0 - c0.
Attrs triangular_shard(const Attrs& attrs, const ShardArgs& s) {
  const std::vector<int64_t>& off = s.in_offsets[0];
  const size_t n = off.size();
  Attrs out = attrs;
  if (n >= 2) out.set("diagonal", attrs.get<int64_t>("diagonal") + off[n - 2] - off[n - 1]);
  return out;
}

// tril / triu: any axis may be split (each shard shifts the typed attr diagonal by its row and
// column offsets); partials pass (the mask keeps or zeroes elements).
const SbpRule kTriangular{"triangular", identity};

OpDef triangular_def(const char* name, bool upper) {
  OpDef def{.name = name, .num_inputs = 1, .cost = elementwise_cost, .sbp = &kTriangular};
  def.attrs = {{"diagonal", AttrType::kInt}};
  def.infer = infer_triangular;
  def.compute = [name, upper](const ComputeArgs& c) {
    require_output_shapes(op_def(name), c);
    triangular_kernel().get(c.out[0].device().type)(contiguous(c.in[0]), upper,
                                                    c.attrs.get<int64_t>("diagonal"), c.out[0]);
  };
  def.backward = [name](const BackwardArgs& b) {
    return std::vector<Tensor>{dispatch1(op_def(name), {b.grads[0]}, b.attrs)};
  };
  def.shard_attrs = triangular_shard;
  return def;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumsum_call(x, dim, dtype.value_or(sum_dtype(x.dtype())), false);
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  static const OpDef& def = op_def("tril");
  return dispatch1(def, {x}, {{"diagonal", diagonal}});
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  static const OpDef& def = op_def("triu");
  return dispatch1(def, {x}, {{"diagonal", diagonal}});
}

namespace {

// cumsum (typed attr dim): any other axis may be split; P(sum) passes (a prefix sum is linear).
Sigs cumsum_sbp(const SbpQuery& q) {
  Sigs sigs = splits_except(q, q.typed->axis("dim", rank_of(q.in[0]), "index"));
  sigs.push_back(uniform(q, kPSum));
  return sigs;
}
const SbpRule kCumsum{"cumsum", cumsum_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "cumsum",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kCumsum,
     .attrs = {{"dim", AttrType::kInt}, {"dtype", AttrType::kDType}, {"reverse", AttrType::kBool}},
     .infer = infer_cumsum,
     .compute = compute_cumsum,
     .backward = cumsum_backward,
     .autocast = Autocast::kFloat32,
     .api = {{"cumsum(Tensor input, int dim, *, dtype? dtype=None) -> Tensor",
              call_front<cumsum>()}}},
    with_api({{"tril(Tensor input, int diagonal=0) -> Tensor"}}, triangular_def("tril", false)),
    with_api({{"triu(Tensor input, int diagonal=0) -> Tensor"}}, triangular_def("triu", true)),
});

}  // namespace ofl::internal
