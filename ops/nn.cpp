// Neural-network op definitions: softmax and the norms with their fused backward ops, dropout
// (drawn by logical element index, so a global tensor's shards draw only their own block).
// Attention is in ops/attention.cpp. The losses are in ops/loss.cpp.
#include "ops/nn.h"

#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/linalg.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

using elementwise_grad::k;

namespace {

using Ints = std::vector<int64_t>;

int64_t rank(const Shape& s) {
  return static_cast<int64_t>(s.size());
}

// --- softmax / log_softmax ---

std::vector<TensorMeta> infer_softmax(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  a.attrs.axis("axis", rank(x.shape), a.op);
  return single_output(x.shape, is_floating(x.dtype) ? x.dtype : DType::kFloat32, common_device(a));
}

// (grad, y) -> gx, for the backward ops.
std::vector<TensorMeta> infer_softmax_backward(const InferArgs& a) {
  const TensorMeta &g = a.in[0], &y = a.in[1];
  a.attrs.axis("axis", rank(y.shape), a.op);
  if (g.shape != y.shape)
    fail(a.op, "grad of shape ", shape_str(g.shape), " does not match the output's shape ",
         shape_str(y.shape));
  if (!is_floating(y.dtype))
    fail<TypeError>(a.op, "expects a floating-point output, got ", y.str());
  return single_output(y.shape, y.dtype, common_device(a));
}

// Runs a row kernel (over the last axis of contiguous operands) over `axis` of out's shape,
// moving that axis last (a copy) when it is not.
template <class Kernel>
void over_axis(int64_t axis, std::vector<Tensor> in, const Tensor& out, Kernel kernel) {
  const int64_t last = out.dim() - 1;
  const bool moved = out.dim() > 0 && normalize_axis(axis, out.dim(), "softmax") != last;
  for (Tensor& t : in) t = contiguous(moved ? transpose(t, axis, last) : t);
  if (!moved) {
    kernel(in, out);
    return;
  }
  Tensor tmp = Tensor::empty(in[0].shape(), out.dtype(), out.device());
  kernel(in, tmp);
  copy_into(out, transpose(tmp, axis, last));
}

// softmax / log_softmax: typed attribute axis; any other axis may be split.
Sigs softmax_sbp(const SbpQuery& q) {
  const int64_t nd = rank_of(q.in[0]);
  return splits_except(q, nd == 0 ? -1 : q.typed->axis("axis", nd, "softmax"));
}

// softmax_backward / log_softmax_backward (grad, y): + a P(sum) grad -> P(sum) (f(grad, y) is
// linear in grad).
Sigs softmax_grad_sbp(const SbpQuery& q) {
  Sigs sigs = softmax_sbp(q);
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

const SbpRule kSoftmax{"softmax", softmax_sbp};
const SbpRule kSoftmaxGrad{"softmax_grad", softmax_grad_sbp};

OpDef softmax_def(const char* name, bool log) {
  OpDef def{.name = name, .num_inputs = 1, .cost = elementwise_cost, .sbp = &kSoftmax};
  def.attrs = {{"axis", AttrType::kInt}};
  def.autocast = Autocast::kFloat32;
  def.infer = infer_softmax;
  def.compute = [name, log](const ComputeArgs& c) {
    require_output_shapes(op_def(name), c);
    const Tensor& out = c.out[0];
    over_axis(c.attrs.get<int64_t>("axis"), {converted(c.in[0], out.dtype())}, out,
              [&](const std::vector<Tensor>& in, const Tensor& o) {
                softmax_kernel().get(o.device().type)(in[0], o, log);
              });
  };
  def.saves = kSaveOutputs;
  def.api = {{str_cat(name, "(Tensor input, int dim, dtype? dtype=None) -> Tensor"),
              [log](const CallArgs& a) {
                // dtype: the input is cast to it first (PyTorch's rule, against overflow).
                const Tensor x = a.is_none(2) ? a.tensor(0) : to_dtype(a.tensor(0), a.dtype(2));
                return log ? log_softmax(x, a.integer(1)) : softmax(x, a.integer(1));
              }}};
  const std::string backward = std::string(name) + "_backward";
  def.backward = [backward](const BackwardArgs& b) -> std::vector<Tensor> {
    return {dispatch1(op_def(backward), {b.grads[0], b.out[0]}, b.attrs)};
  };
  return def;
}

// The backward of the backward (g, y) -> gx, for double backward. Sums run over `axis`:
//   softmax:     gx = y (g - sum(g y));    d/dg = the op on gg,  d/dy = gg (g - sum(g y)) - g
//   sum(gg y) log_softmax: gx = g - exp(y) sum(g);   d/dg = gg - sum(gg exp(y)),  d/dy = -gg exp(y)
//   sum(g)
std::vector<Tensor> softmax_backward_grad(bool log, const char* name, const BackwardArgs& b) {
  const Tensor &g = b.in[0], &y = b.in[1], &gg = b.grads[0];
  const Axes axis{b.attrs.get<int64_t>("axis")};
  Tensor dg, dy;
  if (log) {
    const Tensor p = exp(y);
    if (b.needs[0]) dg = sub(gg, sum(mul(gg, p), axis, true));
    if (b.needs[1]) dy = neg(mul(mul(gg, p), sum(g, axis, true)));
  } else {
    if (b.needs[0]) dg = dispatch1(op_def(name), {gg, y}, b.attrs);
    if (b.needs[1])
      dy = sub(mul(gg, sub(g, sum(mul(g, y), axis, true))), mul(g, sum(mul(gg, y), axis, true)));
  }
  return {dg.defined() ? to_dtype(dg, b.in_meta[0].dtype) : dg,
          dy.defined() ? to_dtype(dy, b.in_meta[1].dtype) : dy};
}

OpDef softmax_backward_def(const char* name, bool log) {
  OpDef def{.name = name, .num_inputs = 2, .cost = elementwise_cost, .sbp = &kSoftmaxGrad};
  def.attrs = {{"axis", AttrType::kInt}};
  def.infer = infer_softmax_backward;
  def.compute = [name, log](const ComputeArgs& c) {
    require_output_shapes(op_def(name), c);
    const Tensor& out = c.out[0];
    over_axis(c.attrs.get<int64_t>("axis"), {converted(c.in[0], out.dtype()), c.in[1]}, out,
              [&](const std::vector<Tensor>& in, const Tensor& o) {
                softmax_backward_kernel().get(o.device().type)(in[0], in[1], o, log);
              });
  };
  def.saves = kSaveInputs;
  def.backward = [name, log](const BackwardArgs& b) { return softmax_backward_grad(log, name, b); };
  return def;
}

// --- layer_norm / rms_norm ---

void check_normalized(const char* op, const TensorMeta& x, const Shape& ns, const TensorMeta& w,
                      const TensorMeta& b) {
  bool ok = !ns.empty() && ns.size() <= x.shape.size();
  for (size_t i = 0; ok && i < ns.size(); ++i)
    ok = x.shape[x.shape.size() - ns.size() + i] == ns[i];
  if (!ok)
    fail(op, "normalized_shape ", shape_str(ns), " does not match the trailing dimensions of ",
         "the input of shape ", shape_str(x.shape));
  if (w.defined && w.shape != ns)
    fail(op, "weight of shape ", shape_str(w.shape), " does not match normalized_shape ",
         shape_str(ns));
  if (b.defined && b.shape != ns)
    fail(op, "bias of shape ", shape_str(b.shape), " does not match normalized_shape ",
         shape_str(ns));
  if (!is_floating(x.dtype)) fail<TypeError>(op, "expects a floating-point input, got ", x.str());
}

const Ints& normalized_shape(const Attrs& attrs) {
  return attrs.get<Ints>("normalized_shape");
}

DType stat_dtype(DType x) {
  return x == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

// (x, weight[, bias]) -> (y[, mean], rstd): the statistics have x's leading shape.
std::vector<TensorMeta> infer_norm(bool rms, const InferArgs& a) {
  const TensorMeta &x = a.in[0], &w = a.in[1];
  const Shape& ns = normalized_shape(a.attrs);
  check_normalized(a.op, x, ns, w, rms ? TensorMeta{.defined = false} : a.in[2]);
  const Device device = common_device(a);
  const TensorMeta stat{Shape(x.shape.begin(), x.shape.end() - rank(ns)), stat_dtype(x.dtype),
                        device};
  if (rms) return {{x.shape, x.dtype, device}, stat};
  return {{x.shape, x.dtype, device}, stat, stat};
}

// (grad, x, weight[, mean], rstd) -> (gx, gweight[, gbias]).
std::vector<TensorMeta> infer_norm_backward(bool rms, const InferArgs& a) {
  const TensorMeta &g = a.in[0], &x = a.in[1];
  const Shape& ns = normalized_shape(a.attrs);
  check_normalized(a.op, x, ns, a.in[2], TensorMeta{.defined = false});
  if (g.shape != x.shape)
    fail(a.op, "grad of shape ", shape_str(g.shape), " does not match the input's shape ",
         shape_str(x.shape));
  const Shape lead(x.shape.begin(), x.shape.end() - rank(ns));
  for (size_t i = 3; i < a.in.size(); ++i)
    if (a.in[i].shape != lead || a.in[i].dtype != stat_dtype(x.dtype))
      fail(a.op, "statistics ", a.in[i].str(), " do not match the input ", x.str(),
           " (expected shape ", shape_str(lead), ", dtype ", dtype_name(stat_dtype(x.dtype)), ")");
  const Device device = common_device(a);
  std::vector<TensorMeta> out{{x.shape, x.dtype, device}, {ns, x.dtype, device}};
  if (!rms) out.push_back({ns, x.dtype, device});
  return out;
}

// Input i in x's dtype, contiguous (undefined when absent).
Tensor param(const ComputeArgs& c, size_t i, DType dtype) {
  return i < c.in.size() && c.in[i].defined() ? contiguous_local(converted(c.in[i], dtype))
                                              : Tensor();
}

// The norms' gradients written in differentiable ops, for backward with create_graph (double
// backward): the statistics are recomputed from x so that their dependence on x is recorded.
//   xhat = (x - mean(x)) rstd, rstd = 1 / sqrt(var(x) + eps)  (rms: xhat = x rstd, rstd from
//   mean(x^2)); gxhat = g w;  gx = rstd (gxhat - mean(gxhat) - xhat mean(gxhat xhat)) (rms: no
//   mean(gxhat) term);  gw = sum over the leading axes of g xhat;  gb = that of g.
std::vector<Tensor> norm_grad_in_ops(bool rms, const BackwardArgs& b) {
  const Tensor &g = b.grads[0], &x = b.in[0], &w = b.in[1];
  const int64_t n = static_cast<int64_t>(normalized_shape(b.attrs).size());
  const int64_t nd = x.dim();
  Axes norm_axes, lead_axes;
  for (int64_t a = 0; a < nd; ++a) (a < nd - n ? lead_axes : norm_axes).push_back(a);
  const Tensor eps = k(b.attrs.get<double>("eps"));
  const Tensor centred = rms ? x : sub(x, mean(x, norm_axes, true));
  const Tensor rstd = rsqrt(add(mean(square(centred), norm_axes, true), eps));
  const Tensor xhat = mul(centred, rstd);
  const Tensor gxhat = w.defined() ? mul(g, w) : g;
  Tensor inner = sub(gxhat, mul(xhat, mean(mul(gxhat, xhat), norm_axes, true)));
  if (!rms) inner = sub(inner, mean(gxhat, norm_axes, true));
  std::vector<Tensor> result{
      b.needs[0] ? mul(rstd, inner) : Tensor(),
      b.needs[1] ? to_dtype(sum(mul(g, xhat), lead_axes), b.in_meta[1].dtype) : Tensor()};
  if (!rms)
    result.push_back(b.needs[2] ? to_dtype(sum(g, lead_axes), b.in_meta[2].dtype) : Tensor());
  return result;
}

// Axes of input 0 before the normalized ones (typed attribute normalized_shape).
int64_t norm_lead(const SbpQuery& q) {
  return rank_of(q.in[0]) - rank_of(normalized_shape(*q.typed));
}

// layer_norm / rms_norm (x, weight[, bias]) -> (y[, mean], rstd): x and every output split on a
// leading axis.
Sigs norm_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < norm_lead(q); ++d) {
    SbpSignature sig{std::vector<Sbp>(q.in.size(), kB),
                     std::vector<Sbp>(q.out.size(), Sbp::split(d))};
    sig.in[0] = Sbp::split(d);
    sigs.push_back(std::move(sig));
  }
  return sigs;
}

// layer_norm_backward / rms_norm_backward (grad, x, weight[, mean], rstd) -> (gx, gweight[,
// gbias]): the rows split with the grad, the parameter gradients summed over rows are P(sum);
// all of it is linear in grad, so a P(sum) grad gives P(sum) everywhere.
Sigs norm_grad_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < norm_lead(q); ++d) {
    SbpSignature sig{std::vector<Sbp>(q.in.size(), Sbp::split(d)),
                     std::vector<Sbp>(q.out.size(), kPSum)};
    sig.in[2] = kB;
    sig.out[0] = Sbp::split(d);
    sigs.push_back(std::move(sig));
  }
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

