// The linalg kernels on CUDA: cuSOLVER's getrf, potrf, geqrf, orgqr and syevd and cuBLAS's trsm,
// one matrix at a time on the current stream. Matrices arrive column-major
// (ops/linalg_lapack.h), as cuSOLVER takes them; info lands on the device and the ops read it.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <map>

#include "core/primitives.h"
#include "ops/cuda/common.cuh"
#include "ops/linalg_lapack.h"

namespace ofl::internal::cuda {
namespace {

void check_solver(cusolverStatus_t status, const char* op, const char* what) {
  if (status != CUSOLVER_STATUS_SUCCESS) fail(op, what, " failed: cuSOLVER status ", int(status));
}

// One handle per device for each thread, bound to the current stream before each use.
cusolverDnHandle_t solver_for(Device device, const char* op) {
  thread_local std::map<int, cusolverDnHandle_t> handles;
  auto it = handles.find(device.index);
  if (it == handles.end()) {
    cusolverDnHandle_t h;
    check_solver(cusolverDnCreate(&h), op, "cusolverDnCreate");
    it = handles.emplace(device.index, h).first;
  }
  check_solver(cusolverDnSetStream(it->second, stream_of(device)), op, "cusolverDnSetStream");
  return it->second;
}

cublasHandle_t blas_for(Device device, const char* op) {
  thread_local std::map<int, cublasHandle_t> handles;
  auto it = handles.find(device.index);
  if (it == handles.end()) {
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) fail(op, "cublasCreate failed");
    it = handles.emplace(device.index, h).first;
  }
  if (cublasSetStream(it->second, stream_of(device)) != CUBLAS_STATUS_SUCCESS)
    fail(op, "cublasSetStream failed");
  return it->second;
}

// cuSOLVER's and cuBLAS's float and double entry points under one name.
cusolverStatus_t getrf_buffer(cusolverDnHandle_t h, int m, int n, float* a, int lda, int* lw) {
  return cusolverDnSgetrf_bufferSize(h, m, n, a, lda, lw);
}
cusolverStatus_t getrf_buffer(cusolverDnHandle_t h, int m, int n, double* a, int lda, int* lw) {
  return cusolverDnDgetrf_bufferSize(h, m, n, a, lda, lw);
}
cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, float* a, int lda, float* w, int* piv,
                       int* info) {
  return cusolverDnSgetrf(h, m, n, a, lda, w, piv, info);
}
cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, double* a, int lda, double* w, int* piv,
                       int* info) {
  return cusolverDnDgetrf(h, m, n, a, lda, w, piv, info);
}
cusolverStatus_t potrf_buffer(cusolverDnHandle_t h, int n, float* a, int lda, int* lw) {
  return cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, lda, lw);
}
cusolverStatus_t potrf_buffer(cusolverDnHandle_t h, int n, double* a, int lda, int* lw) {
  return cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, a, lda, lw);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, float* a, int lda, float* w, int lw,
                       int* info) {
  return cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, lda, w, lw, info);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, double* a, int lda, double* w, int lw,
                       int* info) {
  return cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, a, lda, w, lw, info);
}
cusolverStatus_t geqrf_buffer(cusolverDnHandle_t h, int m, int n, float* a, int lda, int* lw) {
  return cusolverDnSgeqrf_bufferSize(h, m, n, a, lda, lw);
}
cusolverStatus_t geqrf_buffer(cusolverDnHandle_t h, int m, int n, double* a, int lda, int* lw) {
  return cusolverDnDgeqrf_bufferSize(h, m, n, a, lda, lw);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, float* a, int lda, float* tau, float* w,
                       int lw, int* info) {
  return cusolverDnSgeqrf(h, m, n, a, lda, tau, w, lw, info);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, double* a, int lda, double* tau,
                       double* w, int lw, int* info) {
  return cusolverDnDgeqrf(h, m, n, a, lda, tau, w, lw, info);
}
cusolverStatus_t orgqr_buffer(cusolverDnHandle_t h, int m, int n, int k, const float* a, int lda,
                              const float* tau, int* lw) {
  return cusolverDnSorgqr_bufferSize(h, m, n, k, a, lda, tau, lw);
}
cusolverStatus_t orgqr_buffer(cusolverDnHandle_t h, int m, int n, int k, const double* a, int lda,
                              const double* tau, int* lw) {
  return cusolverDnDorgqr_bufferSize(h, m, n, k, a, lda, tau, lw);
}
cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, float* a, int lda,
                       const float* tau, float* w, int lw, int* info) {
  return cusolverDnSorgqr(h, m, n, k, a, lda, tau, w, lw, info);
}
cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, double* a, int lda,
                       const double* tau, double* w, int lw, int* info) {
  return cusolverDnDorgqr(h, m, n, k, a, lda, tau, w, lw, info);
}
cusolverStatus_t syevd_buffer(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, const float* a,
                              int lda, const float* w, int* lw) {
  return cusolverDnSsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, lda, w, lw);
}
cusolverStatus_t syevd_buffer(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, const double* a,
                              int lda, const double* w, int* lw) {
  return cusolverDnDsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, lda, w, lw);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float* a, int lda,
                       float* w, float* work, int lw, int* info) {
  return cusolverDnSsyevd(h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, lda, w, work, lw, info);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, double* a, int lda,
                       double* w, double* work, int lw, int* info) {
  return cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, lda, w, work, lw, info);
}
cublasStatus_t trsm(cublasHandle_t h, cublasFillMode_t uplo, cublasDiagType_t diag, int n, int k,
                    const float* a, float* b) {
  const float one = 1;
  return cublasStrsm(h, CUBLAS_SIDE_LEFT, uplo, CUBLAS_OP_N, diag, n, k, &one, a, n, b, n);
}
cublasStatus_t trsm(cublasHandle_t h, cublasFillMode_t uplo, cublasDiagType_t diag, int n, int k,
                    const double* a, double* b) {
  const double one = 1;
  return cublasDtrsm(h, CUBLAS_SIDE_LEFT, uplo, CUBLAS_OP_N, diag, n, k, &one, a, n, b, n);
}

