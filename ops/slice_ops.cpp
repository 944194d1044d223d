// Slicing views: slice (Python's x[a:b:c] on one axis), narrow, select (x[i] on one axis), and
// slice_backward, which writes a gradient into zeros at the slice. Each shares its input's
// storage; its backward is slice_backward.
#include <algorithm>
#include <limits>

#include "core/dispatcher.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

// A slice of one axis of size n with Python's clamping: its first index and length.
struct Range {
  int64_t begin, length;
};
Range slice_range(int64_t n, const Attrs& attrs) {
  auto clamped = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t b = clamped(attrs.get<int64_t>("start")), e = clamped(attrs.get<int64_t>("stop"));
  const int64_t step = attrs.get<int64_t>("step");
  return {b, e > b ? (e - b + step - 1) / step : 0};
}

std::vector<TensorMeta> infer_slice(const InferArgs& a) {
  Shape out = a.in[0].shape;
  if (out.empty()) fail<IndexError>(a.op, "cannot slice a 0-d tensor");
  const int64_t d = a.attrs.axis("dim", out.size(), a.op);
  const int64_t step = a.attrs.get<int64_t>("step");
  if (step <= 0) fail(a.op, "step must be positive, got ", step);
  out[d] = slice_range(out[d], a.attrs).length;
  return single_output(std::move(out), a.in[0].dtype, a.in[0].device);
}

std::vector<Tensor> slice_view(const ViewArgs& v) {
  const Tensor& x = v.in[0];
  const int64_t d = v.attrs.axis("dim", x.dim(), "slice");
  const Range r = slice_range(x.shape()[d], v.attrs);
  Shape shape = x.shape(), strides = x.strides();
  shape[d] = r.length;
  strides[d] *= v.attrs.get<int64_t>("step");
  return {Tensor::view_of(x.storage(), shape, strides, x.offset() + r.begin * x.strides()[d],
                          x.dtype())};
}

std::vector<Tensor> slice_grad(const BackwardArgs& b) {
  const Attrs& a = b.attrs;
  return {slice_backward(b.grads[0], b.in_meta[0].shape, a.get<int64_t>("dim"),
                         a.get<int64_t>("start"), a.get<int64_t>("stop"), a.get<int64_t>("step"))};
}

std::vector<TensorMeta> infer_select(const InferArgs& a) {
  Shape out = a.in[0].shape;
  const int64_t d = a.attrs.axis("dim", out.size(), a.op);
  const int64_t n = out.empty() ? 1 : out[d], index = a.attrs.get<int64_t>("index");
  if (out.empty()) fail<IndexError>(a.op, "cannot select from a 0-d tensor");
  if (index < -n || index >= n)
    fail<IndexError>(a.op, "index ", index, " is out of bounds for dimension ", d, " with size ",
                     n);
  out.erase(out.begin() + d);
  return single_output(std::move(out), a.in[0].dtype, a.in[0].device);
}

std::vector<Tensor> select_view(const ViewArgs& v) {
  const Tensor& x = v.in[0];
  const int64_t d = v.attrs.axis("dim", x.dim(), "select");
  int64_t index = v.attrs.get<int64_t>("index");
  if (index < 0) index += x.shape()[d];
  Shape shape = x.shape(), strides = x.strides();
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return {
      Tensor::view_of(x.storage(), shape, strides, x.offset() + index * x.strides()[d], x.dtype())};
}

std::vector<Tensor> select_grad(const BackwardArgs& b) {
  const Shape& in = b.in_meta[0].shape;
  const int64_t d = b.attrs.axis("dim", in.size(), "select");
  int64_t index = b.attrs.get<int64_t>("index");
  if (index < 0) index += in[d];
  return {slice_backward(unsqueeze(b.grads[0], d), in, d, index, index + 1, 1)};
}

// slice_backward(g, sizes, slice attrs): zeros of `sizes` with g written into the slice.
std::vector<TensorMeta> infer_slice_backward(const InferArgs& a) {
  return single_output(a.attrs.get<Shape>("sizes"), a.in[0].dtype, a.in[0].device);
}

void compute_slice_backward(const ComputeArgs& c) {
  const Tensor& gx = c.out[0];
  fill_kernel().get(gx.device().type)(gx, 0.0);
  Tensor region = slice_view({{gx}, {}, c.attrs})[0];
  copy_kernel().get(gx.device().type)(c.in[0], region);
}

