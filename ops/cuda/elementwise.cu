// CUDA kernels for the unary, binary and where families: one thread per output element, inputs
// broadcast to the output's shape and read at any strides, computing as the CPU kernels do
// (ops/cpu/elementwise.cpp; 16-bit floats in float).
#include <cmath>
#include <limits>

#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class Out, class In, class F>
__global__ void map1_kernel(Out* out, const In* in, int64_t n, Strided<2> walk, F f) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[2];
  walk.offsets(i, at);
  out[at[0]] = convert<Out>(f(convert<device_math_t<In>>(in[at[1]])));
}

template <class Out, class In, class F>
__global__ void map2_kernel(Out* out, const In* a, const In* b, int64_t n, Strided<3> walk, F f) {
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
      static_cast<device_t<Out>*>(out.raw_data()), static_cast<const device_t<In>*>(a.raw_data()),
      static_cast<const device_t<In>*>(b.raw_data()), n, strided<3>(out.shape(), strides, "binary"),
      f);
  check(cudaGetLastError(), "binary");
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  using M = device_math_t<device_t<T>>;
  auto to_m = [](double v) {  // saturate into M (clamp bounds may be +-inf for integers)
    const double lo = static_cast<double>(std::numeric_limits<M>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<M>::max());
    return static_cast<M>(v < lo ? lo : (v > hi ? hi : v));
  };
  const M ma = to_m(a), mb = to_m(b);
  auto run = [&](auto f) { map1<T, T>(in, out, f); };
  if constexpr (std::is_floating_point_v<M>) {
    switch (op) {
      case UnaryOp::kExp:
        return run([] __device__(M x) { return M(dm::exp(x)); });
      case UnaryOp::kLog:
        return run([] __device__(M x) { return M(dm::log(x)); });
      case UnaryOp::kSqrt:
        return run([] __device__(M x) { return M(dm::sqrt(x)); });
      case UnaryOp::kRsqrt:
        return run([] __device__(M x) { return M(1) / M(dm::sqrt(x)); });
      case UnaryOp::kSin:
        return run([] __device__(M x) { return M(dm::sin(x)); });
      case UnaryOp::kCos:
        return run([] __device__(M x) { return M(dm::cos(x)); });
      case UnaryOp::kTanh:
        return run([] __device__(M x) { return M(dm::tanh(x)); });
      case UnaryOp::kSigmoid:
        return run([] __device__(M x) { return M(1) / (M(1) + M(dm::exp(-x))); });
      case UnaryOp::kGelu:
        return run([] __device__(M x) { return M(0.5) * x * (M(1) + M(dm::erf(x / M(kSqrt2)))); });
      case UnaryOp::kGeluTanh:
        return run([] __device__(M x) {
          return M(0.5) * x * (M(1) + M(dm::tanh(M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x))));
        });
      case UnaryOp::kSilu:
        return run([] __device__(M x) { return x / (M(1) + M(dm::exp(-x))); });
      case UnaryOp::kPowScalar:
        if (a == 2.0) return run([] __device__(M x) { return x * x; });
        if (a == 0.5) return run([] __device__(M x) { return M(dm::sqrt(x)); });
        return run([ma] __device__(M x) { return M(dm::pow(x, ma)); });
      case UnaryOp::kFloor:
        return run([] __device__(M x) { return M(dm::floor(x)); });
      case UnaryOp::kCeil:
        return run([] __device__(M x) { return M(dm::ceil(x)); });
      case UnaryOp::kRound:
        return run([] __device__(M x) { return M(dm::nearbyint(x)); });
      case UnaryOp::kReciprocal:
        return run([] __device__(M x) { return M(1) / x; });
      case UnaryOp::kLog1p:
        return run([] __device__(M x) { return M(dm::log1p(x)); });
      case UnaryOp::kExpm1:
        return run([] __device__(M x) { return M(dm::expm1(x)); });
      case UnaryOp::kErf:
        return run([] __device__(M x) { return M(dm::erf(x)); });
      default:
        break;
    }
  } else {
    switch (op) {
      case UnaryOp::kPowScalar:
        return run([ma] __device__(M x) {
          M r = 1;
          for (int64_t e = 0; e < static_cast<int64_t>(ma); ++e) r = static_cast<M>(r * x);
          return r;
        });
      case UnaryOp::kFloor:
      case UnaryOp::kCeil:
      case UnaryOp::kRound:
        return run([] __device__(M x) { return x; });
      default:
        break;
    }
  }
  switch (op) {
    case UnaryOp::kNeg:
      return run([] __device__(M x) { return static_cast<M>(-x); });
    case UnaryOp::kAbs:
      return run([] __device__(M x) { return x < M(0) ? static_cast<M>(-x) : x; });
    case UnaryOp::kRelu:
      return run([] __device__(M x) { return x > M(0) ? x : M(0); });
    case UnaryOp::kSign:
      return run([] __device__(M x) { return static_cast<M>((M(0) < x) - (x < M(0))); });
    case UnaryOp::kSquare:
      return run([] __device__(M x) { return static_cast<M>(x * x); });
    case UnaryOp::kClamp:
      return run([ma, mb] __device__(M x) { return x < ma ? ma : (x > mb ? mb : x); });
    default:
      OFL_CHECK(false, "unary op not supported for this dtype");
  }
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
  using M = device_math_t<device_t<T>>;
  auto arith = [&](auto f) { map2<T, T>(a, b, out, f); };
  auto cmp = [&](auto f) { map2<bool, T>(a, b, out, f); };
  switch (op) {
    case BinaryOp::kEq:
      return cmp([] __device__(M x, M y) { return x == y; });
    case BinaryOp::kNe:
      return cmp([] __device__(M x, M y) { return x != y; });
    case BinaryOp::kLt:
      return cmp([] __device__(M x, M y) { return x < y; });
    case BinaryOp::kLe:
      return cmp([] __device__(M x, M y) { return x <= y; });
    case BinaryOp::kGt:
      return cmp([] __device__(M x, M y) { return x > y; });
    case BinaryOp::kGe:
      return cmp([] __device__(M x, M y) { return x >= y; });
    case BinaryOp::kLogicalAnd:
      return cmp([] __device__(M x, M y) { return bool(x) && bool(y); });
    case BinaryOp::kLogicalOr:
      return cmp([] __device__(M x, M y) { return bool(x) || bool(y); });
    case BinaryOp::kLogicalXor:
      return cmp([] __device__(M x, M y) { return bool(x) != bool(y); });
    default:
      break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kMaximum:
        return arith([] __device__(M x, M y) { return x || y; });
      case BinaryOp::kMul:
      case BinaryOp::kMinimum:
        return arith([] __device__(M x, M y) { return x && y; });
      default:
        OFL_CHECK(false, "binary op not supported for bool");
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return arith([] __device__(M x, M y) { return M(x + y); });
      case BinaryOp::kSub:
        return arith([] __device__(M x, M y) { return M(x - y); });
      case BinaryOp::kMul:
        return arith([] __device__(M x, M y) { return M(x * y); });
      case BinaryOp::kMaximum:
        return arith([] __device__(M x, M y) { return (x != x || x > y) ? x : y; });
      case BinaryOp::kMinimum:
        return arith([] __device__(M x, M y) { return (x != x || x < y) ? x : y; });
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<M>) {
      switch (op) {
        case BinaryOp::kDiv:
          return arith([] __device__(M x, M y) { return x / y; });
        case BinaryOp::kPow:
          return arith([] __device__(M x, M y) { return M(dm::pow(x, y)); });
        case BinaryOp::kFloorDiv:
          return arith([] __device__(M x, M y) { return M(dm::floor(x / y)); });
        case BinaryOp::kRemainder:
          return arith([] __device__(M x, M y) {
            M r = dm::fmod(x, y);
            return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
          });
        case BinaryOp::kGeluGrad:  // a = x, b = grad
          return arith([] __device__(M x, M g) {
            M cdf = M(0.5) * (M(1) + M(dm::erf(x / M(kSqrt2))));
            M pdf = M(dm::exp(M(-0.5) * x * x)) * M(kInvSqrt2Pi);
            return g * (cdf + x * pdf);
          });
        case BinaryOp::kGeluTanhGrad:
          return arith([] __device__(M x, M g) {
            M inner = M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x);
            M t = dm::tanh(inner);
            M dinner = M(kSqrt2OverPi) * (M(1) + M(3 * 0.044715) * x * x);
            return g * (M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * dinner);
          });
        case BinaryOp::kSiluGrad:
          return arith([] __device__(M x, M g) {
            M s = M(1) / (M(1) + M(dm::exp(-x)));
            return g * s * (M(1) + x * (M(1) - s));
          });
        case BinaryOp::kSigmoidGradFromOutput:
          return arith([] __device__(M y, M g) { return g * y * (M(1) - y); });
        case BinaryOp::kTanhGradFromOutput:
          return arith([] __device__(M y, M g) { return g * (M(1) - y * y); });
        default:
          break;
      }
    } else {
      switch (op) {
        case BinaryOp::kFloorDiv:
          return arith([] __device__(M x, M y) {
            if (y == 0) return M(0);
            M q = x / y;
            return ((x % y != 0) && ((x < 0) != (y < 0))) ? M(q - 1) : q;
          });
        case BinaryOp::kRemainder:
          return arith([] __device__(M x, M y) {
            if (y == 0) return M(0);
            M r = x % y;
            return (r != 0 && ((r < 0) != (y < 0))) ? M(r + y) : r;
          });
        case BinaryOp::kPow:
          return arith([] __device__(M x, M y) {
            M r = 1;
            for (int64_t e = 0; e < static_cast<int64_t>(y); ++e) r *= x;
            return r;
          });
        default:
          break;
      }
    }
    OFL_CHECK(false, "binary op not supported for this dtype");
  }
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_all(a.dtype(),
               [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, a, b, out); });
}

template <class T>
__global__ void where_select(T* out, const bool* cond, const T* a, const T* b, int64_t n,
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
        static_cast<T*>(out.raw_data()), static_cast<const bool*>(cond.raw_data()),
        static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()), n, walk);
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
