// CUDA kernels for the unary, binary and where families: one thread per output element, inputs
// broadcast to the output's shape and read at any strides, computing the math the CPU kernels
// compute (ops/elementwise_math.h; 16-bit floats in float).
#include "ops/cuda/common.cuh"
#include "ops/elementwise_math.h"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

template <class Out, class In, class F>
__global__ void map1_kernel(Out* out, const In* in, int64_t n, Strided<2> walk, F f) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[2];
  walk.offsets(i, at);
  out[at[0]] = convert<Out>(f(convert<device_math_t<In>>(in[at[1]])));
}

template <class Out, class In, class F>
__global__ void map2_kernel(Out* out, Input<In> a, Input<In> b, int64_t n, Strided<3> walk, F f) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[3];
  walk.offsets(i, at);
  using M = device_math_t<In>;
  out[at[0]] = convert<Out>(f(convert<M>(a[at[1]]), convert<M>(b[at[2]])));
}

// out[i] = f(in[i]) (in broadcast to out), Out and In our element types.
template <class Out, class In, class F>
void map1(const Tensor& in, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "unary");
  const Shape strides[2] = {out.strides(), broadcast_strides(in, out.shape())};
  map1_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
      static_cast<device_t<Out>*>(out.raw_data()), static_cast<const device_t<In>*>(in.raw_data()),
      n, strided<2>(out.shape(), strides, "unary"), f);
  check(cudaGetLastError(), "unary");
}

template <class Out, class In, class F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "binary");
  const Shape strides[3] = {out.strides(), broadcast_strides(a, out.shape()),
                            broadcast_strides(b, out.shape())};
  map2_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
      static_cast<device_t<Out>*>(out.raw_data()), input<device_t<In>>(a), input<device_t<In>>(b),
      n, strided<3>(out.shape(), strides, "binary"), f);
  check(cudaGetLastError(), "binary");
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  ew::visit_unary<device_math_t<device_t<T>>>(op, a, b, [&](auto f) { map1<T, T>(in, out, f); });
}

struct LogicalNot {
  template <class X>
  __device__ bool operator()(X x) const {
    return !static_cast<bool>(x);
  }
};

void unary(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  if (op == UnaryOp::kLogicalNot) {
    return dispatch_all(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map1<bool, T>(in, out, LogicalNot{});
    });
  }
  dispatch_numeric(out.dtype(), "unary",
                   [&](auto tag) { unary_typed<typename decltype(tag)::type>(op, in, out, a, b); });
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  ew::visit_binary<device_math_t<device_t<T>>>(
      op, [&](auto f) { map2<T, T>(a, b, out, f); }, [&](auto f) { map2<bool, T>(a, b, out, f); });
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_all(a.dtype(),
               [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, a, b, out); });
}

template <class T>
__global__ void where_select(T* out, Input<bool> cond, Input<T> a, Input<T> b, int64_t n,
                             Strided<4> walk) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[4];
  walk.offsets(i, at);
  out[at[0]] = cond[at[1]] ? a[at[2]] : b[at[3]];
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "where");
  const Shape& shape = out.shape();
  const Shape strides[4] = {out.strides(), broadcast_strides(cond, shape),
                            broadcast_strides(a, shape), broadcast_strides(b, shape)};
  const Strided<4> walk = strided<4>(shape, strides, "where");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    where_select<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<T*>(out.raw_data()), input<bool>(cond), input<T>(a), input<T>(b), n, walk);
  });
  check(cudaGetLastError(), "where");
}

// tril / triu of the last two dims of a contiguous x: x where kept, 0 elsewhere.
template <class T>
__global__ void keep_triangle(const T* x, T* out, int64_t n, int64_t rows, int64_t cols, bool upper,
                              int64_t diagonal) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const int64_t j = e % cols, i = (e / cols) % rows;
  const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
  out[e] = keep ? x[e] : convert<T>(0);
}

void triangular(const Tensor& x, bool upper, int64_t diagonal, const Tensor& out) {
  const int64_t rows = x.shape()[x.dim() - 2], cols = x.shape()[x.dim() - 1], n = x.numel();
  if (n == 0) return;
  check(cudaSetDevice(out.device().index), "triu");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    keep_triangle<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, rows, cols, upper,
        diagonal);
  });
  check(cudaGetLastError(), "triu");
}

const bool registered = [] {
  triangular_kernel().set(DeviceType::kCUDA, triangular);
  unary_kernel().set(DeviceType::kCUDA, unary);
  binary_kernel().set(DeviceType::kCUDA, binary);
  where_kernel().set(DeviceType::kCUDA, where);
  return true;
}();

}  // namespace
}  // namespace ofl::internal::cuda
