// Neural-network op definitions. Softmax and the norms have fused kernels; losses,
// dropout and attention are compositions, so their backward comes from their parts.
#include "ops/nn.h"

#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/index_ops.h"
#include "ops/kernels.h"
#include "ops/linalg.h"
#include "ops/op_def.h"
#include "ops/reduce.h"
#include "ops/sbp_rules.h"
#include "ops/shape_ops.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;

namespace {

Tensor softmax_impl(const Tensor& x_in, int64_t axis, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  if (x_in.is_global()) {
    int64_t a = x_in.dim() == 0 ? 0 : normalize_axis(axis, x_in.dim(), name);
    return run_global1(name, {x_in}, logical_shape(x_in), {a},
                       [=](const auto& l, const Shape&) { return softmax_impl(l[0], axis, log); });
  }
  Tensor x = is_floating(x_in.dtype()) ? x_in : to_dtype(x_in, DType::kFloat32);
  if (x.dim() == 0) x = reshape(x, {1});
  axis = normalize_axis(axis, x.dim(), name);
  const bool moved = axis != x.dim() - 1;
  Tensor xt = moved ? transpose(x, axis, -1) : x;
  Tensor xc;
  {
    autograd::NoGradGuard no_grad;
    xc = contiguous(xt);
  }
  Tensor out = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
  softmax_kernel().get(x.device().type)(xc, out, log);
  if (autograd::needs_grad(xt)) {
    autograd::record(
        name, {xt}, {out},
        [so = SavedTensor(out, true), log, name](const Grads& g, const Needs&) -> Grads {
          Tensor y = so.unpack(name);
          Tensor gc = contiguous(g[0]);
          Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
          softmax_backward_kernel().get(y.device().type)(gc, y, gx, log);
          return {gx};
        });
  }
  Tensor result = moved ? transpose(out, axis, -1) : out;
  return x_in.dim() == 0 ? reshape(result, {}) : result;
}

void check_normalized(const char* op, const Tensor& x, const Shape& ns, const Tensor& w,
                      const Tensor& b) {
  bool ok = ns.size() <= static_cast<size_t>(x.dim()) && !ns.empty();
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = x.shape()[x.dim() - ns.size() + i] == ns[i];
  if (!ok)
    fail(op, "normalized_shape ", shape_str(ns), " does not match the trailing dimensions of ",
         "the input of shape ", shape_str(x.shape()));
  if (w.defined() && w.shape() != ns)
    fail(op, "weight of shape ", shape_str(w.shape()), " does not match normalized_shape ",
         shape_str(ns));
  if (b.defined() && b.shape() != ns)
    fail(op, "bias of shape ", shape_str(b.shape()), " does not match normalized_shape ",
         shape_str(ns));
  if (!is_floating(x.dtype())) fail<TypeError>(op, "expects a floating-point input, got ", x.str());
}

Tensor norm_impl(const char* name, bool rms, const Tensor& x, const Shape& ns, const Tensor& w,
                 const Tensor& b, double eps) {
  if (any_global({x, w, b})) {
    const Shape& xs = logical_shape(x);
    if (ns.empty() || ns.size() > xs.size() ||
        !std::equal(ns.begin(), ns.end(), xs.end() - ns.size()))
      fail(name, "normalized_shape ", shape_str(ns), " does not match the trailing dimensions of ",
           "the input of shape ", shape_str(xs));
    return run_global1(name, {x, w, b}, xs, {static_cast<int64_t>(ns.size())},
                       [=](const auto& l, const Shape&) {
                         return norm_impl(name, rms, l[0], ns, l[1], l[2], eps);
                       });
  }
  check_normalized(name, x, ns, w, b);
  const int64_t cols = numel_of(ns), rows = cols ? x.numel() / cols : 0;
  DType stat = x.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  Tensor xc = contiguous(detach(x));
  Tensor wc = w.defined() ? contiguous(to_dtype(detach(w), x.dtype())) : Tensor();
  Tensor bc = b.defined() ? contiguous(to_dtype(detach(b), x.dtype())) : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, stat, x.device());
  Tensor rstd = Tensor::empty({rows}, stat, x.device());
  norm_kernel().get(x.device().type)(xc, wc, bc, eps, rms, out, mean, rstd);
  if (autograd::needs_grad(x, w, b)) {
    autograd::record(
        name, {x, w, b}, {out},
        [sx = SavedTensor(xc), sw = SavedTensor(wc), mean, rstd, rms, name, ns,
         wdt = w.defined() ? w.dtype() : x.dtype(),
         bdt = b.defined() ? b.dtype() : x.dtype()](const Grads& g, const Needs& n) -> Grads {
          Tensor x = sx.unpack(name), w = sw.unpack(name);
          Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
          Tensor gw = w.defined() ? Tensor::empty(ns, x.dtype(), x.device()) : Tensor();
          Tensor gb = n[2] ? Tensor::empty(ns, x.dtype(), x.device()) : Tensor();
          norm_backward_kernel().get(x.device().type)(contiguous(g[0]), x, w, mean, rstd, rms, gx,
                                                      gw, gb);
          return {gx, n[1] ? to_dtype(gw, wdt) : Tensor(), n[2] ? to_dtype(gb, bdt) : Tensor()};
        });
  }
  return out;
}

