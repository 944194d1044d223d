// Matrix products on the BLAS.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/tensor.h"

namespace ofl::internal {

// numpy/PyTorch matmul: 1-d operands are promoted and the batch dimensions broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// sum over the batch of a_i @ b_i: a (..., n, k) and b (..., k, m) with the same batch
// dimensions give (n, m). A linear's weight gradient, in one GEMM.
Tensor matmul_sum(const Tensor& a, const Tensor& b);
// y = x @ w^T + bias (bias may be undefined).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);
// beta * input + alpha * (a @ b): a and b matrices (addmm) or batches of them (baddbmm).
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1,
             double alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1,
               double alpha = 1);
// Einstein summation ("ij,jk->ik"), with ellipses; diagonals (a repeated subscript) are not
// supported.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
// The singular value decomposition A = U diag(S) Vh of a matrix or a batch of them, S descending:
// U (..., m, m) and Vh (..., n, n) when full_matrices, else (..., m, k) and (..., k, n), k =
// min(m, n). float32 and float64.
std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& a, bool full_matrices = true);
Tensor linalg_svdvals(const Tensor& a);
// The pseudo-inverse through the SVD: singular values at most max(atol, rtol * S_max) dropped,
// rtol by default max(m, n) * eps (0 when a positive atol is given), as PyTorch's.
Tensor linalg_pinv(const Tensor& a, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false);

}  // namespace ofl::internal
