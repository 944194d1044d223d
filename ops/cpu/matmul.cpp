// Batched GEMM on OpenBLAS (float/double; 16-bit floats via float); integers by loops.
#include <cblas.h>

#include <vector>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::cpu {
namespace {

// How one matrix operand is handed to the BLAS: pointer, transpose flag, leading dimension.
struct Operand {
  CBLAS_TRANSPOSE trans;
  int64_t ld;
  bool needs_copy;
};

// rows x cols matrix with strides (rs, cs) in elements.
Operand classify(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1))
    return {CblasNoTrans, std::max<int64_t>({rs, cols, 1}), false};
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1))
    return {CblasTrans, std::max<int64_t>({cs, rows, 1}), false};
  return {CblasNoTrans, std::max<int64_t>(cols, 1), true};
}

template <class T>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, n, m, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, n, m, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

template <class T>
void blas_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t batch = a.shape()[0], n = a.shape()[1], k = a.shape()[2], m = b.shape()[2];
  T* c = out.data<T>();
  if (n == 0 || m == 0) return;
  if (k == 0) {
    std::fill(c, c + batch * n * m, T(0));
    return;
  }
  Operand oa = classify(n, k, a.strides()[1], a.strides()[2]);
  Operand ob = classify(k, m, b.strides()[1], b.strides()[2]);
  std::vector<T> abuf, bbuf;
  for (int64_t i = 0; i < batch; ++i) {
    const T* pa = a.data<T>() + i * a.strides()[0];
    const T* pb = b.data<T>() + i * b.strides()[0];
    if (oa.needs_copy) {
      abuf.resize(n * k);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t q = 0; q < k; ++q)
          abuf[r * k + q] = pa[r * a.strides()[1] + q * a.strides()[2]];
      pa = abuf.data();
    }
    if (ob.needs_copy) {
      bbuf.resize(k * m);
      for (int64_t r = 0; r < k; ++r)
        for (int64_t q = 0; q < m; ++q)
          bbuf[r * m + q] = pb[r * b.strides()[1] + q * b.strides()[2]];
      pb = bbuf.data();
    }
    gemm<T>(oa.trans, ob.trans, n, m, k, pa, oa.ld, pb, ob.ld, c + i * n * m,
            std::max<int64_t>(m, 1));
  }
}

template <class T>
void loop_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const int64_t batch = a.shape()[0], n = a.shape()[1], k = a.shape()[2], m = b.shape()[2];
  const auto& sa = a.strides();
  const auto& sb = b.strides();
  T* c = out.data<T>();
  parallel_for(batch * n, std::max<int64_t>(1, 4096 / std::max<int64_t>(k * m, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t bi = lo; bi < hi; ++bi) {
                   int64_t i = bi / n, r = bi % n;
                   const T* pa = a.data<T>() + i * sa[0] + r * sa[1];
                   const T* pb = b.data<T>() + i * sb[0];
                   for (int64_t q = 0; q < m; ++q) {
                     A acc = 0;
                     for (int64_t p = 0; p < k; ++p)
                       acc += A(opmath_t<T>(pa[p * sa[2]])) *
                              A(opmath_t<T>(pb[p * sb[1] + q * sb[2]]));
                     c[bi * m + q] = static_cast<T>(acc);
                   }
                 }
               });
}

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (a.dtype()) {
    case DType::kFloat32:
      return blas_bmm<float>(a, b, out);
    case DType::kFloat64:
      return blas_bmm<double>(a, b, out);
    case DType::kFloat16:
    case DType::kBFloat16: {  // through float32 GEMM, rounded once at the end
      auto copy = copy_kernel().get(DeviceType::kCPU);
      Tensor af = Tensor::empty(a.shape(), DType::kFloat32),
             bf = Tensor::empty(b.shape(), DType::kFloat32);
      Tensor of = Tensor::empty(out.shape(), DType::kFloat32);
      copy(a, af);
      copy(b, bf);
      blas_bmm<float>(af, bf, of);
      copy(of, out);
      return;
    }
    default:
      dispatch_all(a.dtype(), [&](auto tag) { loop_bmm<typename decltype(tag)::type>(a, b, out); });
  }
}

}  // namespace

OFL_REGISTER_KERNEL(matmul_kernel, DeviceType::kCPU, matmul);

}  // namespace ofl::cpu