const SbpRule kNorm{"norm", norm_sbp};
const SbpRule kNormGrad{"norm_grad", norm_grad_sbp};

OpDef norm_def(const char* name, bool rms) {
  OpDef def{.name = name, .num_inputs = rms ? 2 : 3, .cost = elementwise_cost, .sbp = &kNorm};
  def.optional_inputs = rms ? 1u << 1 : (1u << 1) | (1u << 2);  // weight, bias
  def.attrs = {{"normalized_shape", AttrType::kInts}, {"eps", AttrType::kFloat}};
  def.autocast = Autocast::kFloat32;
  def.infer = [rms](const InferArgs& a) { return infer_norm(rms, a); };
  def.compute = [name, rms](const ComputeArgs& c) {
    require_output_shapes(op_def(name), c);
    const Tensor& x = c.in[0];
    const Tensor mean = rms ? Tensor() : c.out[1];
    norm_kernel().get(x.device().type)(contiguous(x), param(c, 1, x.dtype()),
                                       param(c, 2, x.dtype()), c.attrs.get<double>("eps"), rms,
                                       c.out[0], mean, c.out.back());
  };
  def.saves = kSaveInputs | kSaveOutputs;
  if (rms) {
    def.api = {
        {"rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? "
         "eps=None) -> Tensor",
         call_front<rms_norm>(), kInternal}};
  } else {
    def.api = {
        {"layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? "
         "bias=None, float eps=1e-05) -> Tensor",
         call_front<layer_norm>(), kInternal}};
  }
  const std::string backward = std::string(name) + "_backward";
  def.backward = [rms, backward](const BackwardArgs& b) -> std::vector<Tensor> {
    // With create_graph the gradient must be differentiable itself; the fused op is not.
    if (autograd::grad_enabled()) return norm_grad_in_ops(rms, b);
    std::vector<Tensor> in{b.grads[0], b.in[0], b.in[1]};
    if (!rms) in.push_back(b.out[1]);
    in.push_back(b.out.back());
    std::vector<Tensor> g =
        dispatch(op_def(backward), in, {{"normalized_shape", normalized_shape(b.attrs)}});
    std::vector<Tensor> result{b.needs[0] ? g[0] : Tensor(),
                               b.needs[1] ? to_dtype(g[1], b.in_meta[1].dtype) : Tensor()};
    if (!rms) result.push_back(b.needs[2] ? to_dtype(g[2], b.in_meta[2].dtype) : Tensor());
    return result;
  };
  return def;
}

