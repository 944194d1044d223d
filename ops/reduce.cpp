// Reduction op definitions: sum, prod, amax, amin, all, any over a set of axes; max and min along
// one axis with their indices, argmax and argmin; mean, var, std and logsumexp as composites of
// them. Kernels see a contiguous [outer, reduce, inner] block.
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

Axes reduction_axes(const Axes& axes, int64_t ndim, const char* op) {
  Axes out;
  if (axes.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  auto twice = std::adjacent_find(out.begin(), out.end());
  if (twice != out.end())
    fail(op, "dimension ", *twice, " appears more than once in the list of reduced dimensions ",
         shape_str(axes), " of a tensor of ", ndim, " dimensions");
  if (ndim == 0) out.clear();
  return out;
}

Shape reduced_shape(const Shape& shape, const Axes& axes, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

namespace {

struct Blocked {
  Tensor x;  // contiguous, reduced axes forming the middle block
  int64_t outer = 1, reduce = 1, inner = 1;
};

// Lays x out as [outer, reduce, inner] with the reduced axes in the middle.
Blocked block(const Tensor& x, const Axes& axes) {
  Blocked b;
  bool consecutive = !axes.empty() && axes.back() - axes.front() + 1 == (int64_t)axes.size();
  if (axes.empty()) {
    b.x = contiguous(x);
    b.outer = x.numel();
    return b;
  }
  if (consecutive && x.is_contiguous()) {
    b.x = x;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d < axes.front())
        b.outer *= x.shape()[d];
      else if (d <= axes.back())
        b.reduce *= x.shape()[d];
      else
        b.inner *= x.shape()[d];
    }
    return b;
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      perm.push_back(d);
      b.outer *= x.shape()[d];
    }
  for (int64_t d : axes) {
    perm.push_back(d);
    b.reduce *= x.shape()[d];
  }
  b.x = contiguous(permute(x, perm));
  return b;
}

int64_t ndim_of(const TensorMeta& m) {
  return static_cast<int64_t>(m.shape.size());
}

// The axes a call reduces: attribute `axes` (empty: all), normalised and sorted.
Axes axes_attr(const Attrs& attrs, int64_t ndim, const char* op) {
  return reduction_axes(attrs.get<std::vector<int64_t>>("axes"), ndim, op);
}
// Attribute `axis` of the ops along one axis, as a list (empty for a 0-d input).
Axes axis_attr(const Attrs& attrs, int64_t ndim, const char* op) {
  int64_t axis = attrs.axis("axis", ndim, op);
  return ndim == 0 ? Axes{} : Axes{axis};
}

// max and min have no identity: every reduced slice needs an element.
void check_nonempty(const char* op, const Shape& shape, const Axes& axes) {
  for (int64_t a : axes)
    if (shape[a] == 0)
      fail(op, "cannot reduce over a zero-size dimension of a tensor of shape ", shape_str(shape));
}

// The reduced tensor with its reduced axes back as size 1, so it broadcasts over the input.
// Reduced leading axes stay out: broadcasting prepends them.
Tensor unreduce(const Tensor& t, const Axes& axes, bool keepdim) {
  if (keepdim) return t;
  size_t lead = 0;
  while (lead < axes.size() && axes[lead] == static_cast<int64_t>(lead)) ++lead;
  Tensor r = t;
  for (size_t i = lead; i < axes.size(); ++i) r = unsqueeze(r, axes[i] - lead);
  return r;
}

// --- over a set of axes: sum, prod, amax, amin, all, any ---

std::vector<TensorMeta> infer_reduce(ReduceOp op, const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  Axes axes = axes_attr(a.attrs, ndim_of(x), a.op);
  DType dtype = x.dtype;
  switch (op) {
    case ReduceOp::kSum:
      dtype = a.attrs.get<DType>("dtype");
      break;
    case ReduceOp::kProd:
      dtype = sum_dtype(x.dtype);
      break;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      check_nonempty(a.op, x.shape, axes);
      break;
    case ReduceOp::kAll:
    case ReduceOp::kAny:
      dtype = DType::kBool;
      break;
  }
  return single_output(reduced_shape(x.shape, axes, a.attrs.get<bool>("keepdim")), dtype, x.device);
}

// Kernels compute in the output's dtype.
void compute_reduce(ReduceOp op, const char* name, const ComputeArgs& c) {
  const Tensor& out = c.out[0];
  Blocked b = block(converted(c.in[0], out.dtype()), axes_attr(c.attrs, c.in[0].dim(), name));
  reduce_kernel().get(out.device().type)(op, b.x, b.outer, b.reduce, b.inner, out);
}

std::vector<Tensor> sum_backward(const BackwardArgs& b) {
  const TensorMeta& x = b.in_meta[0];
  Tensor g =
      unreduce(b.grads[0], axes_attr(b.attrs, ndim_of(x), "sum"), b.attrs.get<bool>("keepdim"));
  return {to_dtype(contiguous(expand(g, x.shape)), x.dtype)};
}

// d/dx_i of the product is y / x_i, except at a zero: the product of the others there if it is
// the only zero of its slice, else 0.
std::vector<Tensor> prod_backward(const BackwardArgs& b) {
  const Tensor& x = b.in[0];
  const Axes axes = axes_attr(b.attrs, x.dim(), "prod");
  const bool keepdim = b.attrs.get<bool>("keepdim");
  Tensor y = unreduce(b.out[0], axes, keepdim), gy = unreduce(b.grads[0], axes, keepdim);
  Tensor zero = eq(x, wrap_scalar(0, DType::kInt64));
  Tensor ones = ones_like(x);
  Tensor lone = eq(sum(zero, axes, true), wrap_scalar(1, DType::kInt64));
  Tensor others = prod(where(zero, ones, x), axes, true);
  Tensor at_zero = where(lone, others, zeros_like(others));
  return {mul(gy, where(zero, at_zero, div(y, where(zero, ones, x))))};
}

// amax / amin: the gradient is split evenly between the elements that tie for the extreme.
std::vector<Tensor> extreme_backward(const BackwardArgs& b) {
  const Tensor& x = b.in[0];
  const Axes axes = axes_attr(b.attrs, x.dim(), "amax");
  const bool keepdim = b.attrs.get<bool>("keepdim");
  Tensor mask = to_dtype(eq(x, unreduce(b.out[0], axes, keepdim)), b.grads[0].dtype());
  Tensor count = sum(mask, axes, true);
  return {div(mul(mask, unreduce(b.grads[0], axes, keepdim)), count)};
}

// SBP rules of the reductions: typed attributes keepdim and axes (empty: all) or axis. Splits of
// kept axes map; a split of a reduced axis gives P(sum) (sum), P(max) / P(min) when every shard
// is non-empty (amax / amin), or nothing (kReduceExact: prod, all, any, max / min with indices,
// argmax).
enum class ReduceKind { kSum, kMax, kMin, kExact };

// The axes a reduction reduces: typed attribute `axes` (empty: all) or `axis`.
std::vector<int64_t> reduced_axes(const SbpQuery& q) {
  const int64_t ndim = rank_of(q.in[0]);
  if (q.typed->has("axis")) {
    if (ndim == 0) return {};
    return {q.typed->axis("axis", ndim, "reduce")};
  }
  return reduction_axes(q.typed->get<std::vector<int64_t>>("axes"), ndim, "reduce");
}

template <ReduceKind kKind>
Sigs reduce_sbp(const SbpQuery& q) {
  const bool keepdim = q.typed->get<bool>("keepdim");
  const std::vector<int64_t> axes = reduced_axes(q);
  const Shape& in = q.in[0];
  const Sbp partial = kKind == ReduceKind::kSum ? kPSum : kKind == ReduceKind::kMax ? kPMax : kPMin;
  Sigs sigs;
  int64_t out_axis = 0;
  for (int64_t d = 0; d < rank_of(in); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) {
      sigs.push_back({{Sbp::split(d)}, std::vector<Sbp>(q.out.size(), Sbp::split(out_axis))});
    } else if (kKind == ReduceKind::kSum) {
      sigs.push_back({{Sbp::split(d)}, {partial}});
    } else if (kKind != ReduceKind::kExact && in[d] >= q.parallel_num) {
      sigs.push_back({{Sbp::split(d)}, {partial}});  // max/min need every shard non-empty
    }
    if (!reduced || keepdim) ++out_axis;
  }
  if (kKind != ReduceKind::kExact) sigs.push_back({{partial}, {partial}});
  return sigs;
}

