// The linalg kernels on the CPU: OpenBLAS's LAPACK through its Fortran symbols (getrf, potrf,
// geqrf, orgqr, syevd) and its CBLAS trsm, one matrix per task. Matrices arrive column-major
// (ops/linalg_lapack.h), as LAPACK takes them.
#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/parallel.h"
#include "ops/linalg_lapack.h"

extern "C" {
// LAPACK's Fortran interface (trailing lengths: gfortran's hidden ones of the string arguments).
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work,
             const int* lwork, int* info, size_t);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work,
             const int* lwork, int* info, size_t);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info, size_t);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info, size_t);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
            float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
            const int* lwork, int* info, size_t, size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda,
            double* wr, double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr,
            double* work, const int* lwork, int* info, size_t, size_t);
}

namespace ofl::internal::cpu {
namespace {

void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  sgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  dgetrf_(&m, &n, a, &lda, ipiv, info);
}
void potrf(int n, float* a, int lda, int* info) {
  spotrf_("L", &n, a, &lda, info, 1);
}
void potrf(int n, double* a, int lda, int* info) {
  dpotrf_("L", &n, a, &lda, info, 1);
}
void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
           int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
           int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void syevd(const char* uplo, int n, float* a, int lda, float* w, float* work, int lwork, int* iwork,
           int liwork, int* info) {
  ssyevd_("V", uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(const char* uplo, int n, double* a, int lda, double* w, double* work, int lwork,
           int* iwork, int liwork, int* info) {
  dsyevd_("V", uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void trsm(CBLAS_UPLO uplo, CBLAS_DIAG diag, int n, int k, const float* a, float* b) {
  cblas_strsm(CblasColMajor, CblasLeft, uplo, CblasNoTrans, diag, n, k, 1.0f, a, n, b, n);
}
void trsm(CBLAS_UPLO uplo, CBLAS_DIAG diag, int n, int k, const double* a, double* b) {
  cblas_dtrsm(CblasColMajor, CblasLeft, uplo, CblasNoTrans, diag, n, k, 1.0, a, n, b, n);
}

void sytrf(int n, float* a, int lda, int* ipiv, float* work, int lwork, int* info) {
  ssytrf_("L", &n, a, &lda, ipiv, work, &lwork, info, 1);
}
void sytrf(int n, double* a, int lda, int* ipiv, double* work, int lwork, int* info) {
  dsytrf_("L", &n, a, &lda, ipiv, work, &lwork, info, 1);
}
void sytrs(int n, int k, const float* a, const int* ipiv, float* b, int* info) {
  ssytrs_("L", &n, &k, a, &n, ipiv, b, &n, info, 1);
}
void sytrs(int n, int k, const double* a, const int* ipiv, double* b, int* info) {
  dsytrs_("L", &n, &k, a, &n, ipiv, b, &n, info, 1);
}

void geev(int n, float* a, float* wr, float* wi, float* vr, float* work, int lwork, int* info) {
  const int one = 1, ld = std::max(n, 1);
  sgeev_("N", "V", &n, a, &ld, wr, wi, nullptr, &one, vr, &ld, work, &lwork, info, 1, 1);
}
void geev(int n, double* a, double* wr, double* wi, double* vr, double* work, int lwork,
          int* info) {
  const int one = 1, ld = std::max(n, 1);
  dgeev_("N", "V", &n, a, &ld, wr, wi, nullptr, &one, vr, &ld, work, &lwork, info, 1, 1);
}

// Calls f.template operator()<T>() for a's float dtype, naming op otherwise.
template <class F>
void by_float(const Tensor& a, const char* op, F&& f) {
  switch (a.dtype()) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    default:
      fail<TypeError>(op, "the CPU kernel takes float32 or float64, got ", dtype_name(a.dtype()));
  }
}

int as_int(int64_t v) {
  return static_cast<int>(v);
}

void getrf_cpu(const Tensor& a, bool pivot, const Tensor& pivots, const Tensor& info) {
  if (!pivot) fail("linalg_lu_factor", "LU without pivoting is not implemented on the CPU");
  const int64_t batch = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
  const int64_t k = std::min(m, n);
  by_float(a, "linalg_lu_factor", [&](auto t) {
    using T = decltype(t);
    T* p = a.data<T>();
    int *piv = pivots.data<int>(), *inf = info.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b)
        getrf(as_int(m), as_int(n), p + b * m * n, as_int(std::max<int64_t>(m, 1)), piv + b * k,
              inf + b);
    });
  });
}

void potrf_cpu(const Tensor& a, const Tensor& info) {
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  by_float(a, "linalg_cholesky", [&](auto t) {
    using T = decltype(t);
    T* p = a.data<T>();
    int* inf = info.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b)
        potrf(as_int(n), p + b * n * n, as_int(std::max<int64_t>(n, 1)), inf + b);
    });
  });
}

void trsm_cpu(const Tensor& a, const Tensor& b, bool upper, bool unit) {
  const int64_t batch = a.shape()[0], n = a.shape()[1], k = b.shape()[1];
  by_float(a, "linalg_solve_triangular", [&](auto t) {
    using T = decltype(t);
    const T* pa = a.data<T>();
    T* pb = b.data<T>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        trsm(upper ? CblasUpper : CblasLower, unit ? CblasUnit : CblasNonUnit, as_int(n), as_int(k),
             pa + i * n * n, pb + i * n * k);
    });
  });
}