// The fused gradient, for backward without create_graph (with it, norm_grad_in_ops runs).
OpDef norm_backward_def(const char* name, bool rms) {
  OpDef def{.name = name,
            .num_inputs = rms ? 4 : 5,
            .optional_inputs = 1u << 2,  // weight
            .differentiable = false,
            .cost = elementwise_cost,
            .sbp = &kNormGrad};
  def.attrs = {{"normalized_shape", AttrType::kInts}};
  def.infer = [rms](const InferArgs& a) { return infer_norm_backward(rms, a); };
  def.compute = [name, rms](const ComputeArgs& c) {
    require_output_shapes(op_def(name), c);
    const Tensor& x = c.in[1];
    const Tensor mean = rms ? Tensor() : contiguous(c.in[3]);
    norm_backward_kernel().get(x.device().type)(
        param(c, 0, x.dtype()), contiguous(x), param(c, 2, x.dtype()), mean,
        contiguous(c.in.back()), rms, c.out[0], c.out[1], rms ? Tensor() : c.out[2]);
  };
  return def;
}

// --- dropout ---

void check_probability(const char* op, double p) {
  if (!(p >= 0 && p <= 1)) fail(op, "probability has to be between 0 and 1, but got ", p);
}

// What the kept elements are scaled by (nothing is kept when p is 1).
double keep_scale(double p) {
  return p < 1 ? 1.0 / (1.0 - p) : 0.0;
}

