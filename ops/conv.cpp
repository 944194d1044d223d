// conv2d and its two gradients as op definitions, each the others' backward (the input and
// weight gradients are adjoint convolutions), so gradients of gradients work on local, meta
// and global tensors alike; and batch_norm, composed of other ops.
#include "ops/conv.h"

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/window.h"

namespace ofl::internal {

using namespace elementwise_sbp;

std::atomic<bool>& conv_allow_tf32() {
  static std::atomic<bool> allow{true};
  return allow;
}

using namespace window;

namespace {

// ---- attributes and checks ----

const std::vector<AttrDef> kConvAttrs = {{"stride", AttrType::kInts},
                                         {"padding", AttrType::kInts},
                                         {"dilation", AttrType::kInts},
                                         {"groups", AttrType::kInt}};

std::vector<AttrDef> conv_attrs_and(AttrDef extra) {
  std::vector<AttrDef> attrs = kConvAttrs;
  attrs.push_back(extra);
  return attrs;
}

// The convolution attributes of a conv2d or gradient call, and one more.
Attrs conv_attrs(const Attrs& a) {
  return {{"stride", a.value("stride")},
          {"padding", a.value("padding")},
          {"dilation", a.value("dilation")},
          {"groups", a.value("groups")}};
}
Attrs conv_attrs_with(const Attrs& a, const char* name, Pair value) {
  Attrs out = conv_attrs(a);
  out.set(name, ints(value));
  return out;
}

Window2d conv_window(const Attrs& a, Pair kernel) {
  const Pair s = pair_attr(a, "stride"), p = pair_attr(a, "padding"), d = pair_attr(a, "dilation");
  return {kernel[0], kernel[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

// Checks stride, padding, dilation and groups; the window of a kernel of size `kernel`.
Window2d checked_conv_window(const InferArgs& a, Pair kernel) {
  const char* op = a.op;
  const Pair stride = checked_pair(a, "stride"), padding = checked_pair(a, "padding"),
             dilation = checked_pair(a, "dilation");
  const int64_t groups = a.attrs.get<int64_t>("groups");
  if (groups < 1) fail(op, "groups must be positive, got ", groups);
  if (stride[0] < 1 || stride[1] < 1) fail(op, "stride must be positive, got ", pair_str(stride));
  if (dilation[0] < 1 || dilation[1] < 1)
    fail(op, "dilation must be positive, got ", pair_str(dilation));
  if (padding[0] < 0 || padding[1] < 0)
    fail(op, "padding must be non-negative, got ", pair_str(padding));
  return conv_window(a.attrs, kernel);
}

void check_weight(const char* op, const Shape& ws) {
  if (ws.size() != 4)
    fail(op, "weight must be 4-d (out_channels, in_channels / groups, kH, kW), got ",
         shape_str(ws));
}

// The input xs, padded, must hold the weight ws's dilated kernel.
void check_fits(const char* op, const Shape& xs, const Shape& ws, const Window2d& win) {
  const Pair hw = spatial(xs);
  if (hw[0] + 2 * win.ph < win.dh * (ws[2] - 1) + 1 ||
      hw[1] + 2 * win.pw < win.dw * (ws[3] - 1) + 1)
    fail(op, "input ", shape_str(xs), " padded by ", pair_str({win.ph, win.pw}),
         " is smaller than the weight ", shape_str(ws), "'s kernel dilated by ",
         pair_str({win.dh, win.dw}));
}

// ---- infer ----

// x (N, C, H, W) or (C, H, W), weight (O, C / groups, kH, kW), bias (O) or absent.
std::vector<TensorMeta> infer_conv2d(const InferArgs& a) {
  const char* op = a.op;
  const TensorMeta &x = a.in[0], &w = a.in[1], &b = a.in[2];
  const Shape &xs = x.shape, &ws = w.shape;
  check_image(op, x);
  check_weight(op, ws);
  check_dtypes(a, {"input", "weight", "bias"});
  check_devices(a, {"input", "weight", "bias"});
  const Window2d win = checked_conv_window(a, {ws[2], ws[3]});
  const int64_t groups = a.attrs.get<int64_t>("groups");
  const int64_t c = channels(xs), co = ws[0];
  if (co % groups != 0)
    fail(op, "weight ", shape_str(ws), " has ", co, " output channels, which groups=", groups,
         " does not divide");
  if (c != ws[1] * groups)
    fail(op, "input ", shape_str(xs), " has ", c, " channels but weight ", shape_str(ws),
         " expects ", ws[1] * groups, " (groups=", groups, ")");
  if (b.defined && (b.shape.size() != 1 || b.shape[0] != co))
    fail(op, "bias of shape ", shape_str(b.shape), " does not match the weight ", shape_str(ws),
         " with ", co, " output channels");
  check_fits(op, xs, ws, win);
  return single_output(windowed_shape(xs, win, co), x.dtype, x.device);
}

// grad (N, O, H', W'), weight (O, C / groups, kH, kW) -> (N, C, H, W), (H, W) = input_size.
std::vector<TensorMeta> infer_conv2d_input_grad(const InferArgs& a) {
  const char* op = a.op;
  const TensorMeta &gy = a.in[0], &w = a.in[1];
  const Shape &gs = gy.shape, &ws = w.shape;
  check_image(op, gy, "grad");
  check_weight(op, ws);
  check_dtypes(a, {"grad", "weight"});
  check_devices(a, {"grad", "weight"});
  const Window2d win = checked_conv_window(a, {ws[2], ws[3]});
  const int64_t groups = a.attrs.get<int64_t>("groups");
  const Pair hw = checked_pair(a, "input_size");
  if (hw[0] < 0 || hw[1] < 0) fail(op, "input_size must be non-negative, got ", pair_str(hw));
  if (ws[0] % groups != 0 || channels(gs) != ws[0])
    fail(op, "grad ", shape_str(gs), " has ", channels(gs), " channels but weight ", shape_str(ws),
         " has ", ws[0], " output channels (groups=", groups, ")");
  const Shape xs = with_spatial(gs, hw, ws[1] * groups);
  check_fits(op, xs, ws, win);
  if (windowed_shape(xs, win, ws[0]) != gs)
    fail(op, "grad ", shape_str(gs), " is not the output shape ",
         shape_str(windowed_shape(xs, win, ws[0])), " of input ", shape_str(xs), " and weight ",
         shape_str(ws));
  return single_output(xs, gy.dtype, gy.device);
}

// grad (N, O, H', W'), x (N, C, H, W) -> (O, C / groups, kH, kW), (kH, kW) = kernel_size.
std::vector<TensorMeta> infer_conv2d_weight_grad(const InferArgs& a) {
  const char* op = a.op;
  const TensorMeta &gy = a.in[0], &x = a.in[1];
  const Shape &gs = gy.shape, &xs = x.shape;
  check_image(op, gy, "grad");
  check_image(op, x);
  check_dtypes(a, {"grad", "input"});
  check_devices(a, {"grad", "input"});
  const Pair k = checked_pair(a, "kernel_size");
  if (k[0] < 1 || k[1] < 1) fail(op, "kernel_size must be positive, got ", pair_str(k));
  const Window2d win = checked_conv_window(a, k);
  const int64_t groups = a.attrs.get<int64_t>("groups");
  if (gs.size() != xs.size() || channels(gs) % groups != 0 || channels(xs) % groups != 0)
    fail(op, "grad ", shape_str(gs), " and input ", shape_str(xs),
         " must have the same rank and channel counts that groups=", groups, " divides");
  const Shape ws{channels(gs), channels(xs) / groups, k[0], k[1]};
  check_fits(op, xs, ws, win);
  if (windowed_shape(xs, win, ws[0]) != gs)
    fail(op, "grad ", shape_str(gs), " is not the output shape ",
         shape_str(windowed_shape(xs, win, ws[0])), " of input ", shape_str(xs), " and weight ",
         shape_str(ws));
  return single_output(ws, gy.dtype, gy.device);
}

// ---- compute ----

void compute_conv2d(const ComputeArgs& c) {
  require_output_shapes(op_def("conv2d"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor x = planes(c.in[0], dt), w = planes(c.in[1], dt), b = planes(c.in[2], dt);
  const Window2d win = conv_window(c.attrs, {w.size(2), w.size(3)});
  into(c.out[0], dt, [&](const Tensor& y) {
    conv2d_kernel().get(y.device().type)(x, w, b, win, c.attrs.get<int64_t>("groups"), y);
  });
}

void compute_conv2d_input_grad(const ComputeArgs& c) {
  require_output_shapes(op_def("conv2d_input_grad"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor gy = planes(c.in[0], dt), w = planes(c.in[1], dt);
  const Window2d win = conv_window(c.attrs, {w.size(2), w.size(3)});
  into(c.out[0], dt, [&](const Tensor& gx) {
    conv2d_input_grad_kernel().get(gx.device().type)(gy, w, win, c.attrs.get<int64_t>("groups"),
                                                     gx);
  });
}

void compute_conv2d_weight_grad(const ComputeArgs& c) {
  require_output_shapes(op_def("conv2d_weight_grad"), c);
  const DType dt = compute_dtype(c.out[0].dtype());
  const Tensor gy = planes(c.in[0], dt), x = planes(c.in[1], dt);
  const Window2d win = conv_window(c.attrs, pair_attr(c.attrs, "kernel_size"));
  into(c.out[0], dt, [&](const Tensor& gw) {
    conv2d_weight_grad_kernel().get(gw.device().type)(gy, x, win, c.attrs.get<int64_t>("groups"),
                                                      gw);
  });
}

// ---- calls of the ops, for the backward definitions ----

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const Attrs& a) {
  static const OpDef& def = op_def("conv2d");
  return dispatch1(def, {x, w, b}, conv_attrs(a));
}
// The gradient of conv(x; w) for x of (H, W) `input_size`: conv^T(gy; w).
Tensor input_grad(const Tensor& gy, const Tensor& w, Pair input_size, const Attrs& a) {
  static const OpDef& def = op_def("conv2d_input_grad");
  return dispatch1(def, {gy, w}, conv_attrs_with(a, "input_size", input_size));
}
// The gradient of conv(x; w) for w with (kH, kW) `kernel_size`: gy (x) the windows of x.
Tensor weight_grad(const Tensor& gy, const Tensor& x, Pair kernel_size, const Attrs& a) {
  static const OpDef& def = op_def("conv2d_weight_grad");
  return dispatch1(def, {gy, x}, conv_attrs_with(a, "kernel_size", kernel_size));
}

Pair kernel_of(const TensorMeta& w) {
  return {w.shape[2], w.shape[3]};
}

std::vector<Tensor> conv2d_backward(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &w = b.in[1], &g = b.grads[0];
  const Shape& xs = b.in_meta[0].shape;
  Axes bias_axes = xs.size() == 4 ? Axes{0, 2, 3} : Axes{1, 2};
  return {b.needs[0] ? input_grad(g, w, spatial(xs), b.attrs) : Tensor(),
          b.needs[1] ? weight_grad(g, x, kernel_of(b.in_meta[1]), b.attrs) : Tensor(),
          b.needs[2] ? sum(g, bias_axes) : Tensor()};
}

// gx = conv^T(gy; w) is linear in each of gy and w: its adjoints are conv(ggx; w) and the
// weight gradient with ggx in the place of the input.
std::vector<Tensor> conv2d_input_grad_backward(const BackwardArgs& b) {
  const Tensor &gy = b.in[0], &w = b.in[1], &ggx = b.grads[0];
  return {b.needs[0] ? conv(ggx, w, Tensor(), b.attrs) : Tensor(),
          b.needs[1] ? weight_grad(gy, ggx, kernel_of(b.in_meta[1]), b.attrs) : Tensor()};
}

// gw = sum over the batch of gy (x) windows(x); adjoints: conv(x; ggw) and conv^T(gy; ggw).
std::vector<Tensor> conv2d_weight_grad_backward(const BackwardArgs& b) {
  const Tensor &gy = b.in[0], &x = b.in[1], &ggw = b.grads[0];
  return {b.needs[0] ? conv(x, ggw, Tensor(), b.attrs) : Tensor(),
          b.needs[1] ? input_grad(gy, ggw, spatial(b.in_meta[1].shape), b.attrs) : Tensor()};
}

// 2 flops per multiply-add, numel(grad) * (C / groups) * kH * kW of them, as conv2d's.
OpCost grad_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype,
                 const Shape& w) {
  OpCost cost = elementwise_cost(inputs, output, dtype);
  const double macs = w.size() == 4 ? static_cast<double>(w[1] * w[2] * w[3]) : 1.0;
  cost.flops = 2.0 * static_cast<double>(numel_of(inputs.at(0))) * macs;
  return cost;
}
OpCost input_grad_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  return grad_cost(inputs, output, dtype, inputs.at(1));
}
OpCost weight_grad_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  return grad_cost(inputs, output, dtype, output);
}

// ---- batch norm ----

void check_batch_norm(const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w,
                      const Tensor& b, bool training) {
  const char* op = "batch_norm";
  const Shape& xs = meta_of(x).shape;
  if (xs.size() < 2)
    fail(op, "expects an input (N, C, ...) with 2 or more dims, got ", shape_str(xs));
  if (!is_floating(x.dtype()))
    fail<TypeError>(op, "expects a floating-point input, got ", meta_of(x).str());
  const int64_t c = xs[1];
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &rm}, {"running_var", &rv}, {"weight", &w}, {"bias", &b}};
  for (const auto& [name, t] : params)
    if (t->defined() && meta_of(*t).shape != Shape{c})
      fail(op, name, " of shape ", shape_str(meta_of(*t).shape), " does not match the input ",
           shape_str(xs), " with ", c, " channels");
  if (!training && (!rm.defined() || !rv.defined()))
    fail(op, "running_mean and running_var must be given in evaluation mode");
  if (training && numel_of(xs) / std::max<int64_t>(c, 1) <= 1)
    fail(op, "expected more than 1 value per channel when training, got input ", shape_str(xs));
}

// running = (1 - momentum) * running + momentum * factor * stat, outside autograd.
void update_running(const Tensor& running, const Tensor& stat, double momentum, double factor) {
  if (!running.defined()) return;
  autograd::NoGradGuard no_grad;
  Tensor r = running;
  Tensor s = to_dtype(reshape(detach(stat), {numel_of(meta_of(r).shape)}), r.dtype());
  mul_(r, wrap_scalar(1.0 - momentum, DType::kFloat64));
  add_(r, s, momentum * factor);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  static const OpDef& def = op_def("conv2d");
  return dispatch1(def, {x, w, b},
                   {{"stride", ints(stride)},
                    {"padding", ints(padding)},
                    {"dilation", ints(dilation)},
                    {"groups", groups}});
}

Tensor batch_norm(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  // Composed of ops that run on every kind of tensor: on global tensors the statistics are the
  // whole batch's (as SyncBatchNorm's), whatever the layout.
  check_batch_norm(x_in, running_mean, running_var, weight, bias, training);
  const DType dt = compute_dtype(x_in.dtype());
  const Shape& xs = meta_of(x_in).shape;
  Shape per_channel(xs.size(), 1);
  per_channel[1] = xs[1];
  Axes axes{0};
  for (int64_t d = 2; d < int64_t(xs.size()); ++d) axes.push_back(d);
  auto channel = [&](const Tensor& t) { return reshape(to_dtype(t, dt), per_channel); };
  const Tensor eps_t = wrap_scalar(eps, DType::kFloat64);

  Tensor x = to_dtype(x_in, dt), y;
  if (training) {
    // Biased variance normalises; the running update uses the unbiased one.
    const double count = static_cast<double>(numel_of(xs) / xs[1]);
    Tensor mu = mean(x, axes, true);
    Tensor centered = sub(x, mu);
    Tensor var = mean(mul(centered, centered), axes, true);
    Tensor scale = rsqrt(add(var, eps_t));
    if (weight.defined()) scale = mul(scale, channel(weight));
    y = mul(centered, scale);
    if (bias.defined()) y = add(y, channel(bias));
    update_running(running_mean, mu, momentum, 1.0);
    update_running(running_var, var, momentum, count / (count - 1.0));
  } else {
    // y = x * scale + shift: two passes over the input.
    Tensor scale = rsqrt(add(channel(running_var), eps_t));
    if (weight.defined()) scale = mul(scale, channel(weight));
    Tensor shift = neg(mul(channel(running_mean), scale));
    if (bias.defined()) shift = add(shift, channel(bias));
    y = add(mul(x, scale), shift);
  }
  return to_dtype(y, x_in.dtype());
}

namespace {

// SBP rules of conv2d (x, weight, bias) and its gradients conv2d_input_grad (grad, weight) and
// conv2d_weight_grad (grad, x): batch and channel splits (channels only when typed attribute
// groups is 1), the reduced channel or batch split -> P(sum), and P(sum) through one operand.

bool ungrouped(const SbpQuery& q) {
  return q.typed->get<int64_t>("groups") == 1;
}

// x (N, C, H, W) or (C, H, W), w (O, C / groups, kH, kW), b (O) -> (N, O, H', W'). Spatial
// splits would need halos, so none; a channel split must not cut through a group.
Sigs conv_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), kB, kB}, {Sbp::split(0)}});
  if (ungrouped(q)) {
    sigs.push_back({{kB, Sbp::split(0), Sbp::split(0)}, {Sbp::split(channel)}});
    sigs.push_back({{Sbp::split(channel), Sbp::split(1), kPSum}, {kPSum}});
  }
  sigs.push_back({{kPSum, kB, kPSum}, {kPSum}});
  sigs.push_back({{kB, kPSum, kPSum}, {kPSum}});
  return sigs;
}

