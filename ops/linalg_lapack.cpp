// The linalg decompositions that run a LAPACK (CPU) or cuSOLVER (CUDA) kernel: LU with pivots
// (getrf), the triangular solve (trsm), Cholesky (potrf), Householder QR (geqrf, orgqr) and the
// symmetric eigendecomposition (syevd), each batched over leading dimensions. Everything else
// in torch.linalg (inv, solve, det, lstsq, ...) is a composite of these in
// python/oneflowlike/_linalg_solvers.py. Kernels take column-major matrices: the computes here
// transpose into and out of that layout, so the backends only call the library.
#include <algorithm>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/linalg_lapack.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

OFL_DEFINE_KERNEL(getrf_kernel, GetrfKernel)
OFL_DEFINE_KERNEL(potrf_kernel, PotrfKernel)
OFL_DEFINE_KERNEL(trsm_kernel, TrsmKernel)
OFL_DEFINE_KERNEL(geqrf_kernel, GeqrfKernel)
OFL_DEFINE_KERNEL(orgqr_kernel, OrgqrKernel)
OFL_DEFINE_KERNEL(syevd_kernel, SyevdKernel)

using namespace elementwise_sbp;

namespace {

void check_float_matrix(const char* op, const char* name, const TensorMeta& a) {
  if (a.shape.size() < 2)
    fail(op, name,
         " must be a matrix or a batch of matrices (at least 2 dimensions), got a tensor of "
         "shape ",
         shape_str(a.shape));
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64)
    fail<TypeError>(op, "expects ", name, " of dtype float32 or float64, got ",
                    dtype_name(a.dtype));
}

void check_square(const char* op, const char* name, const TensorMeta& a) {
  check_float_matrix(op, name, a);
  if (a.shape[a.shape.size() - 2] != a.shape.back())
    fail(op, name, " must be batches of square matrices, but they are ",
         a.shape[a.shape.size() - 2], " by ", a.shape.back(), " matrices");
}

Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - 2);
}

Shape with(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

// The (b, c, r) transpose of a contiguous (b, r, c) tensor, as a view.
Tensor transposed(const Tensor& t) {
  const int64_t b = t.shape()[0], r = t.shape()[1], c = t.shape()[2];
  return Tensor::view_of(t.storage(), {b, c, r}, {r * c, 1, c}, t.offset(), t.dtype());
}

// x's (..., r, c) matrices as a new column-major (b, c, r) tensor, which the kernels overwrite.
Tensor to_colmajor(const Tensor& x, int64_t b, int64_t r, int64_t c) {
  Tensor work = Tensor::empty({b, c, r}, x.dtype(), x.device());
  copy_into(work, transposed(reshape_view(contiguous_local(x), {b, r, c})));
  return work;
}

// Writes column-major work (b, c, r) into the contiguous output out (..., r, c).
void from_colmajor(const Tensor& work, const Tensor& out) {
  const int64_t b = work.shape()[0], c = work.shape()[1], r = work.shape()[2];
  copy_into(reshape_view(out, {b, r, c}), transposed(work));
}

// The int32 info of each matrix on the host, for ops that raise on a failure.
std::vector<int> host_ints(const Tensor& t) {
  Tensor host = Tensor::empty(t.shape(), DType::kInt32);
  copy_into(host, contiguous_local(t));
  const int* p = host.data<int>();
  return std::vector<int>(p, p + host.numel());
}

// --- lu_factor: getrf ---

std::vector<TensorMeta> infer_lu_factor(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_float_matrix(a.op, "A", A);
  const Shape batch = batch_of(A.shape);
  const int64_t k = std::min(A.shape[A.shape.size() - 2], A.shape.back());
  return {{A.shape, A.dtype, A.device},
          {with(batch, {k}), DType::kInt32, A.device},
          {batch, DType::kInt32, A.device}};
}

void compute_lu_factor(const ComputeArgs& c) {
  require_output_shapes(op_def("linalg_lu_factor_ex"), c);
  const Shape& s = c.in[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n), b = numel_of(batch_of(s));
  const bool pivot = c.attrs.get<bool>("pivot");
  fill_into(c.out[2], 0);
  if (b == 0 || k == 0) return;
  const Tensor work = to_colmajor(c.in[0], b, m, n);
  const Tensor piv = reshape_view(c.out[1], {b, k});
  getrf_kernel().get(work.device().type)(work, pivot, piv, reshape_view(c.out[2], {b}));
  from_colmajor(work, c.out[0]);
  if (!pivot) {  // no swaps: pivots 1, 2, ..., k
    Tensor host = Tensor::empty({b, k}, DType::kInt32);
    for (int64_t i = 0; i < b * k; ++i) host.data<int>()[i] = static_cast<int>(i % k + 1);
    copy_into(piv, host);
  }
}

// --- the row order of the pivots ---

std::vector<TensorMeta> infer_lu_permutation(const InferArgs& a) {
  const TensorMeta& p = a.in[0];
  if (p.shape.empty() || p.dtype != DType::kInt32)
    fail(a.op, "expects int32 pivots (..., k), got ", dtype_name(p.dtype), " of shape ",
         shape_str(p.shape));
  const int64_t m = a.attrs.get<int64_t>("m");
  if (m < p.shape.back())
    fail(a.op, "the pivots (", p.shape.back(), ") outnumber the rows (", m, ")");
  Shape out = p.shape;
  out.back() = m;
  return single_output(std::move(out), DType::kInt64, p.device);
}

void compute_lu_permutation(const ComputeArgs& c) {
  const int64_t k = c.in[0].shape().back(), m = c.out[0].shape().back();
  const std::vector<int> piv = host_ints(c.in[0]);
  const int64_t b =
      k == 0 ? c.out[0].numel() / std::max<int64_t>(m, 1) : static_cast<int64_t>(piv.size()) / k;
  Tensor host = Tensor::empty({b, m}, DType::kInt64);
  int64_t* perm = host.data<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    int64_t* row = perm + i * m;
    for (int64_t j = 0; j < m; ++j) row[j] = j;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = piv[size_t(i * k + j)] - 1;
      if (p < 0 || p >= m)
        fail("lu_unpack", "pivot ", p + 1, " of matrix ", i, " is outside [1, ", m, "]");
      std::swap(row[j], row[p]);
    }
  }
  copy_into(reshape_view(c.out[0], {b, m}), host);
}

