// Losses: nll_loss is an op (its kernel checks the targets, so no front end reads data); the
// reductions, cross_entropy and mse_loss are compositions of ops.
#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/nn.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

using elementwise_grad::k;

namespace {

int64_t class_axis(const Shape& x) {
  return x.size() == 1 ? 0 : 1;
}

// x (N, C, d...) or (C) as [outer, classes, inner]; a shard of a class-split x holds classes
// [first_class, first_class + C) of num_classes (nll_class_shard).
ClassView class_view(const Shape& x, const Attrs& attrs) {
  ClassView v{1, x[class_axis(x)], 1, 0, x[class_axis(x)]};
  if (x.size() > 1) {
    v.outer = x[0];
    v.inner = v.outer * v.classes ? numel_of(x) / (v.outer * v.classes) : 0;
  }
  if (attrs.has("first_class")) {
    v.first = attrs.get<int64_t>("first_class");
    v.total = attrs.get<int64_t>("num_classes");
  }
  return v;
}

// A class-split shard: where its classes begin, and how many there are in all (from the input x
// forward; from the output gx backward, whose shard holds `classes` of them).
Attrs nll_class_shard(const Attrs& attrs, const ShardArgs& s, bool backward) {
  Attrs out = attrs;
  if (backward) {
    const Shape& gx = s.local_out[0];
    const int64_t axis = class_axis(gx);
    out.set("first_class", s.out_offsets[0].at(axis));
    out.set("num_classes", attrs.get<int64_t>("classes"));
    out.set("classes", gx[axis]);
  } else {
    const Shape& x = s.in_shapes[0];
    out.set("first_class", s.in_offsets[0].at(class_axis(x)));
    out.set("num_classes", x[class_axis(x)]);
  }
  return out;
}

void check_target_dtype(const char* op, const TensorMeta& target) {
  if (is_floating(target.dtype) || target.dtype == DType::kBool)
    fail<TypeError>(op, "target must be an integer tensor, got ", target.str());
}

// (input (N, C, d...) or (C), target (N, d...) or ()) -> losses of the target's shape.
std::vector<TensorMeta> infer_nll_loss(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &t = a.in[1];
  check_target_dtype(a.op, t);
  const int64_t nd = static_cast<int64_t>(x.shape.size());
  if (nd < 1 || t.shape.size() != static_cast<size_t>(std::max<int64_t>(nd - 1, 0)) ||
      (nd == 1 && !t.shape.empty()))
    fail(a.op, "input of shape ", shape_str(x.shape), " and target of shape ", shape_str(t.shape),
         " do not match (expected input (N, C, ...) and target (N, ...), or input (C) and a 0-d "
         "target)");
  Shape expect = x.shape;
  expect.erase(expect.begin() + (nd == 1 ? 0 : 1));
  if (t.shape != expect)
    fail(a.op, "input of shape ", shape_str(x.shape), " expects target of shape ",
         shape_str(expect), ", got ", shape_str(t.shape));
  if (!is_floating(x.dtype)) fail<TypeError>(a.op, "expects a floating-point input, got ", x.str());
  return single_output(t.shape, x.dtype, common_device(a));
}

// (grad of the losses, target) -> the input's gradient: attribute classes puts C back at axis 1.
std::vector<TensorMeta> infer_nll_loss_backward(const InferArgs& a) {
  const TensorMeta &g = a.in[0], &t = a.in[1];
  check_target_dtype(a.op, t);
  if (g.shape != t.shape)
    fail(a.op, "grad of shape ", shape_str(g.shape), " does not match the target's shape ",
         shape_str(t.shape));
  if (!is_floating(g.dtype)) fail<TypeError>(a.op, "expects a floating-point grad, got ", g.str());
  Shape shape = g.shape;
  shape.insert(shape.begin() + (shape.empty() ? 0 : 1), a.attrs.get<int64_t>("classes"));
  return single_output(shape, g.dtype, common_device(a));
}

Tensor int64_contiguous(const Tensor& t) {
  return contiguous_local(converted(t, DType::kInt64));
}

// nll_loss (x, target) -> losses and nll_loss_backward (grad, target) -> gx. x (N, C, d...) or
// (C), target and the losses (N, d...): every axis but the classes may be split, and a P(sum) x
// (or grad) with B target gives P(sum) (the losses are linear in it). A class-split x with B
// target gives P(sum) too: each shard picks the targets among its classes and gives 0 for the
// others (vocabulary-parallel cross-entropy, no gather of the logits). The backward maps the
// same axes the other way.
Sigs nll_splits(const SbpQuery& q, const Shape& x, bool backward) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (d == 1 || rank_of(x) < 2) continue;
    const int64_t t = d == 0 ? 0 : d - 1;
    sigs.push_back(backward ? SbpSignature{{Sbp::split(t), Sbp::split(t)}, {Sbp::split(d)}}
                            : SbpSignature{{Sbp::split(d), Sbp::split(t)}, {Sbp::split(t)}});
  }
  const Sbp classes = Sbp::split(class_axis(x));
  sigs.push_back(backward ? SbpSignature{{kB, kB}, {classes}}
                          : SbpSignature{{classes, kB}, {kPSum}});
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}
Sigs nll_loss_sbp(const SbpQuery& q) {
  return nll_splits(q, q.in[0], false);
}
Sigs nll_loss_grad_sbp(const SbpQuery& q) {
  return nll_splits(q, q.out[0], true);
}