// gy (N, O, H', W'), w (O, C / groups, kH, kW) -> gx (N, C, H, W): the adjoint of conv in x.
Sigs conv_input_grad_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), kB}, {Sbp::split(0)}});
  if (ungrouped(q)) {
    sigs.push_back({{kB, Sbp::split(1)}, {Sbp::split(channel)}});
    sigs.push_back({{Sbp::split(channel), Sbp::split(0)}, {kPSum}});
  }
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

// gy (N, O, H', W'), x (N, C, H, W) -> gw (O, C / groups, kH, kW): a sum over the batch.
Sigs conv_weight_grad_sbp(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), Sbp::split(0)}, {kPSum}});
  if (ungrouped(q)) {
    sigs.push_back({{Sbp::split(channel), kB}, {Sbp::split(0)}});
    sigs.push_back({{kB, Sbp::split(channel)}, {Sbp::split(1)}});
  }
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

const SbpRule kConv{"conv", conv_sbp};
const SbpRule kConvInputGrad{"conv_input_grad", conv_input_grad_sbp};
const SbpRule kConvWeightGrad{"conv_weight_grad", conv_weight_grad_sbp};

}  // namespace

Pair to_pair(const std::vector<int64_t>& v, const char* op, const char* what) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) fail(op, what, " must be an int or a pair of ints, got ", shape_str(v));
  return {v[0], v[1]};
}

