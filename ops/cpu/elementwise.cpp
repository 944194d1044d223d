// CPU kernels for unary, binary, copy/cast, fill and where.
#include <cmath>
#include <limits>

#include "ops/cpu/loops.h"
#include "ops/cpu/vector_math.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class T>
void unary_typed(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  using M = opmath_t<T>;
  // Saturate the scalars into M's range (clamp bounds may be +-inf for integer tensors).
  auto to_m = [](double v) {
    constexpr double lo = static_cast<double>(std::numeric_limits<M>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<M>::max());
    return static_cast<M>(v < lo ? lo : (v > hi ? hi : v));
  };
  const M ma = to_m(a), mb = to_m(b);
  auto run = [&](auto f) { map1<T, T>(in, out, f); };
  if constexpr (std::is_floating_point_v<M>) {
    switch (op) {
      case UnaryOp::kExp:
        return run([](M x) { return std::exp(x); });
      case UnaryOp::kLog:
        return run([](M x) { return std::log(x); });
      case UnaryOp::kSqrt:
        return run([](M x) { return std::sqrt(x); });
      case UnaryOp::kRsqrt:
        return run([](M x) { return M(1) / std::sqrt(x); });
      case UnaryOp::kSin:
        return run([](M x) { return std::sin(x); });
      case UnaryOp::kCos:
        return run([](M x) { return std::cos(x); });
      case UnaryOp::kTanh:
        return run([](M x) { return std::tanh(x); });
      case UnaryOp::kSigmoid:
        return run([](M x) { return M(1) / (M(1) + std::exp(-x)); });
      case UnaryOp::kGelu:
        return run([](M x) { return M(0.5) * x * (M(1) + std::erf(x / M(kSqrt2))); });
      case UnaryOp::kGeluTanh:
        return run([](M x) {
          return M(0.5) * x * (M(1) + std::tanh(M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x)));
        });
      case UnaryOp::kSilu:
        return run([](M x) { return x / (M(1) + std::exp(-x)); });
      case UnaryOp::kPowScalar:
        if (a == 2.0) return run([](M x) { return x * x; });
        if (a == 0.5) return run([](M x) { return std::sqrt(x); });
        return run([ma](M x) { return std::pow(x, ma); });
      case UnaryOp::kFloor:
        return run([](M x) { return std::floor(x); });
      case UnaryOp::kCeil:
        return run([](M x) { return std::ceil(x); });
      case UnaryOp::kRound:
        return run([](M x) { return std::nearbyint(x); });
      case UnaryOp::kReciprocal:
        return run([](M x) { return M(1) / x; });
      case UnaryOp::kLog1p:
        return run([](M x) { return std::log1p(x); });
      case UnaryOp::kExpm1:
        return run([](M x) { return std::expm1(x); });
      case UnaryOp::kErf:
        return run([](M x) { return std::erf(x); });
      default:
        break;
    }
  } else {
    switch (op) {
      case UnaryOp::kPowScalar:
        return run([ma](M x) {
          M r = 1;
          for (int64_t e = 0; e < static_cast<int64_t>(ma); ++e) r = static_cast<M>(r * x);
          return r;
        });
      case UnaryOp::kFloor:
      case UnaryOp::kCeil:
      case UnaryOp::kRound:
        return run([](M x) { return x; });
      default:
        break;
    }
  }
  switch (op) {
    case UnaryOp::kNeg:
      return run([](M x) { return static_cast<M>(-x); });
    case UnaryOp::kAbs:
      return run([](M x) { return x < M(0) ? static_cast<M>(-x) : x; });
    case UnaryOp::kRelu:
      return run([](M x) { return x > M(0) ? x : M(0); });
    case UnaryOp::kSign:
      return run([](M x) { return static_cast<M>((M(0) < x) - (x < M(0))); });
    case UnaryOp::kSquare:
      return run([](M x) { return static_cast<M>(x * x); });
    case UnaryOp::kClamp:
      return run([ma, mb](M x) { return x < ma ? ma : (x > mb ? mb : x); });
    default:
      OFL_CHECK(false, "unary op not supported for this dtype");
  }
}