// --- the triangular solve: trsm ---

std::vector<TensorMeta> infer_solve_triangular(const InferArgs& a) {
  const TensorMeta &A = a.in[0], &B = a.in[1];
  check_square(a.op, "A", A);
  check_float_matrix(a.op, "B", B);
  if (A.dtype != B.dtype)
    fail(a.op, "expected A and B to have the same dtype, but found A of type ", dtype_name(A.dtype),
         " and B of type ", dtype_name(B.dtype), " instead");
  if (batch_of(A.shape) != batch_of(B.shape) || B.shape[B.shape.size() - 2] != A.shape.back())
    fail(a.op, "incompatible shapes of A and B for the equation AX = B (", shape_str(A.shape),
         " and ", shape_str(B.shape), ")");
  return single_output(B.shape, B.dtype, B.device);
}

void compute_solve_triangular(const ComputeArgs& c) {
  require_output_shapes(op_def("solve_triangular"), c);
  const Shape& s = c.in[1].shape();
  const int64_t n = s[s.size() - 2], k = s.back(), b = numel_of(batch_of(s));
  if (b == 0 || n == 0 || k == 0) return;
  const Tensor a = to_colmajor(c.in[0], b, n, n), x = to_colmajor(c.in[1], b, n, k);
  trsm_kernel().get(a.device().type)(a, x, c.attrs.get<bool>("upper"),
                                     c.attrs.get<bool>("unitriangular"));
  from_colmajor(x, c.out[0]);
}

// --- Cholesky: potrf ---

std::vector<TensorMeta> infer_cholesky(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_square(a.op, "A", A);
  return {{A.shape, A.dtype, A.device}, {batch_of(A.shape), DType::kInt32, A.device}};
}

void compute_cholesky(const ComputeArgs& c) {
  require_output_shapes(op_def("linalg_cholesky_ex"), c);
  const Shape& s = c.in[0].shape();
  const int64_t n = s.back(), b = numel_of(batch_of(s));
  fill_into(c.out[1], 0);
  if (b == 0 || n == 0) return;
  const Tensor work = to_colmajor(c.in[0], b, n, n);
  potrf_kernel().get(work.device().type)(work, reshape_view(c.out[1], {b}));
  from_colmajor(work, c.out[0]);
  // potrf leaves the upper triangle as it found it.
  triangular_kernel().get(work.device().type)(c.out[0], false, 0, c.out[0]);
}