// x -> (y, mask). The mask is drawn in y's dtype from counters offset + the logical row-major
// index (a shard draws its block: with_block).
std::vector<TensorMeta> infer_dropout(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  check_probability(a.op, a.attrs.get<double>("p"));
  const DType dt = is_floating(x.dtype) ? x.dtype : DType::kFloat32;
  return {{x.shape, dt, x.device}, {x.shape, DType::kBool, x.device}};
}

void compute_dropout(const ComputeArgs& c) {
  require_output_shapes(op_def("dropout"), c);
  const Tensor &y = c.out[0], &mask = c.out[1];
  const DeviceType dev = y.device().type;
  const double p = c.attrs.get<double>("p");
  Tensor u = Tensor::empty(y.shape(), y.dtype(), y.device());
  random_kernel().get(dev)(u, 0, 0.0, 1.0, static_cast<uint64_t>(c.attrs.get<int64_t>("seed")),
                           static_cast<uint64_t>(c.attrs.get<int64_t>("offset")),
                           block_of(c.attrs));
  binary_kernel().get(dev)(BinaryOp::kGe, u, full({}, p, y.dtype()), mask);
  // Scale after masking so the factor is applied in y's dtype (a float32 mask would round it).
  Tensor kept = Tensor::empty(y.shape(), y.dtype(), y.device());
  binary_kernel().get(dev)(BinaryOp::kMul, converted(c.in[0], y.dtype()),
                           converted(mask, y.dtype()), kept);
  binary_kernel().get(dev)(BinaryOp::kMul, kept, full({}, keep_scale(p), y.dtype()), y);
}

