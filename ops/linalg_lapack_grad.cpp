// The backward formulas of the LAPACK-backed linalg ops (ops/linalg_lapack.cpp): PyTorch's
// (torch/csrc/autograd/FunctionsManual.cpp, real case) written as calls of ops, so they run on
// any kind of tensor and differentiate again. Outputs without a gradient arrive as zeros.
#include <algorithm>

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/linalg.h"
#include "ops/linalg_lapack.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"

namespace ofl::internal {
namespace {

Tensor mT(const Tensor& x) {
  return transpose(x, -2, -1);
}

Tensor scalar(double v) {
  return wrap_scalar(v, DType::kFloat64);
}

int64_t dim_at(const Tensor& x, int64_t d) {
  const Shape& s = meta_of(x).shape;
  return s[size_t(d < 0 ? d + int64_t(s.size()) : d)];
}

// L^T X for the unit lower L whose strict lower part is `Ls` (m x k) and whose top k x k block
// has ones on the diagonal: Ls^T X plus X's first k rows.
Tensor unit_lower_t_times(const Tensor& Ls, const Tensor& X) {
  const int64_t k = dim_at(Ls, -1);
  return add(matmul(mT(Ls), X), narrow(X, -2, 0, k));
}

// P X for the permutation P of P^T A = L U, from the row order perm (LU = A[perm]):
// P^T[i, j] = (perm[i] == j).
Tensor permute_rows_back(const Tensor& perm, const Tensor& X, int64_t m) {
  const TensorMeta mx = meta_of(X);
  const Tensor cols = arange(0, double(m), 1, DType::kInt64, meta_of(perm).device);
  const Tensor Pt = to_dtype(eq(unsqueeze(perm, -1), cols), mx.dtype);
  return matmul(mT(Pt), X);
}

}  // namespace

// PyTorch's linalg_lu_backward through lu_factor_ex_backward: L_grad and U_grad are the packed
// gradient's (m, k) and (k, n) blocks.
std::vector<Tensor> lu_factor_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const Shape& s = b.in_meta[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const bool pivot = b.attrs.get<bool>("pivot");
  const Tensor LU = b.out[0], grad = b.grads[0];
  const Tensor Ls = narrow(tril(LU, -1), -1, 0, k);  // L without its unit diagonal, (m, k)
  const Tensor U = narrow(triu(LU), -2, 0, k);       // (k, n)
  const Tensor L_grad = narrow(grad, -1, 0, k), U_grad = narrow(grad, -2, 0, k);
  Tensor gA;
  if (m == n) {
    // P L^{-H} [tril(L^H L_grad, -1) + triu(U_grad U^H)] U^{-H}
    gA = add(tril(unit_lower_t_times(Ls, L_grad), -1), triu(matmul(U_grad, mT(U))));
    gA = linalg_solve_triangular(mT(U), gA, false, false);
    gA = linalg_solve_triangular(mT(Ls), gA, true, true, true);
  } else if (m < n) {
    const Tensor U1 = narrow(U, -1, 0, k);
    gA = sub(unit_lower_t_times(Ls, L_grad), matmul(triu(U_grad), mT(U)));
    gA = linalg_solve_triangular(mT(U1), tril(gA, -1), false, false);
    gA = cat({add(gA, triu(narrow(U_grad, -1, 0, k))), narrow(U_grad, -1, k, n - k)}, -1);
    gA = linalg_solve_triangular(mT(narrow(Ls, -2, 0, k)), gA, true, true, true);
  } else {
    const Tensor L1s = narrow(Ls, -2, 0, k);
    gA = sub(matmul(U_grad, mT(U)), unit_lower_t_times(Ls, tril(L_grad, -1)));
    gA = linalg_solve_triangular(mT(L1s), triu(gA), true, true, true);
    gA = cat({add(gA, tril(narrow(L_grad, -2, 0, k), -1)), narrow(L_grad, -2, k, m - k)}, -2);
    gA = linalg_solve_triangular(mT(U), gA, false, false);
  }
  if (pivot) gA = permute_rows_back(lu_permutation(b.out[1], m), gA, m);
  return {gA};
}

// G_B = A^{-H} G_X, G_A = -G_B X^H projected on A's triangle.
std::vector<Tensor> solve_triangular_backward(const BackwardArgs& b) {
  const bool upper = b.attrs.get<bool>("upper"), unit = b.attrs.get<bool>("unitriangular");
  if (!b.needs[0] && !b.needs[1]) return {Tensor(), Tensor()};
  const Tensor A = b.in[0], X = b.out[0];
  const Tensor gB = linalg_solve_triangular(mT(A), b.grads[0], !upper, true, unit);
  Tensor gA;
  if (b.needs[0]) {
    gA = neg(matmul(gB, mT(X)));
    gA = upper ? triu(gA, unit ? 1 : 0) : tril(gA, unit ? -1 : 0);
  }
  return {gA, b.needs[1] ? gB : Tensor()};
}

// PyTorch's cholesky_backward (lower): L^{-H} Phi(L^H gL) L^{-1}, Phi taking the lower triangle
// with half the diagonal, symmetrised.
std::vector<Tensor> cholesky_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const Tensor L = b.out[0], gL = b.grads[0];
  Tensor gA = tril(matmul(mT(L), gL));
  gA = mul(add(gA, mT(tril(gA, -1))), scalar(0.5));
  gA = linalg_solve_triangular(mT(L), gA, true, true);
  gA = linalg_solve_triangular(L, gA, false, false);
  return {gA};
}