// Classes on the last axis: (N, C, d1, ...) -> (N * d1 * ..., C), targets flattened to match.
std::pair<Tensor, Tensor> flatten_classes(const char* op, const Tensor& input,
                                          const Tensor& target) {
  const Shape &is = logical_shape(input), &ts = logical_shape(target);
  if (input.dim() < 1 || (input.dim() > 1 && target.dim() != input.dim() - 1))
    fail(op, "input of shape ", shape_str(is), " and target of shape ", shape_str(ts),
         " do not match (expected input (N, C, ...) and target (N, ...))");
  if (input.dim() == 1) return {unsqueeze(input, 0), reshape(target, {1})};
  Shape expect = is;
  expect.erase(expect.begin() + 1);
  if (ts != expect)
    fail(op, "input of shape ", shape_str(is), " expects target of shape ", shape_str(expect),
         ", got ", shape_str(ts));
  Tensor x = input;
  if (input.dim() > 2) x = reshape(transpose(flatten(input, 2), 1, 2), {-1, is[1]});
  return {x, reshape(target, {-1})};
}

Tensor reduce_loss(const char* op, const Tensor& losses, const std::string& reduction,
                   const Tensor& weight_sum) {
  if (reduction == "none") return losses;
  if (reduction == "sum") return sum(losses);
  if (reduction == "mean")
    return weight_sum.defined() ? div(sum(losses), weight_sum) : mean(losses);
  fail(op, "reduction must be 'mean', 'sum' or 'none', got '", reduction, "'");
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) {
  return softmax_impl(x, axis, false);
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return softmax_impl(x, axis, true);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                const std::string& reduction) {
  if (is_floating(target.dtype()) || target.dtype() == DType::kBool)
    fail<TypeError>("nll_loss", "target must be an integer tensor, got ", target.str());
  auto [x, t] = flatten_classes("nll_loss", log_probs, target);
  const int64_t classes = logical_shape(x)[1];
  Tensor t64 = to_dtype(t, DType::kInt64);
  Tensor valid = ne(t64, wrap_scalar(static_cast<double>(ignore_index), DType::kInt64));
  Tensor safe = where(valid, t64, zeros_like(t64));
  // The count of bad targets and of counted ones, together: on global targets one all_reduce
  // of two numbers, and the mean divides by a plain number. The offending value is looked up
  // only when there is one.
  auto scalar = [](double v) { return wrap_scalar(v, DType::kInt64); };
  auto whole = [](Tensor v) { return v.is_global() ? full_value(v) : v; };
  Tensor bad = logical_or(lt(safe, scalar(0)), ge(safe, scalar(double(classes))));
  Tensor counts = contiguous(
      whole(stack({sum(to_dtype(bad, DType::kInt64)), sum(to_dtype(valid, DType::kInt64))}, 0)));
  if (counts.data<int64_t>()[0] > 0) {
    int64_t lo = whole(amin(safe)).item<int64_t>(), hi = whole(amax(safe)).item<int64_t>();
    fail<IndexError>("nll_loss", "target ", lo < 0 ? lo : hi, " is out of bounds for ", classes,
                     " classes (input ", shape_str(logical_shape(log_probs)), ")");
  }
  Tensor picked = squeeze(gather(x, 1, unsqueeze(safe, 1)), std::vector<int64_t>{1});
  Tensor losses = neg(mul(picked, valid));
  if (reduction == "none") return reshape(losses, logical_shape(target));
  return reduce_loss("nll_loss", losses, reduction, to_dtype(select(counts, 0, 1), x.dtype()));
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  if (label_smoothing < 0 || label_smoothing > 1)
    fail("cross_entropy", "label_smoothing must be in [0, 1], got ", label_smoothing);
  const int64_t class_axis = logits.dim() == 1 ? 0 : 1;
  Tensor logp = log_softmax(logits, class_axis);
  if (is_floating(target.dtype())) {  // class probabilities
    if (logical_shape(target) != logical_shape(logits))
      fail("cross_entropy", "probability target of shape ", shape_str(logical_shape(target)),
           " must match the input's shape ", shape_str(logical_shape(logits)));
    Tensor t = target;
    if (label_smoothing > 0)  // t * (1 - ls) + ls / C
      t = add(mul(target, wrap_scalar(1 - label_smoothing, DType::kFloat64)),
              wrap_scalar(label_smoothing / logical_shape(logits)[class_axis], DType::kFloat64));
    Tensor losses = neg(sum(mul(logp, t), {class_axis}));
    return reduce_loss("cross_entropy", losses, reduction, Tensor());
  }
  Tensor nll = nll_loss(logp, target, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  auto [x, t] = flatten_classes("cross_entropy", logp, target);
  Tensor valid = ne(to_dtype(t, DType::kInt64), wrap_scalar(ignore_index, DType::kInt64));
  Tensor smooth = mul(neg(mean(x, {1})), valid);
  Tensor smooth_red = reduction == "none" ? reshape(smooth, logical_shape(target))
                                          : reduce_loss("cross_entropy", smooth, reduction,
                                                        to_dtype(sum(valid), x.dtype()));
  return add(mul(nll, wrap_scalar(1 - label_smoothing, DType::kFloat64)),
             mul(smooth_red, wrap_scalar(label_smoothing, DType::kFloat64)));
}

Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  if (logical_shape(a) != logical_shape(b))
    fail("mse_loss", "input of shape ", shape_str(logical_shape(a)), " and target of shape ",
         shape_str(logical_shape(b)), " differ");
  Tensor d = sub(a, b);
  return reduce_loss("mse_loss", mul(d, d), reduction, Tensor());
}