std::vector<Tensor> slice_backward_grad(const BackwardArgs& b) {
  const Attrs& a = b.attrs;
  return {slice(b.grads[0], a.get<int64_t>("dim"), a.get<int64_t>("start"), a.get<int64_t>("stop"),
                a.get<int64_t>("step"))};
}

// slice / narrow / slice_backward and select (typed attr dim, which select removes): splits of
// every other axis (renumbered past a removed one) and partials pass through.
Sigs slice_axis_sbp(const SbpQuery& q, bool removed) {
  const int64_t axis = q.typed->axis("dim", rank_of(q.in[0]), "slice");
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back({{Sbp::split(d)}, {Sbp::split(removed && d > axis ? d - 1 : d)}});
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  return sigs;
}
const SbpRule kSlice{"slice", [](const SbpQuery& q) { return slice_axis_sbp(q, false); }};
const SbpRule kSelect{"select", [](const SbpQuery& q) { return slice_axis_sbp(q, true); }};

}  // namespace

Tensor slice(const Tensor& x, int64_t axis, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step) {
  static const OpDef& def = op_def("slice");
  return dispatch1(def, {x},
                   {{"dim", axis},
                    {"start", start.value_or(0)},
                    {"stop", stop.value_or(std::numeric_limits<int64_t>::max())},
                    {"step", step}});
}

Tensor slice_backward(const Tensor& g, const Shape& sizes, int64_t dim, int64_t start, int64_t stop,
                      int64_t step) {
  static const OpDef& def = op_def("slice_backward");
  return dispatch1(
      def, {g}, {{"dim", dim}, {"start", start}, {"stop", stop}, {"step", step}, {"sizes", sizes}});
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  const Shape shape = meta_of(x).shape;
  axis = normalize_axis(axis, shape.size(), "narrow");
  const int64_t n = shape.empty() ? 1 : shape[axis];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    fail<IndexError>("narrow", "start ", start, " + length ", length, " exceeds dimension ", axis,
                     " of size ", n, " in shape ", shape_str(shape));
  return slice(x, axis, start, start + length, 1);
}

Tensor select(const Tensor& x, int64_t axis, int64_t index) {
  static const OpDef& def = op_def("select");
  return dispatch1(def, {x}, {{"dim", axis}, {"index", index}});
}

const std::vector<AttrDef> kSliceAttrs{{"dim", AttrType::kInt},
                                       {"start", AttrType::kInt},
                                       {"stop", AttrType::kInt},
                                       {"step", AttrType::kInt}};

OFL_REGISTER_OPS({
    {.name = "narrow",
     .sbp = &kSlice,
     .api = {{"narrow(Tensor input, int dim, int start, int length) -> Tensor",
              call_front<narrow>()},
             {"narrow(Tensor input, int dim, Tensor start, int length) -> Tensor",
              [](const CallArgs& a) {
                const Tensor& start = a.tensor(2);
                if (start.dim() != 0 || is_floating(start.dtype()))
                  fail<TypeError>("narrow", "start must be an int or a 0-d integer tensor, got ",
                                  start.str());
                return narrow(a.tensor(0), a.integer(1), start.item<int64_t>(), a.integer(3));
              }}}},
    {.name = "slice",
     .cost = view_cost,
     .sbp = &kSlice,
     .attrs = kSliceAttrs,
     .infer = infer_slice,
     .view = slice_view,
     .identity = [](const Attrs& attrs, const Shape& in,
                    const Shape& out) { return in == out && attrs.get<int64_t>("step") == 1; },
     .backward = slice_grad,
     .complex = true},
    {.name = "slice_backward",
     .cost = elementwise_cost,
     .sbp = &kSlice,
     .attrs = {kSliceAttrs[0],
               kSliceAttrs[1],
               kSliceAttrs[2],
               kSliceAttrs[3],
               {"sizes", AttrType::kInts}},
     .infer = infer_slice_backward,
     .compute = compute_slice_backward,
     .backward = slice_backward_grad,
     .complex = true},
    {.name = "select",
     .cost = view_cost,
     .sbp = &kSelect,
     .attrs = {{"dim", AttrType::kInt}, {"index", AttrType::kInt}},
     .infer = infer_select,
     .view = select_view,
     .backward = select_grad,
     .complex = true,
     .api = {{"select(Tensor input, int dim, int index) -> Tensor", call_front<select>()}}},
});

}  // namespace ofl::internal
