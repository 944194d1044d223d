// CUDA kernels of index_select / index_add (embeddings and their gradients) with the bounds
// check, and gather / scatter / scatter_add along an axis (where indices repeat, the last one
// wins, as on the CPU), as ops/cpu/index.cpp. A thread per element.
#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

void index_check(const char* op, const Tensor& index, int64_t size, int64_t axis) {
  index_check_kernel().get(DeviceType::kCPU)(op, on_host(index), size, axis);
}

template <class T>
__global__ void select_rows(const T* x, const int64_t* idx, T* out, int64_t outer, int64_t n,
                            int64_t k, int64_t inner) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * k * inner) return;
  const int64_t c = e % inner, t = e / inner, o = t / k, i = t % k;
  out[e] = x[(o * n + idx[i]) * inner + c];
}

void index_select(const Tensor& x_in, const Tensor& index_in, int64_t outer, int64_t n,
                  int64_t inner, const Tensor& out) {
  const int64_t k = index_in.numel(), total = outer * k * inner;
  if (total == 0) return;
  const Launch launch(out.device(), "index_select");
  // A 0-d host index (or x) follows the GPU operands unmoved (common_device): move it here.
  const Tensor x = on_device(x_in, out.device()), index = on_device(index_in, out.device());
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    select_rows<U><<<blocks_for(total, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const U*>(x.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<U*>(out.raw_data()), outer, n, k, inner);
  });
  launch.done();
}

template <class T>
__global__ void add_rows(const T* src, const int64_t* idx, T* out, int64_t outer, int64_t n,
                         int64_t k, int64_t inner) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= outer * k * inner) return;
  const int64_t c = e % inner, t = e / inner, o = t / k, i = t % k;
  add_to(out + (o * n + idx[i]) * inner + c, src[e]);
}

void index_add(const Tensor& src_in, const Tensor& index_in, int64_t outer, int64_t n,
               int64_t inner, const Tensor& out) {
  const int64_t k = index_in.numel(), total = outer * k * inner;
  if (total == 0) return;
  const Launch launch(out.device(), "index_add");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  with_atomic_add(out.dtype(), "index_add", [&](auto tag) {
    using T = decltype(tag);
    add_rows<T><<<blocks_for(total, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(src.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<T*>(out.raw_data()), outer, n, k, inner);
  });
  launch.done();
}

// --- gather / scatter_add along an axis, with a same-rank contiguous index ------------------

// Where element i of the index (row-major over its shape) reads or writes in a contiguous
// tensor: its own position, with the index's value along `axis`.
struct Along {
  int ndim = 0, axis = 0;
  int64_t ishape[kMaxDims] = {}, strides[kMaxDims] = {};

  __device__ int64_t offset(int64_t i, const int64_t* idx) const {
    int64_t off = 0;
    const int64_t value = idx[i];
    for (int d = ndim - 1; d >= 0; --d) {
      off += (d == axis ? value : i % ishape[d]) * strides[d];
      i /= ishape[d];
    }
    return off;
  }
};

Along along(const Tensor& t, int64_t axis, const Tensor& index, const char* op) {
  if (index.dim() > kMaxDims) fail(op, "CUDA kernels take at most ", kMaxDims, " dimensions");
  Along a;
  a.ndim = int(index.dim());
  a.axis = int(axis);
  const Shape strides = contiguous_strides(t.shape());
  for (int d = 0; d < a.ndim; ++d) {
    a.ishape[d] = index.shape()[d];
    a.strides[d] = strides[d];
  }
  return a;
}

template <class U>
__global__ void gather_elements(const U* x, const int64_t* idx, U* out, int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[where.ndim ? where.offset(i, idx) : 0];
}

void gather(const Tensor& x_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "gather");
  const Tensor x = on_device(x_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(x, axis, index, "gather");
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    gather_elements<U><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const U*>(x.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<U*>(out.raw_data()), n, where);
  });
  launch.done();
}

template <class T>
__global__ void scatter_add_elements(const T* src, const int64_t* idx, T* out, int64_t n,
                                     Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) add_to(out + (where.ndim ? where.offset(i, idx) : 0), src[i]);
}

void scatter_add(const Tensor& src_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "scatter_add");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(out, axis, index, "scatter_add");
  with_atomic_add(out.dtype(), "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    scatter_add_elements<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(src.raw_data()), static_cast<const int64_t*>(index.raw_data()),
        static_cast<T*>(out.raw_data()), n, where);
  });
  launch.done();
}

// scatter: where indices coincide the last one wins, as on the CPU. A first pass elects each
// destination's greatest source position, a second writes only the elected sources.
__global__ void elect_sources(const int64_t* idx, long long* winner, int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) atomicMax(winner + (where.ndim ? where.offset(i, idx) : 0), (long long)i);
}

template <class U>
__global__ void scatter_elected(const U* src, const int64_t* idx, const long long* winner, U* out,
                                int64_t n, Along where) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int64_t off = where.ndim ? where.offset(i, idx) : 0;
  if (winner[off] == i) out[off] = src[i];
}

void scatter(const Tensor& src_in, int64_t axis, const Tensor& index_in, const Tensor& out) {
  const int64_t n = index_in.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "scatter");
  const Tensor src = on_device(src_in, out.device()), index = on_device(index_in, out.device());
  const Along where = along(out, axis, index, "scatter");
  const Tensor winner = scratch(out.numel(), DType::kInt64, out.device());
  fill_kernel().get(DeviceType::kCUDA)(winner, -1);
  const cudaStream_t stream = stream_of(out.device());
  const auto* idx = static_cast<const int64_t*>(index.raw_data());
  auto* elected = static_cast<long long*>(winner.raw_data());
  elect_sources<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(idx, elected, n, where);
  by_itemsize(out.dtype(), [&](auto tag) {
    using U = decltype(tag);
    scatter_elected<U><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const U*>(src.raw_data()), idx, elected, static_cast<U*>(out.raw_data()), n,
        where);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(index_check_kernel, DeviceType::kCUDA, index_check);
OFL_REGISTER_KERNEL(index_select_kernel, DeviceType::kCUDA, index_select);
OFL_REGISTER_KERNEL(index_add_kernel, DeviceType::kCUDA, index_add);
OFL_REGISTER_KERNEL(gather_kernel, DeviceType::kCUDA, gather);
OFL_REGISTER_KERNEL(scatter_add_kernel, DeviceType::kCUDA, scatter_add);
OFL_REGISTER_KERNEL(scatter_kernel, DeviceType::kCUDA, scatter);

}  // namespace
}  // namespace ofl::internal::cuda