// dropout (x) -> (y, mask): the values do not depend on the layout (counters by logical index),
// so splits map to both outputs; a P(sum) x gives a P(sum) y, scaled by the whole mask (B).
Sigs dropout_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    sigs.push_back({{Sbp::split(d)}, {Sbp::split(d), Sbp::split(d)}});
  sigs.push_back({{kPSum}, {kPSum, kB}});
  return sigs;
}
const SbpRule kDropout{"dropout", dropout_sbp};

OFL_REGISTER_OPS({
    softmax_def("softmax", false),
    softmax_def("log_softmax", true),
    softmax_backward_def("softmax_backward", false),
    softmax_backward_def("log_softmax_backward", true),
    norm_def("layer_norm", false),
    norm_def("rms_norm", true),
    norm_backward_def("layer_norm_backward", false),
    norm_backward_def("rms_norm_backward", true),
    {.name = "dropout",
     .num_inputs = 1,
     .cost = elementwise_cost,
     .sbp = &kDropout,
     .attrs = {{"p", AttrType::kFloat}, {"seed", AttrType::kInt}, {"offset", AttrType::kInt}},
     .infer = infer_dropout,
     .compute = compute_dropout,
     .backward = [](const BackwardArgs& b) -> std::vector<Tensor> {
       return {mul(mul(b.grads[0], b.out[1]), k(keep_scale(b.attrs.get<double>("p"))))};
     },
     .saves = kSaveOutputs,
     .shard_attrs = with_block,
     .api = {{"dropout(Tensor input, float p=0.5, bool training=True) -> Tensor",
              [](const CallArgs& a) { return dropout(a.tensor(0), a.number(1), a.flag(2)); },
              kInternal}}},
});

}  // namespace

