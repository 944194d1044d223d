// The SVD on CUDA through cuSOLVER's gesvd, one matrix at a time on the current stream. gesvd
// takes column-major matrices with at least as many rows as columns. A row-major wide or square
// A is the column-major A^T = V S U^T, so gesvd runs on it in place and writes our Vh and U
// directly; a tall A is first transposed into column-major order, and gesvd's U and Vh, column-
// major, are transposed into the outputs.
#include <cusolverDn.h>

#include <algorithm>
#include <map>

#include "core/primitives.h"
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void check_solver(cusolverStatus_t status, const char* what) {
  if (status != CUSOLVER_STATUS_SUCCESS)
    fail("linalg_svd", what, " failed: cuSOLVER status ", int(status));
}

// One handle per device for each thread, bound to the current stream before each use.
cusolverDnHandle_t solver_for(Device device) {
  thread_local std::map<int, cusolverDnHandle_t> handles;
  auto it = handles.find(device.index);
  if (it == handles.end()) {
    cusolverDnHandle_t h;
    check_solver(cusolverDnCreate(&h), "cusolverDnCreate");
    it = handles.emplace(device.index, h).first;
  }
  check_solver(cusolverDnSetStream(it->second, stream_of(device)), "cusolverDnSetStream");
  return it->second;
}

cusolverStatus_t gesvd_buffer(cusolverDnHandle_t h, int m, int n, float*, int* lwork) {
  return cusolverDnSgesvd_bufferSize(h, m, n, lwork);
}
cusolverStatus_t gesvd_buffer(cusolverDnHandle_t h, int m, int n, double*, int* lwork) {
  return cusolverDnDgesvd_bufferSize(h, m, n, lwork);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char job, int m, int n, float* a, int lda,
                       float* s, float* u, int ldu, float* vt, int ldvt, float* work, int lwork,
                       float* rwork, int* info) {
  return cusolverDnSgesvd(h, job, job, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, info);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char job, int m, int n, double* a, int lda,
                       double* s, double* u, int ldu, double* vt, int ldvt, double* work, int lwork,
                       double* rwork, int* info) {
  return cusolverDnDgesvd(h, job, job, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, info);
}

// The (batch, cols, rows) transpose of a contiguous (batch, rows, cols) tensor, as a view.
Tensor transposed(const Tensor& t) {
  const int64_t b = t.shape()[0], r = t.shape()[1], c = t.shape()[2];
  return Tensor::view_of(t.storage(), {b, c, r}, {r * c, 1, c}, t.offset(), t.dtype());
}

template <class T>
void svd_batch(const Tensor& a, bool full, const Tensor& u, const Tensor& s, const Tensor& vh) {
  const Device device = a.device();
  const Launch launch(device, "linalg_svd");
  const int64_t batch = a.shape()[0], m = a.shape()[1], n = a.shape()[2];
  const int64_t k = std::min(m, n);
  const bool tall = m > n;
  // gesvd's column-major M x N matrix (M >= N): A^T (n x m) unless A is tall, then A itself.
  const int64_t M = tall ? m : n, N = tall ? n : m;
  const auto copy = copy_kernel().get(DeviceType::kCUDA);
  // The matrices in column-major order, which gesvd overwrites.
  Tensor work_a = Tensor::empty(tall ? Shape{batch, n, m} : Shape{batch, m, n}, a.dtype(), device);
  copy(tall ? transposed(a) : a, work_a);
  // gesvd's U (M x M or M x N) and VT (N x N), column-major: for a wide A our Vh and U as they
  // are; for a tall one our U^T and Vh^T, in scratch.
  const int64_t ucols = full ? M : N;
  Tensor gu = tall ? Tensor::empty({batch, ucols, M}, a.dtype(), device) : vh;
  Tensor gvt = tall ? Tensor::empty({batch, N, N}, a.dtype(), device) : u;
  cusolverDnHandle_t h = solver_for(device);
  int lwork = 0;
  check_solver(gesvd_buffer(h, static_cast<int>(M), static_cast<int>(N), (T*)nullptr, &lwork),
               "gesvd_bufferSize");
  Tensor work = scratch(std::max(lwork, 1), a.dtype(), device);
  Tensor rwork = scratch(std::max<int64_t>(k, 1), a.dtype(), device);
  Tensor info = scratch(batch, DType::kInt32, device);
  for (int64_t i = 0; i < batch; ++i)
    check_solver(
        gesvd(h, full ? 'A' : 'S', static_cast<int>(M), static_cast<int>(N),
              work_a.data<T>() + i * m * n, static_cast<int>(M), s.data<T>() + i * k,
              gu.data<T>() + i * ucols * M, static_cast<int>(M), gvt.data<T>() + i * N * N,
              static_cast<int>(N), work.data<T>(), lwork, rwork.data<T>(), info.data<int>() + i),
        "gesvd");
  if (tall) {
    copy(transposed(gu), u);
    copy(transposed(gvt), vh);
  }
  const Tensor host_info = on_host(info);
  for (int64_t i = 0; i < batch; ++i) {
    const int status = host_info.data<int>()[i];
    if (status < 0) fail("linalg_svd", "cuSOLVER gesvd rejected argument ", -status);
    if (status > 0)
      fail("linalg_svd", "the SVD of matrix ", i, " of the batch (", m, " x ", n,
           ") did not converge (cuSOLVER gesvd info ", status, "); does it hold NaN or inf?");
  }
}

void svd(const Tensor& a, bool full_matrices, const Tensor& u, const Tensor& s, const Tensor& vh) {
  switch (a.dtype()) {
    case DType::kFloat32:
      return svd_batch<float>(a, full_matrices, u, s, vh);
    case DType::kFloat64:
      return svd_batch<double>(a, full_matrices, u, s, vh);
    default:
      fail<TypeError>("linalg_svd", "the CUDA kernel takes float32 or float64, got ",
                      dtype_name(a.dtype()));
  }
}

}  // namespace

OFL_REGISTER_KERNEL(svd_kernel, DeviceType::kCUDA, svd);

}  // namespace ofl::internal::cuda
