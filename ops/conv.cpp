// Convolution, pooling and batch norm (NCHW). Kernels compute in float32 or float64; 16-bit
// floats go through float32. Every backward is again a recorded op (conv2d's input and weight
// gradients are adjoint convolutions), so gradients of gradients work; batch_norm composes.
#include "ops/conv.h"

#include <optional>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/index_ops.h"
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

DType compute_dtype(DType t) {
  return t == DType::kFloat64 ? t : DType::kFloat32;
}

// What a kernel reads: contiguous, without history.
Tensor kernel_arg(const Tensor& t) {
  return t.defined() ? contiguous(detach(t)) : Tensor();
}

std::string pair_str(Pair p) {
  return str_cat("(", p[0], ", ", p[1], ")");
}

void check_image(const char* op, const Tensor& x) {
  const Shape& xs = logical_shape(x);
  if (xs.size() != 3 && xs.size() != 4)
    fail(op, "expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got ", shape_str(xs));
  if (!is_floating(x.dtype())) fail<TypeError>(op, "expects a floating-point input, got ", x.str());
}

Tensor batched(const Tensor& x) {
  return x.dim() == 3 ? unsqueeze(x, 0) : x;
}
Tensor unbatched_like(const Tensor& y, const Tensor& x) {
  return x.dim() == 3 ? squeeze(y, std::vector<int64_t>{0}) : y;
}

// The output shape of a window op on input shape xs ((N, C, H, W) or (C, H, W)) with
// `channels` output channels (pooling keeps the input's).
Shape windowed_shape(Shape xs, const Window2d& win, std::optional<int64_t> channels = {}) {
  const size_t n = xs.size();
  if (channels) xs[n - 3] = *channels;
  xs[n - 2] = win.out_h(xs[n - 2]);
  xs[n - 1] = win.out_w(xs[n - 1]);
  return xs;
}

// ---- conv2d: forward, input gradient and weight gradient, each the others' backward ----

Tensor conv_input_grad(const Tensor& gy, const Tensor& w, const Shape& xs, const Window2d& win,
                       int64_t groups);
Tensor conv_weight_grad(const Tensor& gy, const Tensor& x, const Shape& ws, const Window2d& win,
                        int64_t groups);

Tensor conv_forward(const Tensor& x_in, const Tensor& w, const Tensor& b, const Window2d& win,
                    int64_t groups) {
  Tensor x = to_dtype(x_in, w.dtype());
  Tensor y = Tensor::empty(windowed_shape(x.shape(), win, w.shape()[0]), w.dtype(), w.device());
  conv2d_kernel().get(w.device().type)(kernel_arg(x), kernel_arg(w), kernel_arg(b), win, groups, y);
  if (autograd::needs_grad(x, w, b)) {
    autograd::record("conv2d", {x, w, b}, {y},
                     [sx = SavedTensor(x), sw = SavedTensor(w), win, groups](
                         const Grads& g, const Needs& n) -> Grads {
                       Tensor x = sx.unpack("conv2d"), w = sw.unpack("conv2d");
                       return {n[0] ? conv_input_grad(g[0], w, x.shape(), win, groups) : Tensor(),
                               n[1] ? conv_weight_grad(g[0], x, w.shape(), win, groups) : Tensor(),
                               n[2] ? sum(g[0], {0, 2, 3}) : Tensor()};
                     });
  }
  return y;
}

// gx = conv^T(gy; w). As a function of (gy, w) its adjoints are conv(ggx; w) and the weight
// gradient with ggx in the place of the input.
Tensor conv_input_grad(const Tensor& gy_in, const Tensor& w, const Shape& xs, const Window2d& win,
                       int64_t groups) {
  Tensor gy = to_dtype(gy_in, w.dtype());
  Tensor gx = Tensor::empty(xs, w.dtype(), w.device());
  conv2d_input_grad_kernel().get(w.device().type)(kernel_arg(gy), kernel_arg(w), win, groups, gx);
  if (autograd::needs_grad(gy, w)) {
    autograd::record("conv2d_backward_input", {gy, w}, {gx},
                     [sgy = SavedTensor(gy), sw = SavedTensor(w), win, groups](
                         const Grads& g, const Needs& n) -> Grads {
                       Tensor gy = sgy.unpack("conv2d_backward_input");
                       Tensor w = sw.unpack("conv2d_backward_input");
                       return {
                           n[0] ? conv_forward(g[0], w, Tensor(), win, groups) : Tensor(),
                           n[1] ? conv_weight_grad(gy, g[0], w.shape(), win, groups) : Tensor()};
                     });
  }
  return gx;
}

