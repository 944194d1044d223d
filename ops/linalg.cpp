// matmul and linear. Every case reduces to one batched product on the BLAS.
#include "ops/linalg.h"

#include <algorithm>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - std::min<size_t>(s.size(), 2));
}

// numpy's matmul shapes: 1-d operands are promoted to matrices and dropped again, batch
// dimensions broadcast, and both operands share one dtype (PyTorch casts nothing here).
std::vector<TensorMeta> infer_matmul(const InferArgs& args) {
  const TensorMeta &a = args.in[0], &b = args.in[1];
  Device device = common_device(args);
  const Shape &sa = a.shape, &sb = b.shape;
  if (sa.empty() || sb.empty())
    fail("matmul", "both operands need at least one dimension, got ", shape_str(sa), " and ",
         shape_str(sb));
  if (a.dtype != b.dtype)
    fail<TypeError>("matmul", "expected both operands to have the same dtype, got ", a.str(),
                    " and ", b.str());
  if (a.dtype == DType::kBool) fail<TypeError>("matmul", "is not supported for bool tensors");
  const int64_t k_b = sb.size() == 1 ? sb[0] : sb[sb.size() - 2];
  if (sa.back() != k_b)
    fail("matmul", "a is ", shape_str(sa), ", b is ", shape_str(sb), ": inner dimensions differ (",
         sa.back(), " vs ", k_b, ")");
  const Shape ba = batch_of(sa), bb = batch_of(sb);
  for (size_t i = 1; i <= std::min(ba.size(), bb.size()); ++i) {
    const int64_t da = ba[ba.size() - i], db = bb[bb.size() - i];
    if (da != db && da != 1 && db != 1)
      fail("matmul", "a is ", shape_str(sa), ", b is ", shape_str(sb), ": batch dimensions ",
           shape_str(ba), " and ", shape_str(bb), " cannot be broadcast");
  }
  Shape out = broadcast_shapes(ba, bb, "matmul");
  if (sa.size() >= 2) out.push_back(sa[sa.size() - 2]);
  if (sb.size() >= 2) out.push_back(sb.back());
  return single_output(std::move(out), a.dtype, device);
}

// The operands as matrices: a (k) -> (1, k), b (k) -> (k, 1).
Tensor as_matrix_a(const Tensor& a) {
  return a.dim() == 1 ? unsqueeze(a, 0) : a;
}
Tensor as_matrix_b(const Tensor& b) {
  return b.dim() == 1 ? unsqueeze(b, 1) : b;
}

}  // namespace

std::atomic<bool>& matmul_allow_tf32() {
  static std::atomic<bool> allow{false};
  return allow;
}

namespace {

void compute_matmul(const ComputeArgs& c) {
  const Tensor a = as_matrix_a(c.in[0]), b = as_matrix_b(c.in[1]);
  const int64_t n = a.shape()[a.dim() - 2], k = a.shape().back(), m = b.shape().back();
  Shape batch = broadcast_shapes(batch_of(a.shape()), batch_of(b.shape()), "matmul");
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {n, m});
  const Tensor out = reshape(c.out[0], out_shape);  // a view: the output is contiguous
  auto kernel = matmul_kernel().get(out.device().type);
  if (b.dim() == 2 && a.is_contiguous()) {
    // Fold a's batch dims into its rows: one large GEMM instead of many small ones.
    const int64_t rows = numel_of(batch) * n;
    kernel(reshape(a, {rows, k}), b, reshape(out, {rows, m}));
    return;
  }
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  kernel(expand(a, ea), expand(b, eb), out);  // expanded batch dims are read in place
}

// --- matmul_sum: sum over the batch of a_i @ b_i (a linear's weight gradient) ---