// --- Householder QR: geqrf, and orgqr for Q ---

std::vector<TensorMeta> infer_geqrf(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_float_matrix(a.op, "input", A);
  const int64_t k = std::min(A.shape[A.shape.size() - 2], A.shape.back());
  return {{A.shape, A.dtype, A.device}, {with(batch_of(A.shape), {k}), A.dtype, A.device}};
}

void compute_geqrf(const ComputeArgs& c) {
  require_output_shapes(op_def("geqrf"), c);
  const Shape& s = c.in[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n), b = numel_of(batch_of(s));
  if (b == 0 || k == 0) return;
  const Tensor work = to_colmajor(c.in[0], b, m, n);
  geqrf_kernel().get(work.device().type)(work, reshape_view(c.out[1], {b, k}));
  from_colmajor(work, c.out[0]);
}

// mode: "reduced" (Q m x k, R k x n), "complete" (Q m x m, R m x n) or "r" (R k x n, Q empty).
std::vector<TensorMeta> infer_qr(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_float_matrix(a.op, "A", A);
  const std::string& mode = a.attrs.get<std::string>("mode");
  if (mode != "reduced" && mode != "complete" && mode != "r")
    fail(a.op, "qr received unrecognized mode '", mode,
         "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const Shape batch = batch_of(A.shape);
  const int64_t m = A.shape[A.shape.size() - 2], n = A.shape.back(), k = std::min(m, n);
  const bool complete = mode == "complete";
  const Shape q = mode == "r" ? Shape{0} : with(batch, {m, complete ? m : k});
  return {{q, A.dtype, A.device}, {with(batch, {complete ? m : k, n}), A.dtype, A.device}};
}

void compute_qr(const ComputeArgs& c) {
  require_output_shapes(op_def("linalg_qr"), c);
  const Shape& s = c.in[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n), b = numel_of(batch_of(s));
  const std::string& mode = c.attrs.get<std::string>("mode");
  const Tensor &Q = c.out[0], &R = c.out[1];
  const int64_t qcols = mode == "complete" ? m : k, rrows = R.shape()[R.shape().size() - 2];
  if (b == 0) return;
  fill_into(R, 0);
  if (k == 0) {  // the complete Q of an m x 0 matrix is the identity
    if (mode == "complete" && m > 0) {
      fill_into(Q, 0);
      fill_into(Tensor::view_of(Q.storage(), {b, m}, {m * m, m + 1}, Q.offset(), Q.dtype()), 1);
    }
    return;
  }
  const DeviceType dev = c.in[0].device().type;
  const Tensor work = to_colmajor(c.in[0], b, m, n);
  const Tensor tau = Tensor::empty({b, k}, work.dtype(), work.device());
  geqrf_kernel().get(dev)(work, tau);
  // R: the upper triangle of the first rows of the factored matrix.
  const Tensor R3 = reshape_view(R, {b, rrows, n});
  copy_into(narrow_view(R3, 1, 0, std::min(rrows, m)),
            narrow_view(transposed(work), 1, 0, std::min(rrows, m)));
  triangular_kernel().get(dev)(R, true, 0, R);
  if (mode == "r") return;
  Tensor q = work;
  if (qcols != n) {  // orgqr builds qcols columns from the k reflectors in the first columns
    q = Tensor::empty({b, qcols, m}, work.dtype(), work.device());
    fill_into(q, 0);
    copy_into(narrow_view(q, 1, 0, k), narrow_view(work, 1, 0, k));
  }
  orgqr_kernel().get(dev)(q, tau);
  from_colmajor(q, Q);
}

// --- the symmetric eigendecomposition: syevd ---

std::vector<TensorMeta> infer_eigh(const InferArgs& a) {
  const TensorMeta& A = a.in[0];
  check_square(a.op, "A", A);
  const std::string& uplo = a.attrs.get<std::string>("UPLO");
  if (uplo != "L" && uplo != "U" && uplo != "l" && uplo != "u")
    fail(a.op, "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  return {{with(batch_of(A.shape), {A.shape.back()}), A.dtype, A.device},
          {A.shape, A.dtype, A.device}};
}

void compute_eigh(const ComputeArgs& c) {
  require_output_shapes(op_def("linalg_eigh"), c);
  const Shape& s = c.in[0].shape();
  const int64_t n = s.back(), b = numel_of(batch_of(s));
  if (b == 0 || n == 0) return;
  const std::string& uplo = c.attrs.get<std::string>("UPLO");
  const Tensor work = to_colmajor(c.in[0], b, n, n);
  const Tensor info = Tensor::empty({b}, DType::kInt32, work.device());
  syevd_kernel().get(work.device().type)(work, uplo == "L" || uplo == "l",
                                         reshape_view(c.out[0], {b, n}), info);
  const std::vector<int> status = host_ints(info);
  for (int64_t i = 0; i < b; ++i)
    if (status[size_t(i)] != 0)
      fail("linalg.eigh", b > 1 ? "(Batch element " + std::to_string(i) + "): " : "",
           "The algorithm failed to converge because the input matrix is ill-conditioned or "
           "has too many repeated eigenvalues (error code: ",
           status[size_t(i)], ").");
  from_colmajor(work, c.out[1]);
}

Sigs solve_triangular_sbp(const SbpQuery& q) {
  Sigs sigs = batch_sbp(q);
  const int64_t last = rank_of(q.in[1]) - 1;
  sigs.push_back({{Sbp::broadcast(), Sbp::split(last)}, {Sbp::split(last)}});
  // X is linear in B: a partial B gives a partial X.
  sigs.push_back({{Sbp::broadcast(), kPSum}, {kPSum}});
  return sigs;
}
// The pivots' batch dimensions: all but the last.
Sigs pivots_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t j = 0; j + 1 < rank_of(q.in[0]); ++j)
    sigs.push_back({{Sbp::split(j)}, {Sbp::split(j)}});
  return sigs;
}
const SbpRule kBatch{"linalg_batch", batch_sbp};
const SbpRule kSolveTriangular{"solve_triangular", solve_triangular_sbp};
const SbpRule kPivots{"lu_pivots", pivots_sbp};