const SbpRule kNllLoss{"nll_loss", nll_loss_sbp};
const SbpRule kNllLossGrad{"nll_loss_grad", nll_loss_grad_sbp};

OFL_REGISTER_OPS({
    {.name = "nll_loss",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kNllLoss,
     .attrs = {{"ignore_index", AttrType::kInt}},
     .infer = infer_nll_loss,
     .compute =
         [](const ComputeArgs& c) {
           require_output_shapes(op_def("nll_loss"), c);
           const Tensor& x = c.in[0];
           nll_loss_kernel().get(x.device().type)(contiguous(x), int64_contiguous(c.in[1]),
                                                  class_view(x.shape(), c.attrs),
                                                  c.attrs.get<int64_t>("ignore_index"), c.out[0]);
         },
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       static const OpDef& grad_def = op_def("nll_loss_backward");
       const Shape& x = b.in_meta[0].shape;
       const int64_t classes = x[class_axis(x)];
       return {dispatch1(
                   grad_def, {b.grads[0], b.in[1]},
                   {{"ignore_index", b.attrs.get<int64_t>("ignore_index")}, {"classes", classes}}),
               Tensor()};
     },
     .saves = kSaveInputs,
     .autocast = Autocast::kFloat32,
     .shard_attrs = [](const Attrs& attrs,
                       const ShardArgs& s) { return nll_class_shard(attrs, s, false); },
     .api = {{"nll_loss(Tensor input, Tensor target, int ignore_index=-100, str reduction='mean') "
              "-> Tensor",
              call_front<nll_loss>(), kInternal}}},
    // Linear in grad: its own backward is nll_loss of the incoming gradient (none for target).
    {.name = "nll_loss_backward",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kNllLossGrad,
     .attrs = {{"ignore_index", AttrType::kInt}, {"classes", AttrType::kInt}},
     .infer = infer_nll_loss_backward,
     .compute =
         [](const ComputeArgs& c) {
           require_output_shapes(op_def("nll_loss_backward"), c);
           const Tensor& gx = c.out[0];
           nll_loss_backward_kernel().get(gx.device().type)(
               contiguous(c.in[0]), int64_contiguous(c.in[1]), class_view(gx.shape(), c.attrs),
               c.attrs.get<int64_t>("ignore_index"), gx);
         },
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       static const OpDef& loss = op_def("nll_loss");
       if (!b.needs[0]) return {Tensor(), Tensor()};
       return {dispatch1(loss, {b.grads[0], b.in[1]},
                         {{"ignore_index", b.attrs.get<int64_t>("ignore_index")}}),
               Tensor()};
     },
     .saves = kSaveInputs,
     .shard_attrs = [](const Attrs& attrs,
                       const ShardArgs& s) { return nll_class_shard(attrs, s, true); }},
    {.name = "cross_entropy",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .api = {{"cross_entropy(Tensor input, Tensor target, int ignore_index=-100, str "
              "reduction='mean', float label_smoothing=0.0) -> Tensor",
              call_front<cross_entropy>(), kInternal}}},
    {.name = "mse_loss",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .api = {{"mse_loss(Tensor input, Tensor target, str reduction='mean') -> Tensor",
              call_front<mse_loss>(), kInternal}}},
});