OFL_REGISTER_OPS({
    {.name = "conv2d",
     .num_inputs = 3,
     .optional_inputs = 1u << 2,  // bias
     .cost = conv2d_cost,
     .sbp = &kConv,
     .attrs = kConvAttrs,
     .infer = infer_conv2d,
     .compute = compute_conv2d,
     .backward = conv2d_backward,
     .saves = kSaveInputs,
     .autocast = Autocast::kLowPrecision,
     .api = {{"conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[] "
              "padding=0, int[] dilation=1, int groups=1) -> Tensor",
              [](const CallArgs& a) {
                const char* op = "conv2d";
                return conv2d(a.tensor(0), a.tensor(1), a.optional_tensor(2),
                              to_pair(a.ints(3), op, "stride"), to_pair(a.ints(4), op, "padding"),
                              to_pair(a.ints(5), op, "dilation"), a.integer(6));
              },
              kInternal}}},
    // The gradients of conv2d, and each other's adjoints.
    {.name = "conv2d_input_grad",
     .num_inputs = 2,
     .cost = input_grad_cost,
     .sbp = &kConvInputGrad,
     .attrs = conv_attrs_and({"input_size", AttrType::kInts}),
     .infer = infer_conv2d_input_grad,
     .compute = compute_conv2d_input_grad,
     .backward = conv2d_input_grad_backward,
     .saves = kSaveInputs},
    {.name = "conv2d_weight_grad",
     .num_inputs = 2,
     .cost = weight_grad_cost,
     .sbp = &kConvWeightGrad,
     .attrs = conv_attrs_and({"kernel_size", AttrType::kInts}),
     .infer = infer_conv2d_weight_grad,
     .compute = compute_conv2d_weight_grad,
     .backward = conv2d_weight_grad_backward,
     .saves = kSaveInputs},
    {.name = "batch_norm",
     .num_inputs = 5,
     .cost = elementwise_cost,
     .api = {{"batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? "
              "weight=None, Tensor? bias=None, bool training=False, float momentum=0.1, float "
              "eps=1e-05) -> Tensor",
              call_front<batch_norm>(), kInternal}}},
});

}  // namespace ofl::internal