void unary(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  if (op == UnaryOp::kLogicalNot) {
    return dispatch_all(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map1<bool, T>(in, out, [](auto x) { return !static_cast<bool>(x); });
    });
  }
  dispatch_numeric(out.dtype(), "unary",
                   [&](auto tag) { unary_typed<typename decltype(tag)::type>(op, in, out, a, b); });
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  using M = opmath_t<T>;
  auto arith = [&](auto f) { map2<T, T>(a, b, out, f); };
  auto cmp = [&](auto f) { map2<bool, T>(a, b, out, f); };
  switch (op) {
    case BinaryOp::kEq:
      return cmp([](M x, M y) { return x == y; });
    case BinaryOp::kNe:
      return cmp([](M x, M y) { return x != y; });
    case BinaryOp::kLt:
      return cmp([](M x, M y) { return x < y; });
    case BinaryOp::kLe:
      return cmp([](M x, M y) { return x <= y; });
    case BinaryOp::kGt:
      return cmp([](M x, M y) { return x > y; });
    case BinaryOp::kGe:
      return cmp([](M x, M y) { return x >= y; });
    case BinaryOp::kLogicalAnd:
      return cmp([](M x, M y) { return bool(x) && bool(y); });
    case BinaryOp::kLogicalOr:
      return cmp([](M x, M y) { return bool(x) || bool(y); });
    case BinaryOp::kLogicalXor:
      return cmp([](M x, M y) { return bool(x) != bool(y); });
    default:
      break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kMaximum:
        return arith([](M x, M y) { return x || y; });
      case BinaryOp::kMul:
      case BinaryOp::kMinimum:
        return arith([](M x, M y) { return x && y; });
      default:
        OFL_CHECK(false, "binary op not supported for bool");
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return arith([](M x, M y) { return x + y; });
      case BinaryOp::kSub:
        return arith([](M x, M y) { return x - y; });
      case BinaryOp::kMul:
        return arith([](M x, M y) { return x * y; });
      case BinaryOp::kMaximum:
        return arith([](M x, M y) { return (x != x || x > y) ? x : y; });  // NaN propagates
      case BinaryOp::kMinimum:
        return arith([](M x, M y) { return (x != x || x < y) ? x : y; });
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<M>) {
      switch (op) {
        case BinaryOp::kDiv:
          return arith([](M x, M y) { return x / y; });
        case BinaryOp::kPow:
          return arith([](M x, M y) { return std::pow(x, y); });
        case BinaryOp::kFloorDiv:
          return arith([](M x, M y) { return std::floor(x / y); });
        case BinaryOp::kRemainder:
          return arith([](M x, M y) {
            M r = std::fmod(x, y);
            return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
          });
        case BinaryOp::kGeluGrad:  // a = x, b = grad
          return arith([](M x, M g) {
            M cdf = M(0.5) * (M(1) + std::erf(x / M(kSqrt2)));
            M pdf = std::exp(M(-0.5) * x * x) * M(kInvSqrt2Pi);
            return g * (cdf + x * pdf);
          });
        case BinaryOp::kGeluTanhGrad:
          return arith([](M x, M g) {
            M inner = M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x);
            M t = std::tanh(inner);
            M dinner = M(kSqrt2OverPi) * (M(1) + M(3 * 0.044715) * x * x);
            return g * (M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * dinner);
          });
        case BinaryOp::kSiluGrad:
          return arith([](M x, M g) {
            M s = M(1) / (M(1) + std::exp(-x));
            return g * s * (M(1) + x * (M(1) - s));
          });
        case BinaryOp::kSigmoidGradFromOutput:
          return arith([](M y, M g) { return g * y * (M(1) - y); });
        case BinaryOp::kTanhGradFromOutput:
          return arith([](M y, M g) { return g * (M(1) - y * y); });
        default:
          break;
      }
    } else {
      switch (op) {
        case BinaryOp::kFloorDiv:
          return arith([](M x, M y) {
            if (y == 0) return M(0);
            M q = x / y;
            return ((x % y != 0) && ((x < 0) != (y < 0))) ? M(q - 1) : q;
          });
        case BinaryOp::kRemainder:
          return arith([](M x, M y) {
            if (y == 0) return M(0);
            M r = x % y;
            return (r != 0 && ((r < 0) != (y < 0))) ? M(r + y) : r;
          });
        case BinaryOp::kPow:
          return arith([](M x, M y) {
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

void copy(const Tensor& src, const Tensor& dst) {
  dispatch_all(dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      if constexpr (std::is_same_v<D, bool>) {
        map1<D, S>(src, dst, [](auto x) { return x != decltype(x)(0); });
      } else {
        map1<D, S>(src, dst, [](auto x) { return static_cast<opmath_t<D>>(x); });
      }
    });
  });
}

void fill(const Tensor& dst, double value) {
  dispatch_all(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = static_cast<T>(static_cast<opmath_t<T>>(value));
    map1<T, T>(dst, dst, [v](auto) { return static_cast<opmath_t<T>>(v); });
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto plan = make_loop<4>(out.shape(), {&out, &cond, &a, &b});
    run_loop<4>(plan,
                [&](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
                  for (int64_t i = 0; i < n; ++i) {
                    bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
                    const char* src = c ? p[2] + i * s[2] : p[3] + i * s[3];
                    *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(src);
                  }
                });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(unary_kernel, DeviceType::kCPU, unary);
OFL_REGISTER_KERNEL(binary_kernel, DeviceType::kCPU, binary);
OFL_REGISTER_KERNEL(copy_kernel, DeviceType::kCPU, copy);
OFL_REGISTER_KERNEL(fill_kernel, DeviceType::kCPU, fill);
OFL_REGISTER_KERNEL(where_kernel, DeviceType::kCPU, where);

}  // namespace ofl::internal::cpu