// gw = sum over the batch of gy (x) cols(x); adjoints: conv(x; ggw) and conv^T(gy; ggw).
Tensor conv_weight_grad(const Tensor& gy_in, const Tensor& x, const Shape& ws, const Window2d& win,
                        int64_t groups) {
  Tensor gy = to_dtype(gy_in, x.dtype());
  Tensor gw = Tensor::empty(ws, x.dtype(), x.device());
  conv2d_weight_grad_kernel().get(x.device().type)(kernel_arg(gy), kernel_arg(x), win, groups, gw);
  if (autograd::needs_grad(gy, x)) {
    autograd::record("conv2d_backward_weight", {gy, x}, {gw},
                     [sgy = SavedTensor(gy), sx = SavedTensor(x), win, groups](
                         const Grads& g, const Needs& n) -> Grads {
                       Tensor gy = sgy.unpack("conv2d_backward_weight");
                       Tensor x = sx.unpack("conv2d_backward_weight");
                       Tensor ggw = to_dtype(g[0], x.dtype());
                       return {n[0] ? conv_forward(x, ggw, Tensor(), win, groups) : Tensor(),
                               n[1] ? conv_input_grad(gy, ggw, x.shape(), win, groups) : Tensor()};
                     });
  }
  return gw;
}

void check_conv(const Tensor& x, const Tensor& w, const Tensor& b, Pair stride, Pair padding,
                Pair dilation, int64_t groups) {
  const char* op = "conv2d";
  const Shape &xs = logical_shape(x), &ws = logical_shape(w);
  check_image(op, x);
  if (ws.size() != 4)
    fail(op, "weight must be 4-d (out_channels, in_channels / groups, kH, kW), got ",
         shape_str(ws));
  if (w.dtype() != x.dtype() || (b.defined() && b.dtype() != x.dtype()))
    fail<TypeError>(op, "input ", x.str(), ", weight ", w.str(),
                    b.defined() ? ", bias " + b.str() : std::string(), ": dtypes must be the same");
  if (w.device() != x.device() || (b.defined() && b.device() != x.device()))
    fail(op, "input is on ", x.device().str(), " but weight is on ", w.device().str(),
         b.defined() ? " and bias on " + b.device().str() : std::string());
  if (groups < 1) fail(op, "groups must be positive, got ", groups);
  if (stride[0] < 1 || stride[1] < 1) fail(op, "stride must be positive, got ", pair_str(stride));
  if (dilation[0] < 1 || dilation[1] < 1)
    fail(op, "dilation must be positive, got ", pair_str(dilation));
  if (padding[0] < 0 || padding[1] < 0)
    fail(op, "padding must be non-negative, got ", pair_str(padding));
  const int64_t c = xs[xs.size() - 3], co = ws[0];
  if (co % groups != 0)
    fail(op, "weight ", shape_str(ws), " has ", co, " output channels, which groups=", groups,
         " does not divide");
  if (c != ws[1] * groups)
    fail(op, "input ", shape_str(xs), " has ", c, " channels but weight ", shape_str(ws),
         " expects ", ws[1] * groups, " (groups=", groups, ")");
  if (b.defined() && (logical_dim(b) != 1 || logical_shape(b)[0] != co))
    fail(op, "bias of shape ", shape_str(logical_shape(b)), " does not match the weight ",
         shape_str(ws), " with ", co, " output channels");
  for (int d = 0; d < 2; ++d) {
    const int64_t padded = xs[xs.size() - 2 + d] + 2 * padding[d];
    const int64_t extent = dilation[d] * (ws[2 + d] - 1) + 1;
    if (padded < extent)
      fail(op, "input ", shape_str(xs), " padded by ", pair_str(padding),
           " is smaller than the weight ", shape_str(ws), "'s kernel dilated by ",
           pair_str(dilation));
  }
}

// ---- pooling ----

