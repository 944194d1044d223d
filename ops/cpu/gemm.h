// GEMM on the BLAS with oneTBB driving the parallelism: OpenBLAS runs single-threaded (set at
// load time) on row or column panels that oneTBB hands out, so the BLAS's own spinning
// workers never compete with oneTBB's for the cores.
#pragma once
#include <cstdint>

namespace ofl::internal::cpu {

// C (m x n) = op(A) @ op(B) + beta * C, row-major; op transposes when ta / tb.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

// Products at most this large (m * n * k) run as one task; larger ones are split into panels.
inline constexpr int64_t kGemmTaskWork = int64_t{1} << 18;

}  // namespace ofl::internal::cpu
