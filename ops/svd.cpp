// The singular value decomposition (linalg.svd) and what is built on it: svdvals, the
// pseudo-inverse (linalg.pinv, pinverse) and torch.svd's (U, S, V). Only linalg_svd runs a kernel
// (LAPACK's gesdd on the CPU, cuSOLVER's gesvd on CUDA); the others are compositions of ops, so
// their gradients come through svd's backward.
#include <algorithm>
#include <limits>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/linalg.h"
#include "ops/op_helpers.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

// Every check of an op that takes a matrix or a batch of them, naming op.
void check_matrices(const char* op, const TensorMeta& a) {
  if (a.shape.size() < 2)
    fail(op,
         "expects a matrix or a batch of matrices (at least 2 dimensions), got a tensor of "
         "shape ",
         shape_str(a.shape));
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64)
    fail<TypeError>(op, "expects a float32 or float64 tensor, got ", dtype_name(a.dtype),
                    " of shape ", shape_str(a.shape));
}

struct Dims {
  Shape batch;
  int64_t m, n, k;
};

Dims dims_of(const Shape& s) {
  const int64_t m = s[s.size() - 2], n = s.back();
  return {Shape(s.begin(), s.end() - 2), m, n, std::min(m, n)};
}

Shape with(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

std::vector<TensorMeta> infer_svd(const InferArgs& args) {
  const TensorMeta& a = args.in[0];
  check_matrices(args.op, a);
  const Dims d = dims_of(a.shape);
  const bool full = args.attrs.get<bool>("full_matrices");
  return {{with(d.batch, {d.m, full ? d.m : d.k}), a.dtype, a.device},
          {with(d.batch, {d.k}), a.dtype, a.device},
          {with(d.batch, {full ? d.n : d.k, d.n}), a.dtype, a.device}};
}

// Sets each matrix of a contiguous (batch, r, r) tensor to the identity.
void fill_identity(const Tensor& t, int64_t batch, int64_t r) {
  fill_into(t, 0);
  fill_into(Tensor::view_of(t.storage(), {batch, r}, {r * r, r + 1}, t.offset(), t.dtype()), 1);
}

void compute_svd(const ComputeArgs& c) {
  require_output_shapes(op_def("linalg_svd"), c);
  const Dims d = dims_of(c.in[0].shape());
  const bool full = c.attrs.get<bool>("full_matrices");
  const int64_t batch = numel_of(d.batch), ucols = full ? d.m : d.k, vrows = full ? d.n : d.k;
  const Tensor &u = c.out[0], &s = c.out[1], &vh = c.out[2];
  if (batch == 0) return;
  if (d.k == 0) {  // no singular values: the full bases are identities, the reduced ones empty
    if (full) {
      fill_identity(u, batch, d.m);
      fill_identity(vh, batch, d.n);
    }
    return;
  }
  svd_kernel().get(u.device().type)(reshape_view(contiguous_local(c.in[0]), {batch, d.m, d.n}),
                                    full, reshape_view(u, {batch, d.m, ucols}),
                                    reshape_view(s, {batch, d.k}),
                                    reshape_view(vh, {batch, vrows, d.n}));
}

Tensor mT(const Tensor& x) {
  return transpose(x, -2, -1);
}

Tensor scalar(double v) {
  return wrap_scalar(v, DType::kFloat64);
}

// x / y where y is not 0, and x where it is (callers divide only by what is 0 where x is 0, or
// where the gradient is undefined).
Tensor div_nonzero(const Tensor& x, const Tensor& y) {
  return div(x, masked_fill(y, eq(y, scalar(0)), scalar(1)));
}

// PyTorch's svd_backward (real case, distinct singular values; full bases narrowed to their
// first k vectors, as PyTorch's derivatives.yaml does). Outputs without a gradient arrive as
// zeros, which give the terms PyTorch leaves out: a quotient whose denominator s_j^2 - s_i^2 is
// 0 is taken as 0 (its numerator is 0 there unless the singular values repeat), so a loss on S
// alone of a rank-deficient matrix stays finite, as PyTorch's.
std::vector<Tensor> svd_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const Dims d = dims_of(b.in_meta[0].shape);
  const int64_t nd = static_cast<int64_t>(b.in_meta[0].shape.size());
  Tensor U = b.out[0], S = b.out[1], Vh = b.out[2];
  Tensor gU = b.grads[0], gS = b.grads[1], gVh = b.grads[2];
  if (d.m > d.k && meta_of(U).shape.back() > d.k) {
    U = narrow(U, nd - 1, 0, d.k);
    gU = narrow(gU, nd - 1, 0, d.k);
  }
  if (d.n > d.k && meta_of(Vh).shape[nd - 2] > d.k) {
    Vh = narrow(Vh, nd - 2, 0, d.k);
    gVh = narrow(gVh, nd - 2, 0, d.k);
  }
  const Tensor Ut = mT(U), S_row = unsqueeze(S, nd - 2), S_col = unsqueeze(S, nd - 1);
  const Tensor UtgU = matmul(Ut, gU), VhgV = matmul(Vh, mT(gVh));
  const Tensor num =
      add(mul(sub(UtgU, mT(UtgU)), S_row), mul(S_col, sub(VhgV, mT(VhgV))));  // skew parts
  const Tensor S2 = mul(S, S);
  const Tensor E = sub(unsqueeze(S2, nd - 2), unsqueeze(S2, nd - 1));  // s_j^2 - s_i^2
  const Tensor F = masked_fill(div_nonzero(num, E), eq(E, scalar(0)), scalar(0));
  // (F + diag(gS)) @ Vh and U @ (F + diag(gS)), without forming diag(gS).
  if (d.m > d.n) {  // gA = [U (F + diag gS) + (I - U U^T) gU S^-1] Vh
    const Tensor gU_Sinv = div_nonzero(gU, S_row);
    Tensor inner = add(matmul(U, F), mul(U, unsqueeze(gS, nd - 2)));
    inner = add(inner, sub(gU_Sinv, matmul(U, matmul(Ut, gU_Sinv))));
    return {matmul(inner, Vh)};
  }
  Tensor inner = add(matmul(F, Vh), mul(unsqueeze(gS, nd - 1), Vh));
  if (d.m < d.n) {  // gA = U [(F + diag gS) Vh + S^-1 gVh (I - V Vh)]
    const Tensor Sinv_gVh = div_nonzero(gVh, S_col);
    inner = add(inner, sub(Sinv_gVh, matmul(matmul(Sinv_gVh, mT(Vh)), Vh)));
  }
  return {matmul(U, inner)};
}