Tensor reduce_loss(const char* op, const Tensor& losses, const std::string& reduction,
                   const Tensor& weight_sum) {
  if (reduction == "none") return losses;
  if (reduction == "sum") return sum(losses);
  if (reduction == "mean")
    return weight_sum.defined() ? div(sum(losses), weight_sum) : mean(losses);
  fail(op, "reduction must be 'mean', 'sum' or 'none', got '", reduction, "'");
}

// How many targets count (are not ignore_index), in `dtype`.
Tensor counted(const Tensor& target, int64_t ignore_index, DType dtype) {
  Tensor valid = ne(target, wrap_scalar(static_cast<double>(ignore_index), DType::kInt64));
  return to_dtype(sum(to_dtype(valid, DType::kInt64)), dtype);
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                const std::string& reduction) {
  static const OpDef& def = op_def("nll_loss");
  Tensor losses = dispatch1(def, {log_probs, target}, {{"ignore_index", ignore_index}});
  return reduce_loss(
      "nll_loss", losses, reduction,
      reduction == "mean" ? counted(target, ignore_index, losses.dtype()) : Tensor());
}

namespace {

// -log softmax(x)[t] = logsumexp(x) - x[t]: a reduction over the classes and nll_loss of the
// logits themselves, so logits split by class stay split (vocabulary-parallel cross-entropy:
// all-reduces of each row's max, sum and picked logit instead of a gather of the logits, as
// Megatron-LM computes it). Half logits go up to float32 first, as PyTorch's autocast and
// Megatron do; the loss goes back to their dtype outside autocast (as PyTorch gives it).
Tensor cross_entropy_float(const Tensor& x, const Tensor& target, int64_t ignore_index,
                           const std::string& reduction, double label_smoothing) {
  static const OpDef& nll = op_def("nll_loss");
  const Shape& shape = meta_of(x).shape;
  const int64_t axis = class_axis(shape);
  if (is_floating(target.dtype())) {  // class probabilities
    if (meta_of(target).shape != shape)
      fail("cross_entropy", "probability target of shape ", shape_str(meta_of(target).shape),
           " must match the input's shape ", shape_str(shape));
    Tensor t = target;
    if (label_smoothing > 0)  // t * (1 - ls) + ls / C
      t = add(mul(target, k(1 - label_smoothing)), k(label_smoothing / shape[axis]));
    Tensor logp = sub(x, logsumexp(x, {axis}, true));
    Tensor losses = neg(sum(mul(logp, t), {axis}));
    return reduce_loss("cross_entropy", losses, reduction, Tensor());
  }
  Tensor picked = dispatch1(nll, {x, target}, {{"ignore_index", ignore_index}});  // -x[t]
  Tensor valid = ne(target, wrap_scalar(static_cast<double>(ignore_index), DType::kInt64));
  Tensor lse = logsumexp(x, {axis});
  lse = where(valid, lse, zeros_like(lse));
  const Tensor count =
      reduction == "mean" ? counted(target, ignore_index, picked.dtype()) : Tensor();
  Tensor loss = reduce_loss("cross_entropy", add(lse, picked), reduction, count);
  if (label_smoothing == 0) return loss;
  // The uniform part: the mean negative log-probability over classes, logsumexp(x) - mean(x),
  // at counted targets.
  Tensor smooth = sub(lse, mul(mean(x, {axis}), valid));
  return add(mul(loss, k(1 - label_smoothing)),
             mul(reduce_loss("cross_entropy", smooth, reduction, count), k(label_smoothing)));
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  if (label_smoothing < 0 || label_smoothing > 1)
    fail("cross_entropy", "label_smoothing must be in [0, 1], got ", label_smoothing);
  if (meta_of(logits).shape.empty())
    fail("cross_entropy", "expects an input of at least one dimension, got 0-d");
  const DType dtype = logits.dtype();
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    return cross_entropy_float(logits, target, ignore_index, reduction, label_smoothing);
  Tensor loss = cross_entropy_float(to_dtype(logits, DType::kFloat32), target, ignore_index,
                                    reduction, label_smoothing);
  return autocast_state().enabled ? loss : to_dtype(loss, dtype);
}

Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  const Shape &as = meta_of(a).shape, &bs = meta_of(b).shape;
  if (as != bs)
    fail("mse_loss", "input of shape ", shape_str(as), " and target of shape ", shape_str(bs),
         " differ");
  Tensor d = sub(a, b);
  return reduce_loss("mse_loss", mul(d, d), reduction, Tensor());
}

}  // namespace ofl::internal
