#include "core/primitives.h"

namespace ofl {

OFL_DEFINE_KERNEL(copy_kernel, CopyKernel)
OFL_DEFINE_KERNEL(fill_kernel, FillKernel)

namespace {
void meta_copy(const Tensor&, const Tensor&) {}
void meta_fill(const Tensor&, double) {}
}  // namespace
OFL_REGISTER_KERNEL(copy_kernel, DeviceType::kMeta, meta_copy);
OFL_REGISTER_KERNEL(fill_kernel, DeviceType::kMeta, meta_fill);

Tensor contiguous_copy(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_kernel().get(x.device().type)(x, out);
  return out;
}

}  // namespace ofl
