// CPU kernels for boolean-mask selection and scattering: serial, as the order is row-major.
#include <cstring>

#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

int64_t count_true(const Tensor& mask) {
  const bool* m = mask.data<bool>();
  int64_t count = 0;
  for (int64_t i = 0, n = mask.numel(); i < n; ++i) count += m[i];
  return count;
}

void masked_select(const Tensor& x, const Tensor& mask, const Tensor& out) {
  OFL_CHECK(count_true(mask) == out.numel(), "masked_select: the output holds ", out.numel(),
            " elements but the mask selects ", count_true(mask));
  const size_t isz = itemsize(x.dtype());
  const bool* m = mask.data<bool>();
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0, n = mask.numel(); i < n; ++i)
    if (m[i]) {
      std::memcpy(dst, src + i * isz, isz);
      dst += isz;
    }
}

void masked_scatter(const Tensor& mask, const Tensor& source, const Tensor& out) {
  const int64_t count = count_true(mask);
  if (count > source.numel())
    fail("masked_scatter", "the mask of shape ", shape_str(mask.shape()), " selects ", count,
         " elements but the source of shape ", shape_str(source.shape()), " has only ",
         source.numel());
  const size_t isz = itemsize(out.dtype());
  const bool* m = mask.data<bool>();
  const char* src = static_cast<const char*>(source.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0, n = mask.numel(); i < n; ++i)
    if (m[i]) {
      std::memcpy(dst + i * isz, src, isz);
      src += isz;
    }
}

}  // namespace

OFL_REGISTER_KERNEL(masked_select_kernel, DeviceType::kCPU, masked_select);
OFL_REGISTER_KERNEL(masked_scatter_kernel, DeviceType::kCPU, masked_scatter);

}  // namespace ofl::internal::cpu