// About 4 m n k + 22 k^3 per matrix (Golub and Van Loan's count for the R-SVD), reading A once
// and writing the factors.
OpCost svd_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  if (inputs.empty() || inputs[0].size() < 2 || output.empty()) return {};
  const Dims d = dims_of(inputs.at(0));
  const double batch = static_cast<double>(numel_of(d.batch)), k = static_cast<double>(d.k);
  OpCost cost;
  cost.flops = batch * (4.0 * d.m * d.n * k + 22.0 * k * k * k);
  cost.bytes = static_cast<double>(itemsize(dtype)) * batch *
               (d.m * d.n + output.back() * d.m + k + d.n * d.n);
  return cost;
}

// Each matrix is decomposed on its own: batch dimensions may be split (every output alike); the
// matrix dimensions must be whole on every rank (B), and no partial passes.
Sigs svd_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t j = 0; j + 2 < rank_of(q.in[0]); ++j)
    sigs.push_back({{Sbp::split(j)}, {Sbp::split(j), Sbp::split(j), Sbp::split(j)}});
  return sigs;
}
const SbpRule kSvd{"svd", svd_sbp};

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& a, bool full_matrices) {
  static const OpDef& def = op_def("linalg_svd");
  std::vector<Tensor> out = dispatch(def, {a}, {{"full_matrices", full_matrices}});
  return {out[0], out[1], out[2]};
}

Tensor linalg_svdvals(const Tensor& a) {
  check_matrices("linalg_svdvals", meta_of(a));
  return std::get<1>(linalg_svd(a, false));
}