const SbpRule kReduceSum{"reduce_sum", reduce_sbp<ReduceKind::kSum>};
const SbpRule kReduceMax{"reduce_max", reduce_sbp<ReduceKind::kMax>};
const SbpRule kReduceMin{"reduce_min", reduce_sbp<ReduceKind::kMin>};
const SbpRule kReduceExact{"reduce_exact", reduce_sbp<ReduceKind::kExact>};

OpDef reduce_def(const char* name, ReduceOp op, const SbpRule& sbp, uint8_t saves = kSaveNone,
                 std::vector<Tensor> (*backward)(const BackwardArgs&) = nullptr) {
  OpDef def{.name = name, .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp};
  def.attrs = {{"axes", AttrType::kInts}, {"keepdim", AttrType::kBool}};
  if (op == ReduceOp::kSum) def.attrs.push_back({"dtype", AttrType::kDType});
  def.infer = [op](const InferArgs& a) { return infer_reduce(op, a); };
  def.compute = [op, name](const ComputeArgs& c) { compute_reduce(op, name, c); };
  def.saves = saves;
  def.differentiable = backward != nullptr;
  if (backward) def.backward = backward;
  return def;
}

// --- along one axis: max and min (values, indices), argmax and argmin (indices) ---

std::vector<TensorMeta> infer_arg_reduce(bool with_values, const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  if (x.dtype == DType::kBool)
    fail<TypeError>(a.op, "is not supported for bool tensors; got shape ", shape_str(x.shape));
  Axes axes = axis_attr(a.attrs, ndim_of(x), a.op);
  check_nonempty(a.op, x.shape, axes);
  Shape shape = reduced_shape(x.shape, axes, a.attrs.get<bool>("keepdim"));
  TensorMeta indices{shape, DType::kInt64, x.device};
  if (!with_values) return {indices};
  return {{shape, x.dtype, x.device}, indices};
}

