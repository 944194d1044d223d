// What the CUDA kernels share: error checks, the device types of our 16-bit floats, conversion
// between element types on the device, and strided indexing (up to kMaxDims dimensions after
// merging contiguous ones).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/half.h"
#include "core/primitives.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/elementwise_math.h"

namespace ofl::internal::cuda {

// Raises naming `what` (the op or the runtime call) with CUDA's message.
inline void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();  // not left behind for the next launch's check to report
  fail(what, "CUDA error: ", cudaGetErrorString(err));
}

// The stream kernels on `device` launch onto (core/stream.h; null: the legacy default).
inline cudaStream_t stream_of(Device device) {
  return static_cast<cudaStream_t>(current_stream(device).handle);
}

// Raises, naming `op`, what the kernel launches before it left (a bad configuration, a missing
// kernel image): launches report nothing themselves.
inline void launched(const char* op) {
  check(cudaGetLastError(), op);
}

// An op's kernel launches on `device`: made the current device (raising, naming `op`, where it
// cannot be) for the launch's scope; done() after the launches checks them.
class Launch {
 public:
  Launch(Device device, const char* op) : op_(op) { check(cudaSetDevice(device.index), op); }
  void done() const { launched(op_); }

 private:
  const char* op_;
};

// Our element type as the device sees it: Half and BFloat16 are CUDA's (same 16 bits).
template <class T>
struct DeviceElem {
  using type = T;
};
template <>
struct DeviceElem<Half> {
  using type = __half;
};
template <>
struct DeviceElem<BFloat16> {
  using type = __nv_bfloat16;
};
template <class T>
using device_t = typename DeviceElem<T>::type;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// x as a To, as the CPU converts: integers directly, floats through double (16-bit ones through
// float), to bool as x != 0.
template <class To, class From>
__device__ inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<From> && sizeof(To) < 4) {
    // Outside To's range (-1.0 to uint8) C++ leaves the cast undefined: the host wraps through a
    // 32-bit integer, the device saturates. Through int64 both wrap (PyTorch's cast to uint8).
    return static_cast<To>(static_cast<int64_t>(x));
  } else {
    return static_cast<To>(x);
  }
}

// The math functions by overload (float -> the f-suffixed ones): ops/elementwise_math.h's, since
// ops/elementwise.h's names (exp, log, ...) are tensor ops in this namespace.
namespace dm = ew;

inline constexpr int kMaxDims = 8;

// Element offsets of up to kOperands tensors walked together over one shape: linear index i of
// the shape (row-major) is element offsets(i)[k] of operand k.
template <int kOperands>
struct Strided {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kOperands][kMaxDims] = {};

  __device__ void offsets(int64_t i, int64_t (&out)[kOperands]) const {
    for (int k = 0; k < kOperands; ++k) out[k] = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const int64_t index = i % sizes[d];
      i /= sizes[d];
      for (int k = 0; k < kOperands; ++k) out[k] += index * strides[k][d];
    }
    // i < sizes[0] now (i < the product of sizes): the outermost dimension, the only one of a
    // contiguous walk, takes no 64-bit division.
    if (ndim > 0)
      for (int k = 0; k < kOperands; ++k) out[k] += i * strides[k][0];
  }
};

// The walk of `shape` over tensors with these strides (0 for broadcast dims), with dimensions
// merged where every operand is contiguous across them; raises past kMaxDims.
template <int kOperands>
Strided<kOperands> strided(const Shape& shape, const Shape (&strides)[kOperands], const char* op) {
  Strided<kOperands> s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = s.ndim > 0;
    for (int k = 0; merge && k < kOperands; ++k)
      merge = strides[k][d] * shape[d] == s.strides[k][s.ndim - 1];
    if (merge) {  // the previous dim steps over this one exactly
      s.sizes[s.ndim - 1] *= shape[d];
      for (int k = 0; k < kOperands; ++k) s.strides[k][s.ndim - 1] = strides[k][d];
      continue;
    }
    if (s.ndim == kMaxDims)
      fail(op, "CUDA kernels take at most ", kMaxDims, " non-contiguous dimensions, got ",
           shape_str(shape));
    s.sizes[s.ndim] = shape[d];
    for (int k = 0; k < kOperands; ++k) s.strides[k][s.ndim] = strides[k][d];
    ++s.ndim;
  }
  return s;
}