Tensor linalg_pinv(const Tensor& a, std::optional<double> atol, std::optional<double> rtol,
                   bool hermitian) {
  const TensorMeta meta = meta_of(a);
  check_matrices("linalg_pinv", meta);
  const Dims d = dims_of(meta.shape);
  const int64_t nd = static_cast<int64_t>(meta.shape.size());
  if (hermitian && d.m != d.n)
    fail("linalg_pinv", "hermitian=True expects square matrices, got shape ",
         shape_str(meta.shape));
  // PyTorch's hermitian path reads the lower triangle only: the same matrix here.
  const Tensor x = hermitian ? add(tril(a), mT(tril(a, -1))) : a;
  const auto [U, S, Vh] = linalg_svd(x, false);
  Tensor S_inv = S;
  if (d.k > 0) {
    const double eps = meta.dtype == DType::kFloat64 ? std::numeric_limits<double>::epsilon()
                                                     : std::numeric_limits<float>::epsilon();
    // PyTorch's defaults: rtol = max(m, n) eps, or 0 when a positive atol is given.
    const double r = rtol.value_or(atol.value_or(0) > 0 ? 0.0 : std::max(d.m, d.n) * eps);
    const Tensor s_max = detach(narrow(S, nd - 2, 0, 1));  // S descends
    const Tensor tol = maximum(mul(s_max, scalar(r)), scalar(atol.value_or(0)));
    const Tensor dropped = logical_not(gt(S, tol));
    // 1 / S where kept: the reciprocal of a dropped value (maybe 0) is never formed, so no
    // infinity reaches the gradient.
    S_inv = masked_fill(reciprocal(masked_fill(S, dropped, scalar(1))), dropped, scalar(0));
  }
  return matmul(mul(mT(Vh), unsqueeze(S_inv, nd - 2)), mT(U));
}

namespace {

Tensor pinv_call(const CallArgs& a) {
  return linalg_pinv(a.tensor(0), a.optional_number(1), a.optional_number(2), a.flag(3));
}

// torch.svd: reduced factors unless some=False, and V rather than Vh; with compute_uv=False, U
// and V are zeros of the full shapes.
CallResult torch_svd(const CallArgs& a) {
  check_matrices("svd", meta_of(a.tensor(0)));
  const bool some = a.flag(1), compute_uv = a.flag(2);
  auto [U, S, Vh] = linalg_svd(a.tensor(0), compute_uv ? !some : true);
  if (!compute_uv) return std::vector<Tensor>{zeros_like(U), S, zeros_like(mT(Vh))};
  return std::vector<Tensor>{U, S, mT(Vh)};
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "linalg_svd",
     .num_inputs = 1,
     .cost = svd_cost,
     .sbp = &kSvd,
     .attrs = {{"full_matrices", AttrType::kBool}},
     .infer = infer_svd,
     .compute = compute_svd,
     .backward = svd_backward,
     .saves = kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, Tensor Vh)",
              [](const CallArgs& a) {
                auto [U, S, Vh] = linalg_svd(a.tensor(0), a.flag(1));
                return std::vector<Tensor>{U, S, Vh};
              },
              kFunction}},
     .doc = "The singular value decomposition A = U diag(S) Vh, S descending (linalg.svd)"},
    {.name = "linalg_svdvals",
     .num_inputs = 1,
     .cost = svd_cost,
     .api = {{"linalg_svdvals(Tensor A) -> Tensor", call_front<linalg_svdvals>(), kFunction}},
     .doc = "The singular values of a matrix or a batch of them, descending (linalg.svdvals)"},
    {.name = "linalg_pinv",
     .num_inputs = 1,
     .cost = svd_cost,
     .api = {{"linalg_pinv(Tensor input, *, float? atol=None, float? rtol=None, bool "
              "hermitian=False) -> Tensor",
              pinv_call, kFunction},
             // The older spelling: rcond is rtol.
             {"linalg_pinv(Tensor input, float rcond, bool hermitian=False) -> Tensor",
              [](const CallArgs& a) {
                return linalg_pinv(a.tensor(0), std::nullopt, a.number(1), a.flag(2));
              },
              kFunction},
             {"pinverse(Tensor input, float rcond=1e-15) -> Tensor",
              [](const CallArgs& a) {
                return linalg_pinv(a.tensor(0), std::nullopt, a.number(1), false);
              }}},
     .doc = "The pseudo-inverse through the SVD, singular values at most max(atol, rtol * "
            "S_max) dropped (linalg.pinv)"},
    {.name = "svd",
     .num_inputs = 1,
     .cost = svd_cost,
     .api = {{"svd(Tensor input, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, "
              "Tensor V)",
              torch_svd}},
     .doc = "torch.svd: A = U diag(S) V^T, reduced unless some=False (linalg.svd gives Vh)"},
});

}  // namespace ofl::internal