void geqrf_cpu(const Tensor& a, const Tensor& tau) {
  const int64_t batch = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
  const int64_t k = std::min(m, n);
  const int lda = as_int(std::max<int64_t>(m, 1));
  by_float(a, "geqrf", [&](auto t) {
    using T = decltype(t);
    T query = 0;
    int info = 0;
    geqrf(as_int(m), as_int(n), nullptr, lda, nullptr, &query, -1, &info);
    const int lwork = std::max(1, static_cast<int>(query));
    T *p = a.data<T>(), *pt = tau.data<T>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = lo; b < hi; ++b) {
        int status = 0;
        geqrf(as_int(m), as_int(n), p + b * m * n, lda, pt + b * k, work.data(), lwork, &status);
        if (status < 0) fail("geqrf", "LAPACK geqrf rejected argument ", -status);
      }
    });
  });
}

void orgqr_cpu(const Tensor& a, const Tensor& tau) {
  const int64_t batch = a.shape()[0], c = a.shape()[1], m = a.shape()[2], k = tau.shape()[1];
  const int lda = as_int(std::max<int64_t>(m, 1));
  by_float(a, "linalg_householder_product", [&](auto t) {
    using T = decltype(t);
    T query = 0;
    int info = 0;
    orgqr(as_int(m), as_int(c), as_int(k), nullptr, lda, nullptr, &query, -1, &info);
    const int lwork = std::max(1, static_cast<int>(query));
    T* p = a.data<T>();
    const T* pt = tau.data<T>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = lo; b < hi; ++b) {
        int status = 0;
        orgqr(as_int(m), as_int(c), as_int(k), p + b * m * c, lda, pt + b * k, work.data(), lwork,
              &status);
        if (status < 0)
          fail("linalg_householder_product", "LAPACK orgqr rejected argument ", -status);
      }
    });
  });
}

void syevd_cpu(const Tensor& a, bool lower, const Tensor& w, const Tensor& info) {
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  const int lda = as_int(std::max<int64_t>(n, 1));
  const char* uplo = lower ? "L" : "U";
  by_float(a, "linalg_eigh", [&](auto t) {
    using T = decltype(t);
    T query = 0;
    int iquery = 0, status = 0;
    syevd(uplo, as_int(n), nullptr, lda, nullptr, &query, -1, &iquery, -1, &status);
    const int lwork = std::max(1, static_cast<int>(query)), liwork = std::max(1, iquery);
    T *p = a.data<T>(), *pw = w.data<T>();
    int* inf = info.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> work(static_cast<size_t>(lwork));
      std::vector<int> iwork(static_cast<size_t>(liwork));
      for (int64_t b = lo; b < hi; ++b)
        syevd(uplo, as_int(n), p + b * n * n, lda, pw + b * n, work.data(), lwork, iwork.data(),
              liwork, inf + b);
    });
  });
}

void sytrf_cpu(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  const int lda = as_int(std::max<int64_t>(n, 1));
  by_float(a, "linalg_ldl_factor", [&](auto t) {
    using T = decltype(t);
    T query = 0;
    int status = 0;
    sytrf(as_int(n), nullptr, lda, nullptr, &query, -1, &status);
    const int lwork = std::max(1, static_cast<int>(query));
    T* p = a.data<T>();
    int *piv = pivots.data<int>(), *inf = info.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = lo; b < hi; ++b)
        sytrf(as_int(n), p + b * n * n, lda, piv + b * n, work.data(), lwork, inf + b);
    });
  });
}

void sytrs_cpu(const Tensor& a, const Tensor& pivots, const Tensor& b) {
  const int64_t batch = a.shape()[0], n = a.shape()[1], k = b.shape()[1];
  by_float(a, "linalg_ldl_solve", [&](auto t) {
    using T = decltype(t);
    const T* p = a.data<T>();
    T* pb = b.data<T>();
    const int* piv = pivots.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int status = 0;
        sytrs(as_int(n), as_int(k), p + i * n * n, piv + i * n, pb + i * n * k, &status);
        if (status < 0) fail("linalg_ldl_solve", "LAPACK sytrs rejected argument ", -status);
      }
    });
  });
}

void geev_cpu(const Tensor& a, const Tensor& wr, const Tensor& wi, const Tensor& vr,
              const Tensor& info) {
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  by_float(a, "linalg_eig", [&](auto t) {
    using T = decltype(t);
    T query = 0;
    int status = 0;
    geev(as_int(n), nullptr, nullptr, nullptr, nullptr, &query, -1, &status);
    const int lwork = std::max(1, static_cast<int>(query));
    T *p = a.data<T>(), *pr = wr.data<T>(), *pi = wi.data<T>(), *pv = vr.data<T>();
    int* inf = info.data<int>();
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> work(static_cast<size_t>(lwork));
      for (int64_t b = lo; b < hi; ++b)
        geev(as_int(n), p + b * n * n, pr + b * n, pi + b * n, pv + b * n * n, work.data(), lwork,
             inf + b);
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(getrf_kernel, DeviceType::kCPU, getrf_cpu);
OFL_REGISTER_KERNEL(potrf_kernel, DeviceType::kCPU, potrf_cpu);
OFL_REGISTER_KERNEL(trsm_kernel, DeviceType::kCPU, trsm_cpu);
OFL_REGISTER_KERNEL(geqrf_kernel, DeviceType::kCPU, geqrf_cpu);
OFL_REGISTER_KERNEL(orgqr_kernel, DeviceType::kCPU, orgqr_cpu);
OFL_REGISTER_KERNEL(syevd_kernel, DeviceType::kCPU, syevd_cpu);
OFL_REGISTER_KERNEL(sytrf_kernel, DeviceType::kCPU, sytrf_cpu);
OFL_REGISTER_KERNEL(sytrs_kernel, DeviceType::kCPU, sytrs_cpu);
OFL_REGISTER_KERNEL(geev_kernel, DeviceType::kCPU, geev_cpu);

}  // namespace ofl::internal::cpu
