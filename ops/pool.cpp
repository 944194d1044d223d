// max_pool2d and avg_pool2d as op definitions, with their backward kernels as ops of their own
// (avg_pool2d and its backward are each other's adjoints; max_pool2d_backward's is a gather at
// the argmax), so gradients of gradients work on local, meta and global tensors alike.
#include "core/dispatcher.h"
#include "ops/conv.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"
#include "ops/window.h"

namespace ofl::internal {

using namespace elementwise_sbp;

using namespace window;

namespace {

const std::vector<AttrDef> kPoolAttrs = {
    {"kernel_size", AttrType::kInts}, {"stride", AttrType::kInts}, {"padding", AttrType::kInts}};
const AttrDef kCountIncludePad = {"count_include_pad", AttrType::kBool};
const AttrDef kInputSize = {"input_size", AttrType::kInts};

std::vector<AttrDef> pool_attrs(std::initializer_list<AttrDef> extra) {
  std::vector<AttrDef> attrs = kPoolAttrs;
  attrs.insert(attrs.end(), extra);
  return attrs;
}

Window2d pool_window(const Attrs& a) {
  const Pair k = pair_attr(a, "kernel_size"), s = pair_attr(a, "stride"),
             p = pair_attr(a, "padding");
  return {k[0], k[1], s[0], s[1], p[0], p[1]};
}

// Checks the window of a pooling op over an input of shape xs.
Window2d checked_pool_window(const InferArgs& a, const Shape& xs) {
  const char* op = a.op;
  const Pair kernel = checked_pair(a, "kernel_size"), stride = checked_pair(a, "stride"),
             padding = checked_pair(a, "padding");
  if (kernel[0] < 1 || kernel[1] < 1)
    fail(op, "kernel size must be positive, got ", pair_str(kernel));
  if (stride[0] < 1 || stride[1] < 1) fail(op, "stride must be positive, got ", pair_str(stride));
  if (padding[0] < 0 || padding[1] < 0 || 2 * padding[0] > kernel[0] || 2 * padding[1] > kernel[1])
    fail(op, "padding ", pair_str(padding), " must be non-negative and at most half of kernel ",
         pair_str(kernel));
  const Pair hw = spatial(xs);
  if (hw[0] + 2 * padding[0] < kernel[0] || hw[1] + 2 * padding[1] < kernel[1])
    fail(op, "input ", shape_str(xs), " padded by ", pair_str(padding), " is smaller than kernel ",
         pair_str(kernel));
  return pool_window(a.attrs);
}

// The input shape of a pooling backward: the grad's with (H, W) = input_size, checked.
Shape checked_input_shape(const InferArgs& a, const Shape& gs) {
  const Pair hw = checked_pair(a, "input_size");
  if (hw[0] < 1 || hw[1] < 1) fail(a.op, "input_size must be positive, got ", pair_str(hw));
  return with_spatial(gs, hw);
}

// Attributes without input_size, and with it.
Attrs forward_attrs(const Attrs& a) {
  Attrs out;
  for (const auto& [name, value] : a.items())
    if (std::string_view(name) != "input_size") out.set(name, value);
  return out;
}
Attrs backward_attrs(const Attrs& a, Pair input_size) {
  Attrs out = a;
  out.set("input_size", ints(input_size));
  return out;
}

// ---- max_pool2d, and the argmax of each window (h * W + w in its plane) for its backward ----

std::vector<TensorMeta> infer_max_pool2d(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  check_image(a.op, x);
  return single_output(windowed_shape(x.shape, checked_pool_window(a, x.shape)), x.dtype, x.device);
}

std::vector<TensorMeta> infer_max_pool2d_indices(const InferArgs& a) {
  std::vector<TensorMeta> out = infer_max_pool2d(a);
  out[0].dtype = DType::kInt64;
  return out;
}

// The kernel writes values and indices; an op that wants one of them gets the other in a
// temporary.
void run_max_pool(const ComputeArgs& c, const Tensor& values, const Tensor& indices) {
  const DType dt = values.dtype();
  max_pool2d_kernel().get(values.device().type)(planes(c.in[0], dt), pool_window(c.attrs),
                                                planes(values, dt), planes(indices, DType::kInt64));
}

void compute_max_pool2d(const ComputeArgs& c) {
  require_output_shapes(op_def("max_pool2d"), c);
  const Tensor& out = c.out[0];
  const Tensor indices = Tensor::empty(out.shape(), DType::kInt64, out.device());
  into(out, compute_dtype(out.dtype()), [&](const Tensor& y) { run_max_pool(c, y, indices); });
}

void compute_max_pool2d_indices(const ComputeArgs& c) {
  require_output_shapes(op_def("max_pool2d_indices"), c);
  const Tensor& out = c.out[0];
  const DType dt = compute_dtype(c.in[0].dtype());
  run_max_pool(c, Tensor::empty(out.shape(), dt, out.device()), out);
}

Tensor max_pool_indices(const Tensor& x, const Attrs& attrs) {
  static const OpDef& def = op_def("max_pool2d_indices");
  return dispatch1(def, {x}, attrs);
}

Tensor max_pool_backward(const Tensor& g, const Tensor& indices, Pair input_size) {
  static const OpDef& def = op_def("max_pool2d_backward");
  return dispatch1(def, {g, indices}, {{"input_size", ints(input_size)}});
}

std::vector<TensorMeta> infer_max_pool2d_backward(const InferArgs& a) {
  const TensorMeta &g = a.in[0], &indices = a.in[1];
  check_image(a.op, g, "grad");
  if (indices.dtype != DType::kInt64)
    fail<TypeError>(a.op, "indices must be int64, got ", indices.str());
  if (indices.shape != g.shape)
    fail(a.op, "grad ", g.str(), " and indices ", indices.str(), " must have the same shape");
  check_devices(a, {"grad", "indices"});
  return single_output(checked_input_shape(a, g.shape), g.dtype, g.device);
}

void compute_max_pool2d_backward(const ComputeArgs& c) {
  require_output_shapes(op_def("max_pool2d_backward"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor g = planes(c.in[0], dt), indices = planes(c.in[1], DType::kInt64);
  into(c.out[0], dt, [&](const Tensor& gx) {
    max_pool2d_backward_kernel().get(gx.device().type)(g, indices, gx);
  });
}

// gx[argmax] += g is linear in g; its adjoint gathers gg at the argmax positions.
std::vector<Tensor> max_pool2d_backward_backward(const BackwardArgs& b) {
  const Tensor &indices = b.in[1], &gg = b.grads[0];
  const Shape& is = b.in_meta[1].shape;
  Shape flat(is.begin(), is.end() - 2);
  flat.push_back(-1);
  const int64_t axis = static_cast<int64_t>(flat.size()) - 1;
  Tensor picked = gather(reshape(gg, flat), axis, reshape(indices, flat));
  return {b.needs[0] ? reshape(picked, is) : Tensor(), Tensor()};
}

// ---- avg_pool2d: each g / divisor spread over its window is the adjoint of avg_pool2d ----

std::vector<TensorMeta> infer_avg_pool2d(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  check_image(a.op, x);
  return single_output(windowed_shape(x.shape, checked_pool_window(a, x.shape)), x.dtype, x.device);
}

void compute_avg_pool2d(const ComputeArgs& c) {
  require_output_shapes(op_def("avg_pool2d"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor x = planes(c.in[0], dt);
  into(c.out[0], dt, [&](const Tensor& y) {
    avg_pool2d_kernel().get(y.device().type)(x, pool_window(c.attrs),
                                             c.attrs.get<bool>("count_include_pad"), y);
  });
}

std::vector<TensorMeta> infer_avg_pool2d_backward(const InferArgs& a) {
  const TensorMeta& g = a.in[0];
  check_image(a.op, g, "grad");
  const Shape xs = checked_input_shape(a, g.shape);
  const Shape ys = windowed_shape(xs, checked_pool_window(a, xs));
  if (ys != g.shape)
    fail(a.op, "grad ", shape_str(g.shape), " is not the output shape ", shape_str(ys),
         " of input ", shape_str(xs));
  return single_output(xs, g.dtype, g.device);
}

void compute_avg_pool2d_backward(const ComputeArgs& c) {
  require_output_shapes(op_def("avg_pool2d_backward"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor g = planes(c.in[0], dt);
  into(c.out[0], dt, [&](const Tensor& gx) {
    avg_pool2d_backward_kernel().get(gx.device().type)(g, pool_window(c.attrs),
                                                       c.attrs.get<bool>("count_include_pad"), gx);
  });
}

Tensor avg_pool(const Tensor& x, const Attrs& attrs) {
  static const OpDef& def = op_def("avg_pool2d");
  return dispatch1(def, {x}, attrs);
}

Tensor avg_pool_backward(const Tensor& g, const Attrs& attrs) {
  static const OpDef& def = op_def("avg_pool2d_backward");
  return dispatch1(def, {g}, attrs);
}

// Batch and channel splits of every input and output; the window's axes stay whole. Alone, the
// rule of max_pool2d_indices (indices, of which a partial max has no layout, take no partial).
Sigs pool_splits(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]) - 2; ++d) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

// max_pool2d / avg_pool2d: batch and channel splits; max passes P(max), avg P(sum).
template <PartialOp kOp>
Sigs pool_sbp(const SbpQuery& q) {
  Sigs sigs = pool_splits(q);
  sigs.push_back(uniform(q, Sbp::partial(kOp)));
  return sigs;
}

// max_pool2d_backward (grad, indices) / avg_pool2d_backward (grad): batch and channel splits,
// and a P(sum) gradient (indices B) -> P(sum): linear in the gradient (input 0);
// max_pool2d_backward's indices (input 1) stay whole.
Sigs pool_backward_sbp(const SbpQuery& q) {
  Sigs sigs = pool_splits(q);
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

const SbpRule kMaxPool{"max_pool", pool_sbp<PartialOp::kMax>};
const SbpRule kAvgPool{"avg_pool", pool_sbp<PartialOp::kSum>};
const SbpRule kMaxPoolIndices{"max_pool_indices", pool_splits};
const SbpRule kPoolBackward{"pool_backward", pool_backward_sbp};

// A pooling signature's kernel_size, stride (the kernel's when None) and padding arguments.
struct Windows {
  Pair kernel, stride, padding;
};
Windows windows_of(const CallArgs& a, const char* op) {
  const Pair kernel = to_pair(a.ints(1), op, "kernel_size");
  return {kernel, a.is_none(2) ? kernel : to_pair(a.ints(2), op, "stride"),
          to_pair(a.ints(3), op, "padding")};
}

OFL_REGISTER_OPS({
    // Saves its input, not the indices (an op has no way to save one output of two), so that
    // its output may be changed in place; the backward recomputes the argmax.
    {.name = "max_pool2d",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kMaxPool,
     .attrs = kPoolAttrs,
     .infer = infer_max_pool2d,
     .compute = compute_max_pool2d,
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       return {max_pool_backward(b.grads[0], max_pool_indices(b.in[0], b.attrs),
                                 spatial(b.in_meta[0].shape))};
     },
     .saves = kSaveInputs,
     .api = {{"max_pool2d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0) "
              "-> Tensor",
              [](const CallArgs& a) {
                const Windows w = windows_of(a, "max_pool2d");
                return max_pool2d(a.tensor(0), w.kernel, w.stride, w.padding);
              },
              kInternal}}},
    {.name = "max_pool2d_indices",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kMaxPoolIndices,
     .attrs = kPoolAttrs,
     .infer = infer_max_pool2d_indices,
     .compute = compute_max_pool2d_indices},
    {.name = "max_pool2d_backward",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kPoolBackward,
     .attrs = {kInputSize},
     .infer = infer_max_pool2d_backward,
     .compute = compute_max_pool2d_backward,
     .backward = max_pool2d_backward_backward,
     .saves = kSaveInputs},
    {.name = "avg_pool2d",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kAvgPool,
     .attrs = pool_attrs({kCountIncludePad}),
     .infer = infer_avg_pool2d,
     .compute = compute_avg_pool2d,
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       return {avg_pool_backward(b.grads[0], backward_attrs(b.attrs, spatial(b.in_meta[0].shape)))};
     },
     .api = {{"avg_pool2d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, "
              "bool count_include_pad=True) -> Tensor",
              [](const CallArgs& a) {
                const Windows w = windows_of(a, "avg_pool2d");
                return avg_pool2d(a.tensor(0), w.kernel, w.stride, w.padding, a.flag(4));
              },
              kInternal}}},
    {.name = "avg_pool2d_backward",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kPoolBackward,
     .attrs = pool_attrs({kCountIncludePad, kInputSize}),
     .infer = infer_avg_pool2d_backward,
     .compute = compute_avg_pool2d_backward,
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       return {avg_pool(b.grads[0], forward_attrs(b.attrs))};
     }},
});

Attrs pool_call_attrs(Pair kernel, Pair stride, Pair padding) {
  return {{"kernel_size", ints(kernel)}, {"stride", ints(stride)}, {"padding", ints(padding)}};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding) {
  static const OpDef& def = op_def("max_pool2d");
  return dispatch1(def, {x}, pool_call_attrs(kernel, stride, padding));
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel, Pair stride,
                                                  Pair padding) {
  return {max_pool2d(x, kernel, stride, padding),
          max_pool_indices(x, pool_call_attrs(kernel, stride, padding))};
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, bool count_include_pad) {
  Attrs attrs = pool_call_attrs(kernel, stride, padding);
  attrs.set("count_include_pad", count_include_pad);
  return avg_pool(x, attrs);
}

}  // namespace ofl::internal