Window2d pool_window(const char* op, const Tensor& x, Pair kernel, Pair stride, Pair padding) {
  check_image(op, x);
  const Shape& xs = logical_shape(x);
  if (kernel[0] < 1 || kernel[1] < 1)
    fail(op, "kernel size must be positive, got ", pair_str(kernel));
  if (stride[0] < 1 || stride[1] < 1) fail(op, "stride must be positive, got ", pair_str(stride));
  if (padding[0] < 0 || padding[1] < 0 || 2 * padding[0] > kernel[0] || 2 * padding[1] > kernel[1])
    fail(op, "padding ", pair_str(padding), " must be non-negative and at most half of kernel ",
         pair_str(kernel));
  const int64_t h = xs[xs.size() - 2], w = xs[xs.size() - 1];
  if (h + 2 * padding[0] < kernel[0] || w + 2 * padding[1] < kernel[1])
    fail(op, "input ", shape_str(xs), " padded by ", pair_str(padding), " is smaller than kernel ",
         pair_str(kernel));
  return {kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1]};
}

// gx[argmax] += g; its adjoint gathers gg at the argmax positions.
Tensor max_pool_backward(const Tensor& g_in, const Tensor& idx, const Shape& xs, DType dt) {
  Tensor g = to_dtype(g_in, dt);
  Tensor gx = Tensor::empty(xs, dt, g.device());
  max_pool2d_backward_kernel().get(g.device().type)(kernel_arg(g), idx, gx);
  if (autograd::needs_grad(g)) {
    autograd::record("max_pool2d_backward", {g}, {gx},
                     [idx, xs](const Grads& gg, const Needs&) -> Grads {
                       const Shape& is = idx.shape();
                       Tensor flat = reshape(gg[0], {xs[0], xs[1], xs[2] * xs[3]});
                       Tensor picked = gather(flat, 2, reshape(idx, {is[0], is[1], -1}));
                       return {reshape(picked, is)};
                     });
  }
  return gx;
}

Tensor avg_pool_backward(const Tensor& g, const Shape& xs, const Window2d& win, bool cip);

Tensor avg_pool_forward(const Tensor& x, const Window2d& win, bool cip) {
  Tensor y = Tensor::empty(windowed_shape(x.shape(), win), x.dtype(), x.device());
  avg_pool2d_kernel().get(x.device().type)(kernel_arg(x), win, cip, y);
  if (autograd::needs_grad(x)) {
    autograd::record("avg_pool2d", {x}, {y},
                     [xs = x.shape(), win, cip](const Grads& g, const Needs&) -> Grads {
                       return {avg_pool_backward(g[0], xs, win, cip)};
                     });
  }
  return y;
}

// Spreads each g / divisor over its window; the adjoint of that is avg_pool2d itself.
Tensor avg_pool_backward(const Tensor& g, const Shape& xs, const Window2d& win, bool cip) {
  Tensor gx = Tensor::empty(xs, g.dtype(), g.device());
  avg_pool2d_backward_kernel().get(g.device().type)(kernel_arg(g), win, cip, gx);
  if (autograd::needs_grad(g)) {
    autograd::record("avg_pool2d_backward", {g}, {gx},
                     [win, cip](const Grads& gg, const Needs&) -> Grads {
                       return {avg_pool_forward(gg[0], win, cip)};
                     });
  }
  return gx;
}

// ---- batch norm ----

void check_batch_norm(const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w,
                      const Tensor& b, bool training) {
  const char* op = "batch_norm";
  const Shape& xs = logical_shape(x);
  if (xs.size() < 2)
    fail(op, "expects an input (N, C, ...) with 2 or more dims, got ", shape_str(xs));
  if (!is_floating(x.dtype())) fail<TypeError>(op, "expects a floating-point input, got ", x.str());
  const int64_t c = xs[1];
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &rm}, {"running_var", &rv}, {"weight", &w}, {"bias", &b}};
  for (const auto& [name, t] : params)
    if (t->defined() && logical_shape(*t) != Shape{c})
      fail(op, name, " of shape ", shape_str(logical_shape(*t)), " does not match the input ",
           shape_str(xs), " with ", c, " channels");
  if (!training && (!rm.defined() || !rv.defined()))
    fail(op, "running_mean and running_var must be given in evaluation mode");
  if (training && logical_numel(x) / std::max<int64_t>(c, 1) <= 1)
    fail(op, "expected more than 1 value per channel when training, got input ", shape_str(xs));
}