template <class F>
void by_float(const Tensor& a, const char* op, F&& f) {
  const Launch launch(a.device(), op);
  switch (a.dtype()) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    default:
      fail<TypeError>(op, "the CUDA kernel takes float32 or float64, got ", dtype_name(a.dtype()));
  }
}

int as_int(int64_t v) {
  return static_cast<int>(v);
}

void getrf_cuda(const Tensor& a, bool pivot, const Tensor& pivots, const Tensor& info) {
  const char* op = "linalg_lu_factor";
  const int64_t batch = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
  const int64_t k = std::min(m, n);
  const int lda = as_int(std::max<int64_t>(m, 1));
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cusolverDnHandle_t h = solver_for(a.device(), op);
    int lwork = 0;
    check_solver(getrf_buffer(h, as_int(m), as_int(n), a.data<T>(), lda, &lwork), op,
                 "getrf_bufferSize");
    Tensor work = scratch(std::max(lwork, 1), a.dtype(), a.device());
    for (int64_t b = 0; b < batch; ++b)
      check_solver(getrf(h, as_int(m), as_int(n), a.data<T>() + b * m * n, lda, work.data<T>(),
                         pivot ? pivots.data<int>() + b * k : nullptr, info.data<int>() + b),
                   op, "getrf");
  });
}

void potrf_cuda(const Tensor& a, const Tensor& info) {
  const char* op = "linalg_cholesky";
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  const int lda = as_int(std::max<int64_t>(n, 1));
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cusolverDnHandle_t h = solver_for(a.device(), op);
    int lwork = 0;
    check_solver(potrf_buffer(h, as_int(n), a.data<T>(), lda, &lwork), op, "potrf_bufferSize");
    Tensor work = scratch(std::max(lwork, 1), a.dtype(), a.device());
    for (int64_t b = 0; b < batch; ++b)
      check_solver(potrf(h, as_int(n), a.data<T>() + b * n * n, lda, work.data<T>(), lwork,
                         info.data<int>() + b),
                   op, "potrf");
  });
}

