// The SVD on the CPU: LAPACK's divide-and-conquer gesdd from OpenBLAS, one matrix per task. A
// row-major matrix is its transpose in LAPACK's column-major order, so gesdd runs on A^T = V S U^T
// and its "U" is our Vh and its "VT" our U, each already in row-major order.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/parallel.h"
#include "ops/kernels.h"

extern "C" {
// LAPACK's Fortran interface (the trailing length is gfortran's hidden one of the jobz string).
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info, size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info, size_t jobz_len);
}

namespace ofl::internal::cpu {
namespace {

void gesdd(const char* jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu,
           float* vt, int ldvt, float* work, int lwork, int* iwork, int* info) {
  sgesdd_(jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(const char* jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu,
           double* vt, int ldvt, double* work, int lwork, int* iwork, int* info) {
  dgesdd_(jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

template <class T>
void svd_batch(const Tensor& a, bool full, const Tensor& u, const Tensor& s, const Tensor& vh) {
  const int64_t batch = a.shape()[0], m = a.shape()[1], n = a.shape()[2];
  const int64_t k = std::min(m, n), ucols = u.shape()[2], vhrows = vh.shape()[1];
  // LAPACK's view: the n x m column-major matrix A^T.
  const int lm = static_cast<int>(n), ln = static_cast<int>(m);
  const int ldu = static_cast<int>(std::max<int64_t>(n, 1));
  const int ldvt = static_cast<int>(std::max<int64_t>(ucols, 1));
  const char* jobz = full ? "A" : "S";
  // The workspace size, asked once for the whole batch (it depends on the shape only).
  int lwork = -1, info = 0;
  T query = 0;
  gesdd(jobz, lm, ln, nullptr, std::max(lm, 1), nullptr, nullptr, ldu, nullptr, ldvt, &query, lwork,
        nullptr, &info);
  lwork = std::max(1, static_cast<int>(query));
  const T* in = a.data<T>();
  T *pu = u.data<T>(), *ps = s.data<T>(), *pv = vh.data<T>();
  parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
    std::vector<T> copy(m * n), work(lwork);
    std::vector<int> iwork(8 * std::max<int64_t>(k, 1));
    for (int64_t b = lo; b < hi; ++b) {
      std::copy(in + b * m * n, in + (b + 1) * m * n, copy.begin());  // gesdd overwrites A
      int status = 0;
      gesdd(jobz, lm, ln, copy.data(), std::max(lm, 1), ps + b * k, pv + b * vhrows * n, ldu,
            pu + b * m * ucols, ldvt, work.data(), lwork, iwork.data(), &status);
      if (status == -4)  // OpenBLAS's gesdd checks the matrix itself for NaN
        fail("linalg_svd", "matrix ", b, " of the batch (", m, " x ", n,
             ") holds NaN (LAPACK gesdd rejected it)");
      if (status < 0) fail("linalg_svd", "LAPACK gesdd rejected argument ", -status);
      if (status > 0)
        fail("linalg_svd", "the SVD of matrix ", b, " of the batch (", m, " x ", n,
             ") did not converge (LAPACK gesdd info ", status, "); does it hold NaN or inf?");
    }
  });
}

void svd(const Tensor& a, bool full_matrices, const Tensor& u, const Tensor& s, const Tensor& vh) {
  switch (a.dtype()) {
    case DType::kFloat32:
      return svd_batch<float>(a, full_matrices, u, s, vh);
    case DType::kFloat64:
      return svd_batch<double>(a, full_matrices, u, s, vh);
    default:
      fail<TypeError>("linalg_svd", "the CPU kernel takes float32 or float64, got ",
                      dtype_name(a.dtype()));
  }
}

}  // namespace

OFL_REGISTER_KERNEL(svd_kernel, DeviceType::kCPU, svd);

}  // namespace ofl::internal::cpu
