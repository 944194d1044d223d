// Declares glibc's libmvec vector variants of the math functions, so loops under
// `#pragma omp simd` call e.g. _ZGVeN16v_expf instead of expf one element at a time.
// (glibc only declares them under -ffast-math, which would also break NaN/inf semantics.)
#pragma once
#include <cmath>

#if defined(OFL_HAVE_LIBMVEC) && defined(__x86_64__) && defined(__GLIBC__)
#define OFL_SIMD_MATH __attribute__((simd("notinbranch")))
extern "C" {
OFL_SIMD_MATH float expf(float) noexcept;
OFL_SIMD_MATH float logf(float) noexcept;
OFL_SIMD_MATH float tanhf(float) noexcept;
OFL_SIMD_MATH float erff(float) noexcept;
OFL_SIMD_MATH float sinf(float) noexcept;
OFL_SIMD_MATH float cosf(float) noexcept;
OFL_SIMD_MATH float log1pf(float) noexcept;
OFL_SIMD_MATH float expm1f(float) noexcept;
OFL_SIMD_MATH double exp(double) noexcept;
OFL_SIMD_MATH double log(double) noexcept;
OFL_SIMD_MATH double tanh(double) noexcept;
OFL_SIMD_MATH double erf(double) noexcept;
OFL_SIMD_MATH double sin(double) noexcept;
OFL_SIMD_MATH double cos(double) noexcept;
OFL_SIMD_MATH double log1p(double) noexcept;
OFL_SIMD_MATH double expm1(double) noexcept;
}
#undef OFL_SIMD_MATH
#endif