Tensor solve_triangular_call(const CallArgs& a) {
  return linalg_solve_triangular(a.tensor(0), a.tensor(1), a.flag(2), a.flag(3), a.flag(4));
}

}  // namespace

// Each matrix is factored on its own: the batch dimensions may be split (every input and
// output alike); the matrix dimensions stay whole. A triangular solve also splits B's columns
// and passes a partial B through.
std::vector<SbpSignature> batch_sbp(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t j = 0; j + 2 < rank_of(q.in[0]); ++j) {
    SbpSignature sig;
    sig.in.assign(q.in.size(), Sbp::split(j));
    sig.out.assign(q.out.size(), Sbp::split(j));
    sigs.push_back(std::move(sig));
  }
  return sigs;
}

// About n^3 flops per matrix for every factorisation here (the constants differ: 2/3 for LU,
// 1/3 for Cholesky, 4/3 for QR, about 9 for the eigendecomposition), reading and writing it once.
OpCost lapack_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  if (inputs.empty() || inputs[0].size() < 2) return {};
  const Shape& s = inputs[0];
  const double m = double(s[s.size() - 2]), n = double(s.back());
  const double b = double(numel_of(batch_of(s))), k = std::min(m, n);
  OpCost cost;
  cost.flops = b * 2.0 * m * n * k;
  cost.bytes = double(itemsize(dtype)) * (2.0 * b * m * n + double(numel_of(output)));
  return cost;
}

Tensor linalg_solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left,
                               bool unitriangular) {
  static const OpDef& def = op_def("solve_triangular");
  const TensorMeta ma = meta_of(a), mb = meta_of(b);
  check_square("linalg.solve_triangular", "A", ma);
  check_float_matrix("linalg.solve_triangular", "B", mb);
  // X A = B is A^T X^T = B^T, with A^T's triangle the other one.
  if (!left)
    return transpose(linalg_solve_triangular(transpose(a, -2, -1), transpose(b, -2, -1), !upper,
                                             true, unitriangular),
                     -2, -1);
  Shape ba = batch_of(ma.shape), bb = batch_of(mb.shape);
  Shape batch = broadcast_shapes(ba, bb, "linalg.solve_triangular");
  const Tensor ea = ba == batch ? a : expand(a, with(batch, {ma.shape.back(), ma.shape.back()}));
  const Tensor eb =
      bb == batch ? b : expand(b, with(batch, {mb.shape[mb.shape.size() - 2], mb.shape.back()}));
  return dispatch1(def, {ea, eb}, {{"upper", upper}, {"unitriangular", unitriangular}});
}