void compute_arg_reduce(bool is_max, bool with_values, const char* name, const ComputeArgs& c) {
  const Tensor& x = c.in[0];
  Blocked b = block(x, axis_attr(c.attrs, x.dim(), name));
  const Tensor& indices = c.out.back();
  Tensor values =
      with_values ? c.out[0] : Tensor::empty(indices.shape(), x.dtype(), indices.device());
  arg_reduce_kernel().get(x.device().type)(is_max, b.x, b.outer, b.reduce, b.inner, values,
                                           indices);
}

// The values' gradient goes to the selected element: scattered back at the indices.
std::vector<Tensor> extreme_dim_backward(const BackwardArgs& b) {
  const Shape& shape = b.in_meta[0].shape;
  Tensor g = b.grads[0], idx = b.out[1];
  if (shape.empty()) return {g};
  const int64_t axis = axis_attr(b.attrs, static_cast<int64_t>(shape.size()), "max")[0];
  if (!b.attrs.get<bool>("keepdim")) {
    g = unsqueeze(g, axis);
    idx = unsqueeze(idx, axis);
  }
  Tensor zeros = zeros_like(expand(g, shape));  // in g's layout, also for global tensors
  return {scatter_add(zeros, axis, idx, g)};
}

OpDef arg_reduce_def(const char* name, bool is_max, bool with_values) {
  OpDef def{.name = name,
            .num_inputs = 1,
            .differentiable = with_values,
            .cost = elementwise_cost,
            .sbp = &kReduceExact};
  def.attrs = {{"axis", AttrType::kInt}, {"keepdim", AttrType::kBool}};
  def.infer = [with_values](const InferArgs& a) { return infer_arg_reduce(with_values, a); };
  def.compute = [is_max, with_values, name](const ComputeArgs& c) {
    compute_arg_reduce(is_max, with_values, name, c);
  };
  if (with_values) {
    def.backward = extreme_dim_backward;
    def.saves = kSaveOutputs;
  }
  return def;
}

const uint8_t kXY = kSaveInputs | kSaveOutputs;

// "name(Tensor input, int[]? dim=None, bool keepdim=False) -> Tensor" calling fn.
Api axes_api(const std::string& name, Tensor (*fn)(const Tensor&, const Axes&, bool)) {
  return {name + "(Tensor input, int[]? dim=None, bool keepdim=False) -> Tensor",
          [fn](const CallArgs& a) { return fn(a.tensor(0), a.optional_ints(1), a.flag(2)); }};
}

