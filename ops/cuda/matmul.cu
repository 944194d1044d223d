// Matmul on CUDA through cuBLAS (cublasGemmStridedBatchedEx): row-major operands are handed to
// the column-major library as their transposes (C^T = B^T A^T), any matrix whose rows or
// columns are contiguous is read in place, and batch dimensions that fold into one stride (or
// broadcast, stride 0) become one strided-batched call. fp32 computes in fp32 (TF32 when
// flow.backends.cuda.matmul.allow_tf32), fp64 in fp64, fp16 and bf16 in fp32.
#include <cublas_v2.h>

#include <map>

#include "core/primitives.h"
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("matmul", what, " failed: cuBLAS status ", int(status));
}

// One handle per device for each thread (a handle must not be shared between threads that use
// different streams), set to the current stream before each call.
cublasHandle_t handle_for(Device device) {
  thread_local std::map<int, cublasHandle_t> handles;
  auto it = handles.find(device.index);
  if (it == handles.end()) {
    cublasHandle_t h;
    check_blas(cublasCreate(&h), "cublasCreate");
    it = handles.emplace(device.index, h).first;
  }
  check_blas(cublasSetStream(it->second, stream_of(device)), "cublasSetStream");
  return it->second;
}

// How one operand (rows x cols per batch, its last two dims) is read: transposed or not for
// cuBLAS, its leading dimension, and the stride between batches.
struct Operand {
  bool row_major = true;  // rows contiguous: cuBLAS sees it transposed (no op on our side)
  int64_t ld = 0, batch_stride = 0;
};

// `t`'s layout as an operand, or none when it must be copied first: each matrix's rows or
// columns contiguous, the batch dims folding into one stride.
std::optional<Operand> layout_of(const Tensor& t, int64_t min_ld) {
  const int64_t nd = t.dim(), rows = t.shape()[nd - 2], cols = t.shape()[nd - 1];
  const int64_t sr = t.strides()[nd - 2], sc = t.strides()[nd - 1];
  Operand op;
  if (sc == 1 || cols == 1) {
    op.row_major = true;
    op.ld = std::max(sr, cols);
    if (rows > 1 && sr < cols) return std::nullopt;
  } else if (sr == 1 || rows == 1) {
    op.row_major = false;
    op.ld = std::max(sc, rows);
    if (cols > 1 && sc < rows) return std::nullopt;  // e.g. (n, 1) expanded to (n, m): sc = 0
  } else {
    return std::nullopt;
  }
  if (op.ld < min_ld) return std::nullopt;
  // Batch dims: all broadcast (0), or nested exactly (outer stride = inner stride * size). Dims
  // of size 1 are skipped: their strides are arbitrary and never stepped over.
  int64_t inner = -1;  // the batch dim of size > 1 inside d, once there is one
  for (int64_t d = nd - 3; d >= 0; --d) {
    if (t.shape()[d] == 1) continue;
    if (inner < 0)
      op.batch_stride = t.strides()[d];  // the innermost steps from one matrix to the next
    else if (t.strides()[d] != t.strides()[inner] * t.shape()[inner])
      return std::nullopt;  // (so is a stride 0 among nonzero ones)
    inner = d;
  }
  return op;
}

cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kFloat64:
      return CUDA_R_64F;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
    default:
      fail<TypeError>("matmul", "CUDA matmul takes floating-point tensors, got ", dtype_name(t));
  }
}

void matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  const int64_t nd = out.dim(), n = out.shape()[nd - 2], m = out.shape()[nd - 1];
  const int64_t k = a_in.shape().back();
  const int64_t batch = n * m == 0 ? 0 : out.numel() / (n * m);
  if (out.numel() == 0) return;
  const Launch launch(out.device(), "matmul");
  if (k == 0) return fill_into(out, 0);
  // C^T (m x n, column-major) = B^T (m x k) A^T (k x n): B is cuBLAS's first operand.
  Tensor a = a_in, b = b_in;
  std::optional<Operand> la = layout_of(a, 1), lb = layout_of(b, 1);
  if (!la) la = layout_of(a = contiguous_copy(a_in), 1);
  if (!lb) lb = layout_of(b = contiguous_copy(b_in), 1);
  // A row-major a (n x k, ld) is, column-major, A^T (k x n): used as is ("N"), ld >= k.
  // A column-major a is A (n x k): transposed ("T"), ld >= n. Likewise b with k and m.
  if (la->ld < (la->row_major ? k : n)) la = layout_of(a = contiguous_copy(a_in), 1);
  if (lb->ld < (lb->row_major ? m : k)) lb = layout_of(b = contiguous_copy(b_in), 1);
  const cublasOperation_t op_b = lb->row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = la->row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cudaDataType_t type = data_type(out.dtype());
  const bool fp64 = out.dtype() == DType::kFloat64;
  const bool tf32 = out.dtype() == DType::kFloat32 && matmul_allow_tf32().load();
  const cublasComputeType_t compute = fp64   ? CUBLAS_COMPUTE_64F
                                      : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                             : CUBLAS_COMPUTE_32F;
  const double one64 = 1, zero64 = 0;
  const float one32 = 1, zero32 = 0;
  const void* alpha = fp64 ? static_cast<const void*>(&one64) : &one32;
  const void* beta = fp64 ? static_cast<const void*>(&zero64) : &zero32;
  check_blas(cublasGemmStridedBatchedEx(handle_for(out.device()), op_b, op_a, int(m), int(n),
                                        int(k), alpha, b.raw_data(), type, int(lb->ld),
                                        lb->batch_stride, a.raw_data(), type, int(la->ld),
                                        la->batch_stride, beta, out.raw_data(), type, int(m), n * m,
                                        int(batch), compute, CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx");
}

OFL_REGISTER_KERNEL(matmul_kernel, DeviceType::kCUDA, matmul);

}  // namespace
}  // namespace ofl::internal::cuda