Tensor lu_permutation(const Tensor& pivots, int64_t m) {
  static const OpDef& def = op_def("lu_permutation");
  return dispatch1(def, {pivots}, {{"m", m}});
}

OFL_REGISTER_OPS({
    {.name = "linalg_lu_factor_ex",
     .num_inputs = 1,
     .cost = lapack_cost,
     .sbp = &kBatch,
     .attrs = {{"pivot", AttrType::kBool}},
     .infer = infer_lu_factor,
     .compute = compute_lu_factor,
     .backward = lu_factor_backward,
     .saves = kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_lu_factor_ex(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots, "
              "Tensor info)",
              nullptr, kInternal}},
     .doc = "The LU factorisation P A = L U with partial pivoting, packed (LAPACK getrf), with "
            "each matrix's info"},
    {.name = "lu_permutation",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kPivots,
     .attrs = {{"m", AttrType::kInt}},
     .infer = infer_lu_permutation,
     .compute = compute_lu_permutation,
     .api = {{"lu_permutation(Tensor pivots, int m) -> Tensor", nullptr, kInternal}},
     .doc = "The row order perm of getrf's pivots (LU = A[perm]), int64 (m)"},
    {.name = "solve_triangular",
     .num_inputs = 2,
     .cost = lapack_cost,
     .sbp = &kSolveTriangular,
     .attrs = {{"upper", AttrType::kBool}, {"unitriangular", AttrType::kBool}},
     .infer = infer_solve_triangular,
     .compute = compute_solve_triangular,
     .backward = solve_triangular_backward,
     .saves = kSaveInputs | kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool left=True, bool "
              "unitriangular=False) -> Tensor",
              solve_triangular_call, kInternal}},
     .doc = "X with A X = B (or X A = B) for triangular A (BLAS trsm)"},
    {.name = "linalg_cholesky_ex",
     .num_inputs = 1,
     .cost = lapack_cost,
     .sbp = &kBatch,
     .infer = infer_cholesky,
     .compute = compute_cholesky,
     .backward = cholesky_backward,
     .saves = kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_cholesky_ex(Tensor A) -> (Tensor L, Tensor info)", nullptr, kInternal}},
     .doc = "The lower Cholesky factor A = L L^T (LAPACK potrf), with each matrix's info"},
    {.name = "geqrf",
     .num_inputs = 1,
     .differentiable = false,
     .cost = lapack_cost,
     .sbp = &kBatch,
     .infer = infer_geqrf,
     .compute = compute_geqrf,
     .autocast = Autocast::kFloat32,
     .api = {{"geqrf(Tensor input) -> (Tensor a, Tensor tau)", nullptr}},
     .doc = "LAPACK's geqrf: R above the diagonal and the Householder reflectors below, with tau"},
    {.name = "linalg_qr",
     .num_inputs = 1,
     .cost = lapack_cost,
     .sbp = &kBatch,
     .attrs = {{"mode", AttrType::kString}},
     .infer = infer_qr,
     .compute = compute_qr,
     .backward = qr_backward,
     .saves = kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", nullptr,
              kInternal}},
     .doc = "The QR decomposition A = Q R (LAPACK geqrf and orgqr)"},
    {.name = "linalg_eigh",
     .num_inputs = 1,
     .cost = lapack_cost,
     .sbp = &kBatch,
     .attrs = {{"UPLO", AttrType::kString}},
     .infer = infer_eigh,
     .compute = compute_eigh,
     .backward = eigh_backward,
     .saves = kSaveOutputs,
     .autocast = Autocast::kFloat32,
     .api = {{"linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)",
              nullptr, kInternal}},
     .doc = "The eigenvalues (ascending) and eigenvectors of a symmetric matrix (LAPACK syevd)"},
});

}  // namespace ofl::internal