// max(input, dim, keepdim) -> (values, indices), or the whole tensor's max without a dim.
Api extreme_dim_api(const char* name, bool is_max) {
  return {str_cat(name,
                  "(Tensor input, int? dim=None, bool keepdim=False) -> (Tensor values, "
                  "Tensor indices)"),
          [is_max](const CallArgs& a) -> CallResult {
            const Tensor& x = a.tensor(0);
            if (a.is_none(1)) return is_max ? amax(x) : amin(x);
            auto [v, i] =
                is_max ? max_dim(x, a.integer(1), a.flag(2)) : min_dim(x, a.integer(1), a.flag(2));
            return std::vector<Tensor>{v, i};
          }};
}

Api arg_extreme_api(const char* name, bool is_max) {
  return {str_cat(name, "(Tensor input, int? dim=None, bool keepdim=False) -> Tensor"),
          [is_max](const CallArgs& a) {
            return is_max ? argmax(a.tensor(0), a.optional_integer(1), a.flag(2))
                          : argmin(a.tensor(0), a.optional_integer(1), a.flag(2));
          }};
}

// var and std: Bessel's correction by `unbiased` or by `correction`.
// torch.std(x, unbiased) and friends: the whole tensor with or without Bessel's correction.
Api spread_all_api(const char* name, Tensor (*fn)(const Tensor&, const Axes&, double, bool)) {
  return {str_cat(name, "(Tensor input, bool unbiased) -> Tensor"),
          [fn](const CallArgs& a) { return fn(a.tensor(0), {}, a.flag(1) ? 1.0 : 0.0, false); }};
}

Api spread_api(const char* name, Tensor (*fn)(const Tensor&, const Axes&, double, bool)) {
  return {str_cat(name,
                  "(Tensor input, int[]? dim=None, bool unbiased=True, bool keepdim=False, "
                  "float? correction=None) -> Tensor"),
          [fn](const CallArgs& a) {
            const double correction = a.optional_number(4).value_or(a.flag(2) ? 1.0 : 0.0);
            return fn(a.tensor(0), a.optional_ints(1), correction, a.flag(3));
          }};
}

OFL_REGISTER_OPS({
    with_api(
        {{"sum(Tensor input, int[]? dim=None, bool keepdim=False, dtype? dtype=None) -> Tensor",
          call_front<sum>()}},
        under_autocast(Autocast::kFloat32,
                       reduce_def("sum", ReduceOp::kSum, kReduceSum, kSaveNone, sum_backward))),
    with_api({{"prod(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None) -> "
               "Tensor",
               [](const CallArgs& a) {
                 const Tensor x = a.is_none(3) ? a.tensor(0) : to_dtype(a.tensor(0), a.dtype(3));
                 return prod(x, a.optional_ints(1), a.flag(2));
               }}},
             under_autocast(Autocast::kFloat32,
                            reduce_def("prod", ReduceOp::kProd, kReduceExact, kXY, prod_backward))),
    with_api({axes_api("amax", &amax)},
             reduce_def("amax", ReduceOp::kMax, kReduceMax, kXY, extreme_backward)),
    with_api({axes_api("amin", &amin)},
             reduce_def("amin", ReduceOp::kMin, kReduceMin, kXY, extreme_backward)),
    with_api({axes_api("all", &all)}, reduce_def("all", ReduceOp::kAll, kReduceExact)),
    with_api({axes_api("any", &any)}, reduce_def("any", ReduceOp::kAny, kReduceExact)),
    with_api({extreme_dim_api("max", true)}, arg_reduce_def("max", true, true)),
    with_api({extreme_dim_api("min", false)}, arg_reduce_def("min", false, true)),
    with_api({arg_extreme_api("argmax", true)}, arg_reduce_def("argmax", true, false)),
    with_api({arg_extreme_api("argmin", false)}, arg_reduce_def("argmin", false, false)),
    // Composites: they run as the ops above and elementwise ones.
    {.name = "mean", .num_inputs = 1, .cost = elementwise_cost, .api = {axes_api("mean", &mean)}},
    {.name = "var",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .api = {spread_api("var", &var), spread_all_api("var", &var)}},
    {.name = "std",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .api = {spread_api("std", &std), spread_all_api("std", &std)}},
    {.name = "logsumexp",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .api = {{"logsumexp(Tensor input, int[]? dim, bool keepdim=False) -> Tensor",
              call_front<logsumexp>()}}},
});

Tensor reduce_call(const OpDef& def, const Tensor& x, const Axes& axes, bool keepdim) {
  return dispatch1(def, {x}, {{"axes", axes}, {"keepdim", keepdim}});
}

