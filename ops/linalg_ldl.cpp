// The symmetric indefinite factorisation (linalg.ldl_factor, Bunch-Kaufman: LAPACK sytrf) and
// its solve (sytrs). cuSOLVER has no sytrs, so both run LAPACK on a host copy for every device;
// neither is differentiable (as in PyTorch).
#include <algorithm>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/linalg_lapack.h"
#include "ops/op_helpers.h"

namespace ofl::internal {

OFL_DEFINE_HOST_KERNEL(sytrf_kernel, SytrfKernel)
OFL_DEFINE_HOST_KERNEL(sytrs_kernel, SytrsKernel)

using namespace elementwise_sbp;

namespace {

Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - 2);
}

void check_square(const char* op, const char* name, const TensorMeta& a) {
  if (a.shape.size() < 2 || a.shape[a.shape.size() - 2] != a.shape.back())
    fail(op, name, " must be batches of square matrices, got shape ", shape_str(a.shape));
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64)
    fail<TypeError>(op, "expects ", name, " of dtype float32 or float64, got ",
                    dtype_name(a.dtype));
}

// A host copy of x's (b, r, c) matrices in column-major order (b, c, r). Data crosses between
// devices contiguous; the transposes run on the host.
Tensor host_colmajor(const Tensor& x, int64_t b, int64_t r, int64_t c) {
  Tensor rows = Tensor::empty({b, r, c}, x.dtype());
  copy_into(rows, reshape_view(contiguous_local(x), {b, r, c}));
  Tensor host = Tensor::empty({b, c, r}, x.dtype());
  copy_into(host, Tensor::view_of(rows.storage(), {b, c, r}, {r * c, 1, c}, 0, x.dtype()));
  return host;
}

// Writes a host column-major (b, c, r) into the contiguous out (..., r, c) on its device.
void store_colmajor(const Tensor& host, const Tensor& out) {
  const int64_t b = host.shape()[0], c = host.shape()[1], r = host.shape()[2];
  Tensor rows = Tensor::empty({b, r, c}, host.dtype());
  copy_into(rows, Tensor::view_of(host.storage(), {b, r, c}, {r * c, 1, r}, 0, host.dtype()));
  copy_into(reshape_view(out, {b, r, c}), rows);
}

std::vector<TensorMeta> infer_ldl_factor(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_square(a.op, "A", A);
  Shape piv = batch_of(A.shape);
  piv.push_back(A.shape.back());
  return {{A.shape, A.dtype, A.device},
          {piv, DType::kInt32, A.device},
          {batch_of(A.shape), DType::kInt32, A.device}};
}

void compute_ldl_factor(const ComputeArgs& c) {
  const Shape& s = c.in[0].shape();
  const int64_t n = s.back(), b = numel_of(batch_of(s));
  fill_into(c.out[2], 0);
  if (b == 0 || n == 0) return;
  const Tensor work = host_colmajor(c.in[0], b, n, n);
  Tensor piv = Tensor::empty({b, n}, DType::kInt32), info = Tensor::empty({b}, DType::kInt32);
  sytrf_kernel().get(DeviceType::kCPU)(work, piv, info);
  store_colmajor(work, c.out[0]);
  // sytrf leaves the upper triangle as it found it; PyTorch returns zeros there.
  triangular_kernel().get(c.out[0].device().type)(c.out[0], false, 0, c.out[0]);
  copy_into(reshape_view(c.out[1], {b, n}), piv);
  copy_into(reshape_view(c.out[2], {b}), info);
}

std::vector<TensorMeta> infer_ldl_solve(const InferArgs& a) {
  const TensorMeta &LD = a.in[0], &piv = a.in[1], &B = a.in[2];
  check_square(a.op, "LD", LD);
  const int64_t n = LD.shape.back();
  if (piv.dtype != DType::kInt32 ||
      batch_of(LD.shape) != Shape(piv.shape.begin(), piv.shape.end() - 1) || piv.shape.back() != n)
    fail(a.op, "expected int32 pivots of shape ", shape_str(batch_of(LD.shape)), " + (", n,
         ",), got ", dtype_name(piv.dtype), " of shape ", shape_str(piv.shape));
  if (B.shape.size() < 2 || batch_of(B.shape) != batch_of(LD.shape) ||
      B.shape[B.shape.size() - 2] != n)
    fail(a.op, "incompatible shapes of LD and B for the equation AX = B (", shape_str(LD.shape),
         " and ", shape_str(B.shape), ")");
  if (B.dtype != LD.dtype)
    fail(a.op, "expected LD and B to have the same dtype, got ", dtype_name(LD.dtype), " and ",
         dtype_name(B.dtype));
  return single_output(B.shape, B.dtype, B.device);
}

void compute_ldl_solve(const ComputeArgs& c) {
  const Shape& s = c.in[2].shape();
  const int64_t n = s[s.size() - 2], k = s.back(), b = numel_of(batch_of(s));
  if (b == 0 || n == 0 || k == 0) return;
  const Tensor ld = host_colmajor(c.in[0], b, n, n), x = host_colmajor(c.in[2], b, n, k);
  Tensor piv = Tensor::empty({b, n}, DType::kInt32);
  copy_into(piv, reshape_view(contiguous_local(c.in[1]), {b, n}));
  sytrs_kernel().get(DeviceType::kCPU)(ld, piv, x);
  store_colmajor(x, c.out[0]);
}

// The solve also splits B's columns, and passes a partial B through (X is linear in B).
Sigs ldl_solve_sbp(const SbpQuery& q) {
  Sigs sigs = batch_sbp(q);
  const int64_t last = rank_of(q.in[2]) - 1;
  sigs.push_back({{Sbp::broadcast(), Sbp::broadcast(), Sbp::split(last)}, {Sbp::split(last)}});
  sigs.push_back({{Sbp::broadcast(), Sbp::broadcast(), kPSum}, {kPSum}});
  return sigs;
}
const SbpRule kLdl{"ldl", batch_sbp};
const SbpRule kLdlSolve{"ldl_solve", ldl_solve_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "linalg_ldl_factor_ex",
     .num_inputs = 1,
     .differentiable = false,
     .cost = lapack_cost,
     .sbp = &kLdl,
     .infer = infer_ldl_factor,
     .compute = compute_ldl_factor,
     .api = {{"linalg_ldl_factor_ex(Tensor A) -> (Tensor LD, Tensor pivots, Tensor info)", nullptr,
              kInternal}},
     .doc = "The Bunch-Kaufman factorisation A = L D L^T of a symmetric matrix (LAPACK sytrf)"},
    {.name = "linalg_ldl_solve",
     .num_inputs = 3,
     .differentiable = false,
     .cost = lapack_cost,
     .sbp = &kLdlSolve,
     .infer = infer_ldl_solve,
     .compute = compute_ldl_solve,
     .api = {{"linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B) -> Tensor", nullptr,
              kInternal}},
     .doc = "X with A X = B from ldl_factor's LD and pivots (LAPACK sytrs)"},
});

}  // namespace ofl::internal
