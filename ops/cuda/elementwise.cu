// CUDA kernels for the unary, binary and where families: inputs broadcast to the output's shape
// and read at any strides, one thread per output element (dense operands: vectors of four a
// thread), computing the math the CPU kernels compute (ops/elementwise_math.h; 16-bit floats in
// float).
#include <algorithm>

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

// The dense kernels: out and every operand laid out alike without gaps (or an operand a host
// scalar), kVec elements a thread, moved as one vector load or store each.
inline constexpr int kVec = 4;

template <class T>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <class T>
__device__ void load(const Input<T>& in, int64_t i, T (&x)[kVec]) {
  if (!in.p) {
    for (int k = 0; k < kVec; ++k) x[k] = in.value;
    return;
  }
  const Pack<T> p = *reinterpret_cast<const Pack<T>*>(in.p + i);
  for (int k = 0; k < kVec; ++k) x[k] = p.v[k];
}

template <class Out, class In, class F>
__global__ void map1_dense(Out* out, const In* in, int64_t n, F f) {
  using M = device_math_t<In>;
  const int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * kVec;
  if (i + kVec <= n) {
    In x[kVec];
    load(Input<In>{in}, i, x);
    Pack<Out> o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) o.v[k] = convert<Out>(f(convert<M>(x[k])));
    *reinterpret_cast<Pack<Out>*>(out + i) = o;
  } else {
    for (int64_t j = i; j < n; ++j) out[j] = convert<Out>(f(convert<M>(in[j])));
  }
}

template <class Out, class In, class F>
__global__ void map2_dense(Out* out, Input<In> a, Input<In> b, int64_t n, F f) {
  using M = device_math_t<In>;
  const int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * kVec;
  if (i + kVec <= n) {
    In x[kVec], y[kVec];
    load(a, i, x);
    load(b, i, y);
    Pack<Out> o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) o.v[k] = convert<Out>(f(convert<M>(x[k]), convert<M>(y[k])));
    *reinterpret_cast<Pack<Out>*>(out + i) = o;
  } else {
    for (int64_t j = i; j < n; ++j) out[j] = convert<Out>(f(convert<M>(a[j]), convert<M>(b[j])));
  }
}

// Whether a walk over out and its operands is the dense case: one dimension, each operand at unit
// stride (a host scalar, stride 0, is passed by value) and every pointer aligned for a Pack.
template <int K>
bool dense(const Strided<K>& walk, const void* const (&ptrs)[K], const bool (&scalar)[K],
           size_t pack_bytes) {
  if (walk.ndim != 1) return false;
  for (int k = 0; k < K; ++k) {
    if (scalar[k]) continue;
    if (walk.strides[k][0] != 1 || reinterpret_cast<uintptr_t>(ptrs[k]) % pack_bytes != 0)
      return false;
  }
  return true;
}

inline int64_t dense_blocks(int64_t n) {
  return blocks_for((n + kVec - 1) / kVec, kThreads);
}

// out[i] = f(in[i]) (in broadcast to out), Out and In our element types.
template <class Out, class In, class F>
void map1(const Tensor& in, const Tensor& out, F f) {
  using O = device_t<Out>;
  using I = device_t<In>;
  const int64_t n = out.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "unary");
  const Shape strides[2] = {out.strides(), broadcast_strides(in, out.shape())};
  const Strided<2> walk = strided<2>(out.shape(), strides, "unary");
  O* o = static_cast<O*>(out.raw_data());
  const I* x = static_cast<const I*>(in.raw_data());
  cudaStream_t stream = stream_of(out.device());
  if (dense(walk, {o, x}, {false, false}, std::max(sizeof(Pack<O>), sizeof(Pack<I>))))
    map1_dense<<<dense_blocks(n), kThreads, 0, stream>>>(o, x, n, f);
  else
    map1_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(o, x, n, walk, f);
  launch.done();
}

template <class Out, class In, class F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  using O = device_t<Out>;
  using I = device_t<In>;
  const int64_t n = out.numel();
  if (n == 0) return;
  const Launch launch(out.device(), "binary");
  const Shape strides[3] = {out.strides(), broadcast_strides(a, out.shape()),
                            broadcast_strides(b, out.shape())};
  const Strided<3> walk = strided<3>(out.shape(), strides, "binary");
  O* o = static_cast<O*>(out.raw_data());
  const Input<I> x = input<I>(a), y = input<I>(b);
  cudaStream_t stream = stream_of(out.device());
  if (dense(walk, {o, x.p, y.p}, {false, !x.p, !y.p}, std::max(sizeof(Pack<O>), sizeof(Pack<I>))))
    map2_dense<<<dense_blocks(n), kThreads, 0, stream>>>(o, x, y, n, f);
  else
    map2_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(o, x, y, n, walk, f);
  launch.done();
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
  const Launch launch(out.device(), "where");
  const Shape& shape = out.shape();
  const Shape strides[4] = {out.strides(), broadcast_strides(cond, shape),
                            broadcast_strides(a, shape), broadcast_strides(b, shape)};
  const Strided<4> walk = strided<4>(shape, strides, "where");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    where_select<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<T*>(out.raw_data()), input<bool>(cond), input<T>(a), input<T>(b), n, walk);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(unary_kernel, DeviceType::kCUDA, unary);
OFL_REGISTER_KERNEL(binary_kernel, DeviceType::kCUDA, binary);
OFL_REGISTER_KERNEL(where_kernel, DeviceType::kCUDA, where);

}  // namespace
}  // namespace ofl::internal::cuda