// src's strides as seen from `shape` (src broadcast to it): 0 along the dimensions it repeats.
inline Shape broadcast_strides(const Tensor& src, const Shape& shape) {
  Shape out(shape.size(), 0);
  const size_t lead = shape.size() - src.shape().size();
  for (size_t d = 0; d < src.shape().size(); ++d)
    out[lead + d] = src.shape()[d] == 1 ? 0 : src.strides()[d];
  return out;
}

// An input as a kernel reads it: a device pointer, or the value of a 0-d tensor on the host passed
// by value. Python scalars (wrapped numbers) and 0-d CPU tensors follow the other operands to the
// GPU (ops/op_def.cpp's common_device) without being copied there, and a kernel cannot read the
// host's pageable memory.
template <class T>
struct Input {
  const T* p = nullptr;  // null: every element is `value`
  T value{};
  __device__ T operator[](int64_t i) const { return p ? p[i] : value; }
};

template <class T>
Input<T> input(const Tensor& t) {
  Input<T> in;
  if (t.device().type != DeviceType::kCPU) {
    in.p = static_cast<const T*>(t.raw_data());
    return in;
  }
  OFL_CHECK(t.numel() == 1, "a host tensor of shape ", shape_str(t.shape()),
            " given to a CUDA kernel");
  std::memcpy(&in.value, t.raw_data(), sizeof(T));
  return in;
}

// t where a kernel on `device` can read it: a host tensor (a 0-d one following the others)
// copied there, others as they are.
inline Tensor on_device(const Tensor& t, Device device) {
  if (t.device().type != DeviceType::kCPU) return t;
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), device);
  copy_kernel().get(DeviceType::kCUDA)(t, copy);
  return copy;
}

// What 16-bit floats compute in on the device: float; other types themselves.
template <class T>
using device_math_t = std::conditional_t<is_half_v<T>, float, T>;

inline constexpr int kThreads = 256;

inline int64_t blocks_for(int64_t n, int threads) {
  return (n + threads - 1) / threads;
}

// A copy of a GPU tensor on the host (for checks that raise naming a value).
inline Tensor on_host(const Tensor& t) {
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  copy_kernel().get(DeviceType::kCUDA)(t, host);
  return host;
}

// Device scratch of `n` elements of `dtype`, from the caching allocator on `device`'s stream.
inline Tensor scratch(int64_t n, DType dtype, Device device) {
  return Tensor::empty({n}, dtype, device);
}

// Moves elements as unsigned integers of their size: a copy needs no arithmetic.
template <class F>
inline void by_itemsize(DType t, F&& f) {
  switch (itemsize(t)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

__device__ inline void add_to(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
template <class T>
__device__ inline void add_to(T* p, T v) {
  atomicAdd(p, v);
}

// Calls f with a value of the device type of floating `t` (core's dispatch_floating, with the
// device's 16-bit types); raises naming `op` for the others.
template <class F>
inline void with_device_floating(DType t, const char* op, F&& f) {
  dispatch_floating(t, op, [&](auto tag) { f(device_t<typename decltype(tag)::type>{}); });
}

// Calls f with a value of the device type of `t` where CUDA adds it atomically (floating types,
// int32, int64); raises naming `op` for the others.
template <class F>
inline void with_atomic_add(DType t, const char* op, F&& f) {
  if (t == DType::kInt32) return f(int32_t{});
  if (t == DType::kInt64) return f(int64_t{});
  with_device_floating(t, op, f);
}

}  // namespace ofl::internal::cuda
