#include "ops/cpu/gemm.h"

#include <cblas.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "core/parallel.h"

extern "C" void openblas_set_num_threads(int);

namespace ofl::internal::cpu {
namespace {

const bool blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

template <class T>
void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  const auto opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, opa, opb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  (void)blas_single_threaded;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const double work = static_cast<double>(m) * n * k;
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  if (work <= kGemmTaskWork || threads == 1)
    return blas<T>(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  // Panels of at least 32 rows (or columns), a few per thread for load balance.
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t panels = std::min<int64_t>(threads * 2, std::max<int64_t>(1, extent / 32));
  const int64_t step = (extent + panels - 1) / panels;
  parallel_for(panels, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t s0 = p * step, s1 = std::min(extent, s0 + step);
      if (s0 >= s1) continue;
      if (by_rows) {
        const T* ap = ta ? a + s0 : a + s0 * lda;
        blas<T>(ta, tb, s1 - s0, n, k, ap, lda, b, ldb, beta, c + s0 * ldc, ldc);
      } else {
        const T* bp = tb ? b + s0 * ldb : b + s0;
        blas<T>(ta, tb, m, s1 - s0, k, a, lda, bp, ldb, beta, c + s0, ldc);
      }
    }
  });
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace ofl::internal::cpu