Tensor layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b, double eps) {
  return norm_impl("layer_norm", false, x, ns, w, b, eps);
}

Tensor rms_norm(const Tensor& x, const Shape& ns, const Tensor& w, std::optional<double> eps) {
  double e = eps.value_or(x.dtype() == DType::kFloat64 ? std::numeric_limits<double>::epsilon()
                                                       : std::numeric_limits<float>::epsilon());
  return norm_impl("rms_norm", true, x, ns, w, Tensor(), e);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  if (p < 0 || p > 1) fail("dropout", "probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, zeros_like(x));
  // A global x draws the whole logical mask on every rank, so the mask is the same whatever
  // its layout (ranks share the generator's seed and offset).
  Tensor noise =
      rand(logical_shape(x), is_floating(x.dtype()) ? x.dtype() : DType::kFloat32, gen, x.device());
  if (x.is_global()) noise = broadcast_on(noise, x);
  Tensor keep = ge(noise, wrap_scalar(p, DType::kFloat64));
  // Scale after masking so the factor is applied in x's dtype (a float32 mask would round it).
  return mul(mul(x, keep), wrap_scalar(1.0 / (1.0 - p), DType::kFloat64));
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen) {
  const Shape &qs = logical_shape(q), &ks = logical_shape(k), &vs = logical_shape(v);
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail("scaled_dot_product_attention", "q, k, v need at least 2 dims, got ", shape_str(qs), ", ",
         shape_str(ks), ", ", shape_str(vs));
  if (qs.back() != ks.back() || ks[k.dim() - 2] != vs[v.dim() - 2])
    fail("scaled_dot_product_attention", "q ", shape_str(qs), ", k ", shape_str(ks), ", v ",
         shape_str(vs), ": head dims of q and k or lengths of k and v differ");
  if (is_causal && attn_mask.defined())
    fail("scaled_dot_product_attention", "pass either attn_mask or is_causal, not both");
  const int64_t L = qs[q.dim() - 2], S = ks[k.dim() - 2];
  double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(qs.back())));
  Tensor scores = matmul(mul(q, wrap_scalar(s, DType::kFloat64)), transpose(k, -2, -1));
  Tensor neg_inf = wrap_scalar(-INFINITY, DType::kFloat64);
  if (is_causal) {
    Tensor rows = unsqueeze(arange(0, L, 1, DType::kInt64), 1);
    Tensor cols = unsqueeze(arange(0, S, 1, DType::kInt64), 0);
    Tensor future = gt(cols, rows);
    if (scores.is_global()) future = broadcast_on(future, scores);
    scores = masked_fill(scores, future, neg_inf);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == DType::kBool
                 ? masked_fill(scores, logical_not(attn_mask), neg_inf)
                 : add(scores, attn_mask);
  }
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true, gen);
  return matmul(attn, v);
}

OFL_REGISTER_OPS({
    {.name = "softmax", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kSoftmax},
    {.name = "log_softmax", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kSoftmax},
    {.name = "layer_norm", .num_inputs = 3, .cost = elementwise_cost, .sbp = &sbp_rules::kNorm},
    {.name = "rms_norm", .num_inputs = 2, .cost = elementwise_cost, .sbp = &sbp_rules::kNorm},
    {.name = "dropout", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "nll_loss", .num_inputs = 2, .cost = elementwise_cost},
    {.name = "cross_entropy", .num_inputs = 2, .cost = elementwise_cost},
    {.name = "mse_loss", .num_inputs = 2, .cost = elementwise_cost},
    {.name = "scaled_dot_product_attention", .num_inputs = 4, .cost = matmul_cost},
});

}  // namespace ofl