std::vector<TensorMeta> infer_matmul_sum(const InferArgs& args) {
  const TensorMeta &a = args.in[0], &b = args.in[1];
  const Shape &sa = a.shape, &sb = b.shape;
  if (sa.size() < 3 || sb.size() != sa.size() || batch_of(sa) != batch_of(sb))
    fail("matmul_sum",
         "expects a (..., n, k) and b (..., k, m) with the same batch dimensions, got ",
         shape_str(sa), " and ", shape_str(sb));
  if (a.dtype != b.dtype)
    fail<TypeError>("matmul_sum", "expected both operands to have the same dtype, got ", a.str(),
                    " and ", b.str());
  if (sa.back() != sb[sb.size() - 2])
    fail("matmul_sum", "a is ", shape_str(sa), ", b is ", shape_str(sb),
         ": inner dimensions differ (", sa.back(), " vs ", sb[sb.size() - 2], ")");
  return single_output({sa[sa.size() - 2], sb.back()}, a.dtype, common_device(args));
}

// One GEMM: a's batches side by side, (n, batch * k), times b's stacked, (batch * k, m).
void compute_matmul_sum(const ComputeArgs& c) {
  const Tensor &a = c.in[0], &b = c.in[1];
  const int64_t nd = a.dim(), n = a.shape()[nd - 2], k = a.shape()[nd - 1], m = b.shape().back();
  const int64_t rows = numel_of(batch_of(a.shape())) * k;
  if (rows == 0) {
    fill_into(c.out[0], 0);
    return;
  }
  std::vector<int64_t> order{nd - 2};
  for (int64_t d = 0; d < nd - 2; ++d) order.push_back(d);
  order.push_back(nd - 1);
  matmul_kernel().get(c.out[0].device().type)(reshape(permute(a, order), {n, rows}),
                                              reshape(b, {rows, m}), c.out[0]);
}

// out = sum_i a_i @ b_i: ga_i = g @ b_i^T and gb_i = a_i^T @ g, g broadcast over the batch.
std::vector<Tensor> matmul_sum_backward(const BackwardArgs& args) {
  const Tensor &a = args.in[0], &b = args.in[1], &g = args.grads[0];
  return {args.needs[0] ? matmul(g, transpose(b, -2, -1)) : Tensor(),
          args.needs[1] ? matmul(transpose(a, -2, -1), g) : Tensor()};
}

OpCost matmul_sum_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  OpCost cost = elementwise_cost(inputs, output, dtype);
  cost.flops = 2.0 * static_cast<double>(numel_of(inputs.at(0)) * output.back());
  // One GEMM whose K runs over the batch too (a linear's weight gradient: x^T g).
  if (output.size() >= 2 && output.end()[-2] > 0)
    cost.gemm = {1, static_cast<double>(output.end()[-2]), static_cast<double>(output.back()),
                 static_cast<double>(numel_of(inputs.at(0)) / output.end()[-2])};
  return cost;
}

// ga = g @ b^T and gb = a^T @ g on the matrix forms, summed over broadcast batch dims. A matrix
// operand of a batched product (a linear's weight) gets its gradient from matmul_sum: one GEMM
// over the whole batch, without the batch of products summing would need.
std::vector<Tensor> matmul_backward(const BackwardArgs& args) {
  const TensorMeta &ma = args.in_meta[0], &mb = args.in_meta[1];
  const Tensor a = as_matrix_a(args.in[0]), b = as_matrix_b(args.in[1]);
  Tensor g = args.grads[0];
  if (ma.shape.size() == 1) g = unsqueeze(g, g.dim() - (mb.shape.size() == 1 ? 0 : 1));
  if (mb.shape.size() == 1) g = unsqueeze(g, g.dim());
  Tensor ga, gb;
  if (args.needs[0]) {
    ga = matmul(g, transpose(b, -2, -1));
    if (ma.shape.size() == 1) ga = squeeze(ga, std::vector<int64_t>{ga.dim() - 2});
    ga = sum_to(ga, ma.shape);
  }
  if (args.needs[1] && mb.shape.size() == 2 && ma.shape.size() >= 3 && g.dim() == a.dim()) {
    gb = matmul_sum(transpose(a, -2, -1), g);
  } else if (args.needs[1]) {
    gb = matmul(transpose(a, -2, -1), g);
    if (mb.shape.size() == 1) gb = squeeze(gb, std::vector<int64_t>{gb.dim() - 1});
    gb = sum_to(gb, mb.shape);
  }
  return {ga, gb};
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  static const OpDef& def = op_def("matmul");
  return dispatch1(def, {a, b});
}

