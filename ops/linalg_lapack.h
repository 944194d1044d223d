// LAPACK-style kernels for the linalg decompositions (ops/linalg_lapack.cpp), on column-major
// matrices: each matrix of a contiguous (batch, c, r) tensor is the r x c column-major matrix
// with leading dimension r (the layout LAPACK and cuSOLVER take), float32 or float64. The ops
// transpose into and out of this layout; the backends (ops/cpu/lapack.cpp, ops/cuda/cusolver.cu)
// only call the library. info tensors are int32 (batch), LAPACK's info of each matrix.
#pragma once
#include <vector>

#include "core/kernel_table.h"
#include "core/op_def.h"
#include "core/tensor.h"
#include "ops/elementwise_sbp.h"

namespace ofl::internal {

// LU with partial pivoting of a (batch, n, m), in place: pivots (batch, min(m, n)) int32,
// 1-based row swaps. Without pivot, no row swaps (the CPU has no such LAPACK routine: raises).
using GetrfKernel = void(const Tensor& a, bool pivot, const Tensor& pivots, const Tensor& info);
// Cholesky A = L L^T of a (batch, n, n) reading and writing the lower triangle, in place.
using PotrfKernel = void(const Tensor& a, const Tensor& info);
// Solves A X = B in place of b (batch, k, n) with a (batch, n, n) triangular (upper or lower,
// with a unit diagonal when unit).
using TrsmKernel = void(const Tensor& a, const Tensor& b, bool upper, bool unit);
// Householder QR of a (batch, n, m) in place (R above the diagonal, the reflectors below), with
// tau (batch, min(m, n)).
using GeqrfKernel = void(const Tensor& a, const Tensor& tau);
// The first c columns of H_1 ... H_k from geqrf's reflectors in a (batch, c, m), in place; k is
// tau's (batch, k) last size, k <= c <= m.
using OrgqrKernel = void(const Tensor& a, const Tensor& tau);
// Eigenvalues w (batch, n) ascending and, in place of a (batch, n, n), the eigenvectors as
// columns of a symmetric matrix given by its lower (or upper) triangle.
using SyevdKernel = void(const Tensor& a, bool lower, const Tensor& w, const Tensor& info);

// Bunch-Kaufman L D L^T of a symmetric a (batch, n, n) from its lower triangle, in place, with
// LAPACK's pivots (batch, n) int32 (negative for 2 x 2 blocks); and the solve with it in place of
// b (batch, k, n). Host memory only: the ops run them on a host copy for every device.
using SytrfKernel = void(const Tensor& a, const Tensor& pivots, const Tensor& info);
using SytrsKernel = void(const Tensor& a, const Tensor& pivots, const Tensor& b);

// The eigenvalues (wr + i wi, batch x n each) and right eigenvectors of a general a (batch, n, n)
// (destroyed), vr (batch, n, n) in LAPACK geev's real packing: a complex pair's vectors are the
// columns j +- i (j + 1). Host memory only (cuSOLVER's geev is recent): the op copies.
using GeevKernel = void(const Tensor& a, const Tensor& wr, const Tensor& wi, const Tensor& vr,
                        const Tensor& info);

OFL_DECLARE_KERNEL(getrf_kernel, GetrfKernel)
OFL_DECLARE_KERNEL(potrf_kernel, PotrfKernel)
OFL_DECLARE_KERNEL(trsm_kernel, TrsmKernel)
OFL_DECLARE_KERNEL(geqrf_kernel, GeqrfKernel)
OFL_DECLARE_KERNEL(orgqr_kernel, OrgqrKernel)
OFL_DECLARE_KERNEL(syevd_kernel, SyevdKernel)
OFL_DECLARE_KERNEL(sytrf_kernel, SytrfKernel)
OFL_DECLARE_KERNEL(sytrs_kernel, SytrsKernel)
OFL_DECLARE_KERNEL(geev_kernel, GeevKernel)

// Every matrix on its own: the batch dimensions split alike on every input and output.
std::vector<SbpSignature> batch_sbp(const SbpQuery& q);

// The cost model's estimate of a factorisation: 2 m n min(m, n) flops a matrix.
OpCost lapack_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

// The ops' front ends, for backward formulas (composites of ops, so they differentiate again).
// X solving A X = B (left) or X A = B, A triangular; batch dims broadcast.
Tensor linalg_solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left = true,
                               bool unitriangular = false);
// The (batch, m) int64 row order of P^T A = L U from getrf's pivots (batch, k): LU = A[perm].
Tensor lu_permutation(const Tensor& pivots, int64_t m);

// Backward formulas (ops/linalg_lapack_grad.cpp), PyTorch's FunctionsManual.cpp ones.
std::vector<Tensor> lu_factor_backward(const BackwardArgs& b);
std::vector<Tensor> solve_triangular_backward(const BackwardArgs& b);
std::vector<Tensor> cholesky_backward(const BackwardArgs& b);
std::vector<Tensor> qr_backward(const BackwardArgs& b);
std::vector<Tensor> eigh_backward(const BackwardArgs& b);

}  // namespace ofl::internal
