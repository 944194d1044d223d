// CPU kernels for unary, binary, copy/cast, fill and where.
#include "ops/cpu/loops.h"
#include "ops/cpu/vector_math.h"
#include "ops/elementwise_math.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

template <class T>
void unary_typed(UnaryOp op, const Tensor& in, const Tensor& out, double a, double b) {
  ew::visit_unary<opmath_t<T>>(op, a, b, [&](auto f) { map1<T, T>(in, out, f); });
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
  ew::visit_binary<opmath_t<T>>(
      op, [&](auto f) { map2<T, T>(a, b, out, f); }, [&](auto f) { map2<bool, T>(a, b, out, f); });
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_all(a.dtype(),
               [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, a, b, out); });
}

void fill(const Tensor& dst, double value);

void copy(const Tensor& src, const Tensor& dst) {
  if (copy_complex(src, dst, copy, fill)) return;
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
  if (fill_complex(dst, value, fill)) return;
  dispatch_all(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_with<T>(dst, static_cast<T>(static_cast<opmath_t<T>>(value)));
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