Tensor matmul_sum(const Tensor& a, const Tensor& b) {
  static const OpDef& def = op_def("matmul_sum");
  return dispatch1(def, {a, b});
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const Shape xs = meta_of(x).shape, ws = meta_of(w).shape;
  if (ws.size() != 2) fail("linear", "weight must be 2-d, got ", shape_str(ws));
  if (xs.empty() || xs.back() != ws[1])
    fail("linear", "input ", shape_str(xs), " and weight ", shape_str(ws),
         ": the input's last dimension must equal the weight's in_features (", ws[1], ")");
  Tensor y = matmul(x, transpose(w, 0, 1));
  if (!bias.defined()) return y;
  const Shape bs = meta_of(bias).shape;
  if (bs.size() != 1 || bs[0] != ws[0])
    fail("linear", "bias of shape ", shape_str(bs), " does not match out_features ", ws[0]);
  // Linear is in the product's dtype, as PyTorch's: under autocast the low-precision one, the
  // bias joining it there rather than promoting the sum back to float32.
  const DType product = meta_of(y).dtype;
  if (product != meta_of(bias).dtype && is_floating(product))
    return add(y, to_dtype(bias, product));
  return add(y, bias);
}

namespace {

// matmul with numpy broadcasting and 1-d operands: batch splits, S(n), S(m), S(k) -> P(sum),
// and P(sum) through either operand.
Sigs matmul_sbp(const SbpQuery& q) {
  const Shape &a = q.in[0], &b = q.in[1], &out = q.out[0];
  const int64_t na = rank_of(a), nb = rank_of(b), no = rank_of(out);
  const int64_t batch = no - (na >= 2 ? 1 : 0) - (nb >= 2 ? 1 : 0);
  Sigs sigs;
  for (int64_t j = 0; j < batch; ++j) {  // batch axes, broadcast like elementwise
    SbpSignature sig{{kB, kB}, {Sbp::split(j)}};
    bool any_split = false;
    const Shape* ops[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      int64_t nbatch = rank_of(*ops[k]) - 2;
      int64_t dk = j - (batch - nbatch);
      if (nbatch > 0 && dk >= 0 && (*ops[k])[dk] == out[j]) {
        sig.in[k] = Sbp::split(dk);
        any_split = true;
      }
    }
    if (any_split) sigs.push_back(std::move(sig));
  }
  if (na >= 2) sigs.push_back({{Sbp::split(na - 2), kB}, {Sbp::split(batch)}});
  if (nb >= 2) sigs.push_back({{kB, Sbp::split(nb - 1)}, {Sbp::split(no - 1)}});
  sigs.push_back({{Sbp::split(na - 1), Sbp::split(nb >= 2 ? nb - 2 : 0)}, {kPSum}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

// matmul_sum: a (..., n, k), b (..., k, m) -> sum over the batch (n, m): a split batch or k gives
// partial sums; n and m split as in matmul.
Sigs matmul_sum_sbp(const SbpQuery& q) {
  const int64_t nd = rank_of(q.in[0]);
  Sigs sigs;
  for (int64_t j = 0; j < nd - 2; ++j) sigs.push_back({{Sbp::split(j), Sbp::split(j)}, {kPSum}});
  sigs.push_back({{Sbp::split(nd - 1), Sbp::split(nd - 2)}, {kPSum}});
  sigs.push_back({{Sbp::split(nd - 2), kB}, {Sbp::split(0)}});
  sigs.push_back({{kB, Sbp::split(nd - 1)}, {Sbp::split(1)}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

const SbpRule kMatmul{"matmul", matmul_sbp};
const SbpRule kMatmulSum{"matmul_sum", matmul_sum_sbp};

}  // namespace

namespace {

// beta * input + alpha * product, input broadcasting to the product's shape; with beta 0 the
// input is not read (NaN in it does not propagate), as in PyTorch.
Tensor scaled_sum(const char* op, const Tensor& input, const Tensor& product, double beta,
                  double alpha) {
  const Shape ps = meta_of(product).shape, is = meta_of(input).shape;
  if (broadcast_shapes(is, ps, op) != ps)
    fail(op, "input of shape ", shape_str(is), " does not broadcast to the product's ",
         shape_str(ps));
  if (beta == 0) return alpha == 1 ? product : mul(product, wrap_scalar(alpha, DType::kFloat64));
  const Tensor base = beta == 1 ? input : mul(input, wrap_scalar(beta, DType::kFloat64));
  return add(base, product, alpha);
}

void require_dims(const char* op, const char* name, const Tensor& t, size_t ndim) {
  const Shape s = meta_of(t).shape;
  if (s.size() != ndim) fail(op, name, " must be ", ndim, "-d, got shape ", shape_str(s));
}

Api scaled_product_api(const char* schema,
                       Tensor (*fn)(const Tensor&, const Tensor&, const Tensor&, double, double)) {
  return {schema, [fn](const CallArgs& a) {
            return fn(a.tensor(0), a.tensor(1), a.tensor(2), a.number(3), a.number(4));
          }};
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  require_dims("addmm", "mat1", a, 2);
  require_dims("addmm", "mat2", b, 2);
  return scaled_sum("addmm", input, matmul(a, b), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta, double alpha) {
  require_dims("baddbmm", "batch1", a, 3);
  require_dims("baddbmm", "batch2", b, 3);
  if (meta_of(a).shape[0] != meta_of(b).shape[0])
    fail("baddbmm", "batch1 ", shape_str(meta_of(a).shape), " and batch2 ",
         shape_str(meta_of(b).shape), " have different batch sizes");
  return scaled_sum("baddbmm", input, matmul(a, b), beta, alpha);
}

namespace {

// torch.mm / mv / bmm: matmul of operands of exactly these ranks (no broadcasting), named.
Tensor checked_matmul(const char* op, const CallArgs& a, int64_t rank_a, int64_t rank_b) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  if (x.dim() != rank_a || y.dim() != rank_b)
    fail(op, "expects ", rank_a, "-d and ", rank_b, "-d tensors, got ", shape_str(meta_of(x).shape),
         " and ", shape_str(meta_of(y).shape));
  if (rank_a == 3 && meta_of(x).shape[0] != meta_of(y).shape[0])
    fail(op, "batch sizes differ: ", shape_str(meta_of(x).shape), " and ",
         shape_str(meta_of(y).shape));
  return matmul(x, y);
}

void check_vector(const char* op, const Tensor& x, const char* name) {
  if (x.dim() != 1) fail(op, "expects 1-d tensors, got ", name, " ", shape_str(meta_of(x).shape));
}

Tensor outer(const CallArgs& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  check_vector("outer", x, "input");
  check_vector("outer", y, "vec2");
  return mul(unsqueeze(x, 1), unsqueeze(y, 0));
}

Tensor dot(const CallArgs& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  check_vector("dot", x, "input");
  check_vector("dot", y, "tensor");
  if (meta_of(x).shape != meta_of(y).shape)
    fail("dot", "the vectors differ in length: ", shape_str(meta_of(x).shape), " and ",
         shape_str(meta_of(y).shape));
  return sum(mul(x, y));
}

// Over the last dimensions: out[i..., j...] = sum_k input[i..., k] other[j..., k].
Tensor inner(const CallArgs& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  if (x.dim() == 0 || y.dim() == 0) return mul(x, y);
  const Shape xs = meta_of(x).shape, ys = meta_of(y).shape;
  if (xs.back() != ys.back())
    fail("inner", "the last dimensions differ: ", shape_str(xs), " and ", shape_str(ys));
  Shape out(xs.begin(), xs.end() - 1);
  out.insert(out.end(), ys.begin(), ys.end() - 1);
  const Tensor m =
      matmul(reshape(x, {-1, xs.back()}), transpose(reshape(y, {-1, ys.back()}), 0, 1));
  return reshape(m, out);
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "matmul",
     .num_inputs = 2,
     .cost = matmul_cost,
     .sbp = &kMatmul,
     .infer = infer_matmul,
     .compute = compute_matmul,
     .backward = matmul_backward,
     .saves = kSaveInputs,
     .autocast = Autocast::kLowPrecision,
     .api = {{"matmul(Tensor input, Tensor other) -> Tensor", call_front<matmul>()}}},
    {.name = "matmul_sum",
     .num_inputs = 2,
     .cost = matmul_sum_cost,
     .sbp = &kMatmulSum,
     .infer = infer_matmul_sum,
     .compute = compute_matmul_sum,
     .backward = matmul_sum_backward,
     .saves = kSaveInputs,
     .autocast = Autocast::kLowPrecision,
     .api = {{"matmul_sum(Tensor input, Tensor other) -> Tensor", call_front<matmul_sum>(),
              kInternal}},
     .doc = "sum(matmul(input, other)) over the leading batch dimensions, in one op"},
    {.name = "linear",
     .num_inputs = 3,
     .cost = matmul_cost,
     .api = {{"linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
              call_front<linear>(), kInternal}}},
    {.name = "outer",
     .num_inputs = 2,
     .api = {{"outer(Tensor input, Tensor vec2) -> Tensor", outer},
             {"ger(Tensor input, Tensor vec2) -> Tensor", outer}},
     .doc = "The outer product of two vectors: out[i, j] = input[i] * vec2[j]"},
    {.name = "mm",
     .num_inputs = 2,
     .api = {{"mm(Tensor input, Tensor mat2) -> Tensor",
              [](const CallArgs& a) { return checked_matmul("mm", a, 2, 2); }}},
     .doc = "The matrix product of two matrices (matmul without broadcasting)"},
    {.name = "mv",
     .num_inputs = 2,
     .api = {{"mv(Tensor input, Tensor vec) -> Tensor",
              [](const CallArgs& a) { return checked_matmul("mv", a, 2, 1); }}},
     .doc = "A matrix times a vector"},
    {.name = "bmm",
     .num_inputs = 2,
     .api = {{"bmm(Tensor input, Tensor mat2) -> Tensor",
              [](const CallArgs& a) { return checked_matmul("bmm", a, 3, 3); }}},
     .doc = "Batch by batch matrix products of two 3-d tensors"},
    {.name = "dot",
     .num_inputs = 2,
     .api = {{"dot(Tensor input, Tensor tensor) -> Tensor", dot},
             {"inner(Tensor input, Tensor other) -> Tensor", inner}},
     .doc = "The dot product of two vectors; inner: over the last dimensions of any two tensors"},
    {.name = "addmm",
     .num_inputs = 3,
     .cost = matmul_cost,
     .api = {scaled_product_api("addmm(Tensor input, Tensor mat1, Tensor mat2, *, float beta=1, "
                                "float alpha=1) -> Tensor",
                                &addmm)},
     .doc = "beta * input + alpha * (mat1 @ mat2)"},
    {.name = "baddbmm",
     .num_inputs = 3,
     .cost = matmul_cost,
     .api = {scaled_product_api("baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, float "
                                "beta=1, float alpha=1) -> Tensor",
                                &baddbmm)},
     .doc = "beta * input + alpha * (batch1 @ batch2), batch by batch"},
});

}  // namespace ofl::internal