std::vector<Tensor> along_axis(const OpDef& def, const Tensor& x, int64_t axis, bool keepdim) {
  return dispatch(def, {x}, {{"axis", axis}, {"keepdim", keepdim}});
}

// The number of elements each output element reduces (of the logical shape).
int64_t reduced_count(const Tensor& x, const Axes& axes_in, const char* op) {
  const Shape& shape = meta_of(x).shape;
  int64_t n = 1;
  for (int64_t a : reduction_axes(axes_in, static_cast<int64_t>(shape.size()), op)) n *= shape[a];
  return n;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdim, std::optional<DType> dtype) {
  static const OpDef& def = op_def("sum");
  return dispatch1(
      def, {x},
      {{"axes", axes}, {"keepdim", keepdim}, {"dtype", dtype.value_or(sum_dtype(x.dtype()))}});
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdim) {
  static const OpDef& def = op_def("prod");
  return reduce_call(def, x, axes, keepdim);
}
Tensor amax(const Tensor& x, const Axes& axes, bool keepdim) {
  static const OpDef& def = op_def("amax");
  return reduce_call(def, x, axes, keepdim);
}
Tensor amin(const Tensor& x, const Axes& axes, bool keepdim) {
  static const OpDef& def = op_def("amin");
  return reduce_call(def, x, axes, keepdim);
}
Tensor all(const Tensor& x, const Axes& axes, bool keepdim) {
  static const OpDef& def = op_def("all");
  return reduce_call(def, x, axes, keepdim);
}
Tensor any(const Tensor& x, const Axes& axes, bool keepdim) {
  static const OpDef& def = op_def("any");
  return reduce_call(def, x, axes, keepdim);
}

std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t axis, bool keepdim) {
  static const OpDef& def = op_def("max");
  std::vector<Tensor> out = along_axis(def, x, axis, keepdim);
  return {out[0], out[1]};
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t axis, bool keepdim) {
  static const OpDef& def = op_def("min");
  std::vector<Tensor> out = along_axis(def, x, axis, keepdim);
  return {out[0], out[1]};
}

// Without an axis: the index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  static const OpDef& def = op_def("argmax");
  if (!axis) return along_axis(def, reshape(detach(x), {-1}), 0, false)[0];
  return along_axis(def, x, *axis, keepdim)[0];
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  static const OpDef& def = op_def("argmin");
  if (!axis) return along_axis(def, reshape(detach(x), {-1}), 0, false)[0];
  return along_axis(def, x, *axis, keepdim)[0];
}

Tensor mean(const Tensor& x, const Axes& axes, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("mean", "expects a floating-point tensor, got ", x.str(),
                    "; cast it with .float() first");
  const int64_t count = reduced_count(x, axes, "mean");
  return div(sum(x, axes, keepdim), wrap_scalar(static_cast<double>(count), DType::kFloat64));
}

Tensor var(const Tensor& x, const Axes& axes, double correction, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("var", "expects a floating-point tensor, got ", x.str());
  const int64_t n = reduced_count(x, axes, "var");
  Tensor centered = sub(x, mean(x, axes, true));
  Tensor ss = sum(mul(centered, centered), axes, keepdim);
  double denom = std::max(0.0, static_cast<double>(n) - correction);
  return div(ss, wrap_scalar(denom, DType::kFloat64));
}

Tensor std(const Tensor& x, const Axes& axes, double correction, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("std", "expects a floating-point tensor, got ", x.str());
  reduced_count(x, axes, "std");  // bad axes are reported as std's
  return sqrt(var(x, axes, correction, keepdim));
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("logsumexp", "expects a floating-point tensor, got ", x.str());
  // Bad axes are reported as logsumexp's.
  const Axes reduced =
      reduction_axes(axes, static_cast<int64_t>(meta_of(x).shape.size()), "logsumexp");
  Tensor m = detach(amax(x, axes, true));
  // Rows that are all -inf would give nan from (-inf) - (-inf); shift them by 0 instead.
  m = where(logical_not(ne(abs(m), wrap_scalar(INFINITY, DType::kFloat64))), zeros_like(m), m);
  Tensor out = add(log(sum(exp(sub(x, m)), axes, true)), m);
  return keepdim ? out : squeeze(out, reduced);
}

}  // namespace ofl::internal