// PyTorch's linalg_qr_backward.
std::vector<Tensor> qr_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const std::string& mode = b.attrs.get<std::string>("mode");
  const Shape& s = b.in_meta[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back();
  if (mode == "r")
    fail("linalg.qr",
         "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
         "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  if (mode == "complete" && m > n)
    fail("linalg.qr",
         "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  const Tensor Q = b.out[0], R = b.out[1], gQ = b.grads[0], gR = b.grads[1];
  Tensor gA = sub(matmul(gR, mT(R)), matmul(mT(Q), gQ));
  if (m >= n) {
    gA = triu(gA);
    // syminvadj: X + X^H with half the diagonal
    gA = sub(add(gA, mT(gA)), tril(gA));
    gA = add(matmul(Q, gA), gQ);
    return {linalg_solve_triangular(mT(R), gA, false, false)};
  }
  const Tensor X = neg(gA);
  gA = matmul(Q, tril(sub(X, mT(X))));
  gA = linalg_solve_triangular(mT(narrow(R, -1, 0, m)), gA, false, false);
  Shape zshape = meta_of(gA).shape;
  zshape.back() = n - m;
  gA = cat({gA, zeros(zshape, meta_of(gA).dtype, meta_of(gA).device)}, -1);
  return {add(gA, matmul(Q, gR))};
}

// PyTorch's linalg_eig_backward, Hermitian case: V (skew(V^H gV) / 2 / E + diag(gL)) V^H with
// E_ij = L_j - L_i (1 on the diagonal, where the skew part is 0).
std::vector<Tensor> eigh_backward(const BackwardArgs& b) {
  if (!b.needs[0]) return {Tensor()};
  const Tensor L = b.out[0], V = b.out[1], gL = b.grads[0], gV = b.grads[1];
  const Tensor VhgV = matmul(mT(V), gV);
  const Tensor skew = mul(sub(VhgV, mT(VhgV)), scalar(0.5));
  Tensor E = sub(unsqueeze(L, -2), unsqueeze(L, -1));
  const int64_t n = dim_at(L, -1);
  const Tensor diag = eq(eye(n, n, DType::kFloat32, meta_of(L).device), scalar(1));
  E = masked_fill(E, diag, scalar(1));
  const Tensor inner = add(matmul(V, div(skew, E)), mul(V, unsqueeze(gL, -2)));
  return {matmul(inner, mT(V))};
}

}  // namespace ofl::internal
