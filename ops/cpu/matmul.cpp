// Batched matmul on the BLAS (float/double; 16-bit floats via float); integers by loops.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>

#include <vector>

#include "core/parallel.h"
#include "ops/cpu/gemm.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

// How one matrix operand is handed to the BLAS.
struct Operand {
  bool trans;
  int64_t ld;
  bool needs_copy;
};

// A rows x cols matrix with strides (rs, cs) in elements.
Operand classify(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1))
    return {false, std::max<int64_t>({rs, cols, 1}), false};
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1))
    return {true, std::max<int64_t>({cs, rows, 1}), false};
  return {false, std::max<int64_t>(cols, 1), true};
}

// Element offsets of every batch entry of t (whose last two dims are the matrix).
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t nb = t.dim() - 2;
  std::vector<int64_t> offs{0};
  for (int64_t d = 0; d < nb; ++d) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * t.shape()[d]);
    for (int64_t o : offs)
      for (int64_t i = 0; i < t.shape()[d]; ++i) next.push_back(o + i * t.strides()[d]);
    offs.swap(next);
  }
  return offs;
}

// Copies a strided rows x cols matrix into a dense row-major buffer.
template <class T>
const T* densify(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                 std::vector<T>& buf) {
  buf.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) buf[r * cols + c] = p[r * rs + c * cs];
  return buf.data();
}

template <class T>
void blas_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t nd = a.dim();
  const int64_t n = a.shape()[nd - 2], k = a.shape()[nd - 1], m = b.shape()[nd - 1];
  const std::vector<int64_t> ao = batch_offsets(a), bo = batch_offsets(b);
  const int64_t batch = static_cast<int64_t>(ao.size());
  const int64_t ars = a.strides()[nd - 2], acs = a.strides()[nd - 1];
  const int64_t brs = b.strides()[nd - 2], bcs = b.strides()[nd - 1];
  const Operand oa = classify(n, k, ars, acs), ob = classify(k, m, brs, bcs);
  tbb::enumerable_thread_specific<std::vector<T>> abufs, bbufs;
  T* c = out.data<T>();
  auto product = [&](int64_t i) {
    const T* pa = a.data<T>() + ao[i];
    const T* pb = b.data<T>() + bo[i];
    Operand la = oa, lb = ob;
    if (la.needs_copy) {
      pa = densify(pa, n, k, ars, acs, abufs.local());
      la = {false, std::max<int64_t>(k, 1), false};
    }
    if (lb.needs_copy) {
      pb = densify(pb, k, m, brs, bcs, bbufs.local());
      lb = {false, std::max<int64_t>(m, 1), false};
    }
    gemm<T>(la.trans, lb.trans, n, m, k, pa, la.ld, pb, lb.ld, T(0), c + i * n * m,
            std::max<int64_t>(m, 1));
  };
  // Many small products (attention heads, say) run one per task; large ones split inside gemm.
  const double work = static_cast<double>(n) * m * k;
  if (work <= kGemmTaskWork || batch >= 4 * tbb::this_task_arena::max_concurrency()) {
    const auto grain = static_cast<int64_t>(kGemmTaskWork / std::max(work, 1.0));
    parallel_for(batch, std::max<int64_t>(1, grain), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) product(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) product(i);
  }
}

template <class T>
void loop_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const int64_t nd = a.dim();
  const int64_t n = a.shape()[nd - 2], k = a.shape()[nd - 1], m = b.shape()[nd - 1];
  const std::vector<int64_t> ao = batch_offsets(a), bo = batch_offsets(b);
  const int64_t ars = a.strides()[nd - 2], acs = a.strides()[nd - 1];
  const int64_t brs = b.strides()[nd - 2], bcs = b.strides()[nd - 1];
  T* c = out.data<T>();
  const int64_t rows = static_cast<int64_t>(ao.size()) * n;
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(k * m, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t bi = lo; bi < hi; ++bi) {
                   int64_t i = bi / n, r = bi % n;
                   const T* pa = a.data<T>() + ao[i] + r * ars;
                   const T* pb = b.data<T>() + bo[i];
                   for (int64_t q = 0; q < m; ++q) {
                     A acc = 0;
                     for (int64_t p = 0; p < k; ++p)
                       acc += A(opmath_t<T>(pa[p * acs])) * A(opmath_t<T>(pb[p * brs + q * bcs]));
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
      Tensor af = Tensor::empty(a.shape(), DType::kFloat32);
      Tensor bf = Tensor::empty(b.shape(), DType::kFloat32);
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

}  // namespace ofl::internal::cpu
