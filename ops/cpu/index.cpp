// CPU kernels for index_select, index_add, gather, scatter_add and scatter (contiguous operands).
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

void index_check(const char* op, const Tensor& index, int64_t size, int64_t axis) {
  const int64_t* idx = index.data<int64_t>();
  for (int64_t i = 0, n = index.numel(); i < n; ++i)
    if (idx[i] < 0 || idx[i] >= size)
      fail<IndexError>(op, "index ", idx[i], " is out of range for dimension ", axis, " of size ",
                       size);
}

void index_select(const Tensor& x, const Tensor& index, int64_t outer, int64_t n, int64_t inner,
                  const Tensor& out) {
  const int64_t k = index.numel();
  const int64_t* idx = index.data<int64_t>();
  const size_t isz = itemsize(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const size_t row = inner * isz;
  parallel_for(outer * k, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   int64_t o = t / k, i = t % k;
                   std::memcpy(dst + t * row, src + (o * n + idx[i]) * row, row);
                 }
               });
}

void index_add(const Tensor& src, const Tensor& index, int64_t outer, int64_t n, int64_t inner,
               const Tensor& out) {
  const int64_t k = index.numel();
  const int64_t* idx = index.data<int64_t>();
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* s = src.data<T>();
    T* o = out.data<T>();
    // Parallel over outer rows and column blocks: no two tasks touch the same element.
    const int64_t block = 256, nblocks = (inner + block - 1) / block;
    parallel_for(outer * nblocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t ob = t / nblocks, c0 = (t % nblocks) * block, c1 = std::min(inner, c0 + block);
        for (int64_t i = 0; i < k; ++i) {
          const T* sr = s + (ob * k + i) * inner;
          T* dr = o + (ob * n + idx[i]) * inner;
          for (int64_t c = c0; c < c1; ++c) dr[c] = static_cast<T>(M(dr[c]) + M(sr[c]));
        }
      }
    });
  });
}

// Calls f(flat position in index, flat position in x) for every element of index, a row of its
// last dimension at a time.
template <class F>
void for_each_indexed(const Tensor& x, int64_t axis, const Tensor& index, F f) {
  const Shape& ishape = index.shape();
  const Shape xs = contiguous_strides(x.shape());
  const int64_t nd = index.dim(), total = index.numel();
  if (total == 0) return;
  const int64_t* idx = index.data<int64_t>();
  const int64_t inner = ishape[nd - 1], along = xs[axis];  // x's last stride is 1
  std::vector<int64_t> pos(nd, 0);                         // of the row's first element
  for (int64_t i = 0; i < total; i += inner) {
    int64_t base = 0;  // the row's offset, but along `axis`
    for (int64_t d = 0; d < nd - 1; ++d)
      if (d != axis) base += pos[d] * xs[d];
    if (axis == nd - 1) {
      for (int64_t j = 0; j < inner; ++j) f(i + j, base + idx[i + j] * along);
    } else {
      for (int64_t j = 0; j < inner; ++j) f(i + j, base + idx[i + j] * along + j);
    }
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++pos[d] < ishape[d]) break;
      pos[d] = 0;
    }
  }
}

// Moves one element per entry of index between x (at the indexed position, x holding `x_data`)
// and a contiguous buffer (at the entry's own position): gather reads x, scatter writes it.
// (memcpy of a size known when compiling: one move, with no aliasing of the element type.)
template <bool kIntoX, size_t kSize>
void move_elements(const Tensor& x, int64_t axis, const Tensor& index, char* at, char* entries) {
  for_each_indexed(x, axis, index, [&](int64_t i, int64_t off) {
    if constexpr (kIntoX)
      std::memcpy(at + off * int64_t(kSize), entries + i * int64_t(kSize), kSize);
    else
      std::memcpy(entries + i * int64_t(kSize), at + off * int64_t(kSize), kSize);
  });
}

template <bool kIntoX>
void move_indexed(const Tensor& x, int64_t axis, const Tensor& index, void* x_data, void* flat) {
  char* at = static_cast<char*>(x_data);
  char* entries = static_cast<char*>(flat);
  switch (itemsize(x.dtype())) {
    case 1:
      return move_elements<kIntoX, 1>(x, axis, index, at, entries);
    case 2:
      return move_elements<kIntoX, 2>(x, axis, index, at, entries);
    case 4:
      return move_elements<kIntoX, 4>(x, axis, index, at, entries);
    case 8:
      return move_elements<kIntoX, 8>(x, axis, index, at, entries);
    default:
      fail("gather", "no element move for ", dtype_name(x.dtype()));
  }
}

void gather(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& out) {
  if (x.dim() == 0) {
    if (index.numel()) std::memcpy(out.raw_data(), x.raw_data(), itemsize(x.dtype()));
    return;
  }
  move_indexed<false>(x, axis, index, x.raw_data(), out.raw_data());
}

void scatter_add(const Tensor& src, int64_t axis, const Tensor& index, const Tensor& out) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* s = src.data<T>();
    T* o = out.data<T>();
    if (out.dim() == 0) {
      for (int64_t i = 0; i < index.numel(); ++i) o[0] = static_cast<T>(M(o[0]) + M(s[i]));
      return;
    }
    for_each_indexed(out, axis, index,
                     [&](int64_t i, int64_t off) { o[off] = static_cast<T>(M(o[off]) + M(s[i])); });
  });
}

void scatter(const Tensor& src, int64_t axis, const Tensor& index, const Tensor& out) {
  const size_t isz = itemsize(out.dtype());
  if (out.dim() == 0) {
    const char* s = static_cast<const char*>(src.raw_data());
    if (index.numel()) std::memcpy(out.raw_data(), s + (index.numel() - 1) * isz, isz);
    return;
  }
  move_indexed<true>(out, axis, index, out.raw_data(), src.raw_data());
}

}  // namespace

OFL_REGISTER_KERNEL(index_check_kernel, DeviceType::kCPU, index_check);
OFL_REGISTER_KERNEL(index_select_kernel, DeviceType::kCPU, index_select);
OFL_REGISTER_KERNEL(index_add_kernel, DeviceType::kCPU, index_add);
OFL_REGISTER_KERNEL(gather_kernel, DeviceType::kCPU, gather);
OFL_REGISTER_KERNEL(scatter_add_kernel, DeviceType::kCPU, scatter_add);
OFL_REGISTER_KERNEL(scatter_kernel, DeviceType::kCPU, scatter);

}  // namespace ofl::internal::cpu