// running = (1 - momentum) * running + momentum * factor * stat, outside autograd.
void update_running(const Tensor& running, const Tensor& stat, double momentum, double factor) {
  if (!running.defined()) return;
  autograd::NoGradGuard no_grad;
  Tensor r = running;
  Tensor s = to_dtype(reshape(detach(stat), {logical_numel(r)}), r.dtype());
  mul_(r, wrap_scalar(1.0 - momentum, DType::kFloat64));
  add_(r, s, momentum * factor);
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  check_conv(x_in, w_in, b_in, stride, padding, dilation, groups);
  const Shape& ws = logical_shape(w_in);
  const Window2d win{ws[2],      ws[3],      stride[0],   stride[1],
                     padding[0], padding[1], dilation[0], dilation[1]};
  if (any_global({x_in, w_in, b_in})) {
    return run_global1("conv2d", {x_in, w_in, b_in},
                       windowed_shape(logical_shape(x_in), win, ws[0]), {groups},
                       [=](const auto& l, const Shape&) {
                         return conv2d(l[0], l[1], l[2], stride, padding, dilation, groups);
                       });
  }
  const DType dt = compute_dtype(x_in.dtype());
  Tensor x = to_dtype(batched(x_in), dt), w = to_dtype(w_in, dt);
  Tensor b = b_in.defined() ? to_dtype(b_in, dt) : Tensor();
  return unbatched_like(to_dtype(conv_forward(x, w, b, win, groups), x_in.dtype()), x_in);
}

Tensor max_pool2d(const Tensor& x_in, Pair kernel, Pair stride, Pair padding) {
  const Window2d win = pool_window("max_pool2d", x_in, kernel, stride, padding);
  if (x_in.is_global())
    return run_global1(
        "max_pool2d", {x_in}, windowed_shape(logical_shape(x_in), win), {sbp_rules::kMaxPool},
        [=](const auto& l, const Shape&) { return max_pool2d(l[0], kernel, stride, padding); });
  Tensor x = to_dtype(batched(x_in), compute_dtype(x_in.dtype()));
  const Shape ys = windowed_shape(x.shape(), win);
  Tensor y = Tensor::empty(ys, x.dtype(), x.device());
  Tensor idx = Tensor::empty(ys, DType::kInt64, x.device());
  max_pool2d_kernel().get(x.device().type)(kernel_arg(x), win, y, idx);
  if (autograd::needs_grad(x)) {
    autograd::record("max_pool2d", {x}, {y},
                     [idx, xs = x.shape(), dt = x.dtype()](const Grads& g, const Needs&) -> Grads {
                       return {max_pool_backward(g[0], idx, xs, dt)};
                     });
  }
  return unbatched_like(to_dtype(y, x_in.dtype()), x_in);
}

Tensor avg_pool2d(const Tensor& x_in, Pair kernel, Pair stride, Pair padding,
                  bool count_include_pad) {
  const Window2d win = pool_window("avg_pool2d", x_in, kernel, stride, padding);
  if (x_in.is_global())
    return run_global1("avg_pool2d", {x_in}, windowed_shape(logical_shape(x_in), win),
                       {sbp_rules::kAvgPool}, [=](const auto& l, const Shape&) {
                         return avg_pool2d(l[0], kernel, stride, padding, count_include_pad);
                       });
  Tensor x = to_dtype(batched(x_in), compute_dtype(x_in.dtype()));
  Tensor y = avg_pool_forward(x, win, count_include_pad);
  return unbatched_like(to_dtype(y, x_in.dtype()), x_in);
}

Tensor batch_norm(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  // Composed of global-aware ops: on global tensors the statistics are the whole batch's (as
  // SyncBatchNorm's), whatever the layout.
  check_batch_norm(x_in, running_mean, running_var, weight, bias, training);
  const DType dt = compute_dtype(x_in.dtype());
  const Shape& xs = logical_shape(x_in);
  Shape per_channel(xs.size(), 1);
  per_channel[1] = xs[1];
  Axes axes{0};
  for (int64_t d = 2; d < int64_t(xs.size()); ++d) axes.push_back(d);
  auto channel = [&](const Tensor& t) { return reshape(to_dtype(t, dt), per_channel); };
  const Tensor eps_t = wrap_scalar(eps, DType::kFloat64);

  Tensor x = to_dtype(x_in, dt), y;
  if (training) {
    // Biased variance normalises; the running update uses the unbiased one.
    const double count = static_cast<double>(logical_numel(x) / xs[1]);
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

OFL_REGISTER_OPS({
    {.name = "conv2d", .num_inputs = 3, .cost = conv2d_cost, .sbp = &sbp_rules::kConv},
    {.name = "max_pool2d", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kPool},
    {.name = "avg_pool2d", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kPool},
    {.name = "batch_norm", .num_inputs = 5, .cost = elementwise_cost},
});

}  // namespace ofl