namespace {

// F.group_norm: the channels (dimension 1) in `groups` groups, each normalized over its channels
// and positions (layer_norm's kernel on (N, groups, C / groups * positions)), then weight and
// bias per channel.
Tensor group_norm(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const int64_t groups = a.integer(1);
  const Shape shape = meta_of(x).shape;
  if (shape.size() < 2) fail("group_norm", "expects (N, C, ...) input, got ", shape_str(shape));
  if (groups <= 0 || shape[1] % groups != 0)
    fail("group_norm", "num_groups ", groups, " does not divide the ", shape[1], " channels of ",
         shape_str(shape));
  const Tensor grouped = reshape(x, {shape[0], groups, -1});
  const int64_t per_group = meta_of(grouped).shape[2];
  Tensor out = reshape(layer_norm(grouped, {per_group}, {}, {}, a.number(4)), shape);
  Shape channel(shape.size(), 1);  // (1, C, 1, ...)
  channel[1] = shape[1];
  for (size_t i : {size_t(2), size_t(3)}) {
    const Tensor p = a.optional_tensor(i);
    if (!p.defined()) continue;
    if (meta_of(p).shape != Shape{shape[1]})
      fail("group_norm", i == 2 ? "weight" : "bias", " is ", shape_str(meta_of(p).shape),
           " where the input has ", shape[1], " channels");
    out = i == 2 ? mul(out, reshape(p, channel)) : add(out, reshape(p, channel));
  }
  return out;
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "group_norm",
     .num_inputs = 3,
     .api = {{"group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
              "float eps=1e-05) -> Tensor",
              group_norm, kInternal}},
     .doc = "Normalization over groups of channels (nn.GroupNorm)"},
});

Tensor softmax(const Tensor& x, int64_t axis) {
  static const OpDef& def = op_def("softmax");
  return dispatch1(def, {x}, {{"axis", axis}});
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  static const OpDef& def = op_def("log_softmax");
  return dispatch1(def, {x}, {{"axis", axis}});
}

Tensor layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b, double eps) {
  static const OpDef& def = op_def("layer_norm");
  return dispatch(def, {x, w, b}, {{"normalized_shape", ns}, {"eps", eps}})[0];
}

Tensor rms_norm(const Tensor& x, const Shape& ns, const Tensor& w, std::optional<double> eps) {
  static const OpDef& def = op_def("rms_norm");
  double e = eps.value_or(x.dtype() == DType::kFloat64 ? std::numeric_limits<double>::epsilon()
                                                       : std::numeric_limits<float>::epsilon());
  return dispatch(def, {x, w}, {{"normalized_shape", ns}, {"eps", e}})[0];
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  check_probability("dropout", p);
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, zeros_like(x));
  static const OpDef& def = op_def("dropout");
  const Shape shape = meta_of(x).shape;
  uint64_t seed = 0, offset = 0;
  if (!x.device().is_meta()) {  // a meta tensor draws nothing
    Generator& g = gen ? *gen : default_generator();
    seed = g.seed();
    offset = g.advance(static_cast<uint64_t>(numel_of(shape)));
  }
  return dispatch(def, {x},
                  {{"p", p},
                   {"seed", static_cast<int64_t>(seed)},
                   {"offset", static_cast<int64_t>(offset)}})[0];
}

}  // namespace ofl::internal