void trsm_cuda(const Tensor& a, const Tensor& b, bool upper, bool unit) {
  const char* op = "linalg_solve_triangular";
  const int64_t batch = a.shape()[0], n = a.shape()[1], k = b.shape()[1];
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cublasHandle_t h = blas_for(a.device(), op);
    for (int64_t i = 0; i < batch; ++i)
      if (trsm(h, upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER,
               unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, as_int(n), as_int(k),
               a.data<T>() + i * n * n, b.data<T>() + i * n * k) != CUBLAS_STATUS_SUCCESS)
        fail(op, "cublas trsm failed");
  });
}

void geqrf_cuda(const Tensor& a, const Tensor& tau) {
  const char* op = "geqrf";
  const int64_t batch = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
  const int64_t k = std::min(m, n);
  const int lda = as_int(std::max<int64_t>(m, 1));
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cusolverDnHandle_t h = solver_for(a.device(), op);
    int lwork = 0;
    check_solver(geqrf_buffer(h, as_int(m), as_int(n), a.data<T>(), lda, &lwork), op,
                 "geqrf_bufferSize");
    Tensor work = scratch(std::max(lwork, 1), a.dtype(), a.device());
    Tensor info = scratch(1, DType::kInt32, a.device());
    for (int64_t b = 0; b < batch; ++b)
      check_solver(geqrf(h, as_int(m), as_int(n), a.data<T>() + b * m * n, lda,
                         tau.data<T>() + b * k, work.data<T>(), lwork, info.data<int>()),
                   op, "geqrf");
  });
}

void orgqr_cuda(const Tensor& a, const Tensor& tau) {
  const char* op = "linalg_householder_product";
  const int64_t batch = a.shape()[0], c = a.shape()[1], m = a.shape()[2], k = tau.shape()[1];
  const int lda = as_int(std::max<int64_t>(m, 1));
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cusolverDnHandle_t h = solver_for(a.device(), op);
    int lwork = 0;
    check_solver(
        orgqr_buffer(h, as_int(m), as_int(c), as_int(k), a.data<T>(), lda, tau.data<T>(), &lwork),
        op, "orgqr_bufferSize");
    Tensor work = scratch(std::max(lwork, 1), a.dtype(), a.device());
    Tensor info = scratch(1, DType::kInt32, a.device());
    for (int64_t b = 0; b < batch; ++b)
      check_solver(orgqr(h, as_int(m), as_int(c), as_int(k), a.data<T>() + b * m * c, lda,
                         tau.data<T>() + b * k, work.data<T>(), lwork, info.data<int>()),
                   op, "orgqr");
  });
}

void syevd_cuda(const Tensor& a, bool lower, const Tensor& w, const Tensor& info) {
  const char* op = "linalg_eigh";
  const int64_t batch = a.shape()[0], n = a.shape()[1];
  const int lda = as_int(std::max<int64_t>(n, 1));
  const cublasFillMode_t uplo = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  by_float(a, op, [&](auto t) {
    using T = decltype(t);
    cusolverDnHandle_t h = solver_for(a.device(), op);
    int lwork = 0;
    check_solver(syevd_buffer(h, uplo, as_int(n), a.data<T>(), lda, w.data<T>(), &lwork), op,
                 "syevd_bufferSize");
    Tensor work = scratch(std::max(lwork, 1), a.dtype(), a.device());
    for (int64_t b = 0; b < batch; ++b)
      check_solver(syevd(h, uplo, as_int(n), a.data<T>() + b * n * n, lda, w.data<T>() + b * n,
                         work.data<T>(), lwork, info.data<int>() + b),
                   op, "syevd");
  });
}

}  // namespace

OFL_REGISTER_KERNEL(getrf_kernel, DeviceType::kCUDA, getrf_cuda);
OFL_REGISTER_KERNEL(potrf_kernel, DeviceType::kCUDA, potrf_cuda);
OFL_REGISTER_KERNEL(trsm_kernel, DeviceType::kCUDA, trsm_cuda);
OFL_REGISTER_KERNEL(geqrf_kernel, DeviceType::kCUDA, geqrf_cuda);
OFL_REGISTER_KERNEL(orgqr_kernel, DeviceType::kCUDA, orgqr_cuda);
OFL_REGISTER_KERNEL(syevd_kernel, DeviceType::kCUDA, syevd_cuda);

}  // namespace ofl::internal::cuda
