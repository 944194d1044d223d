#include "core/primitives.h"

#include "core/dispatcher.h"
#include "core/error.h"

namespace ofl::internal {

OFL_DEFINE_KERNEL(copy_kernel, CopyKernel)
OFL_DEFINE_KERNEL(fill_kernel, FillKernel)

namespace {
void meta_copy(const Tensor&, const Tensor&) {}
void meta_fill(const Tensor&, double) {}
}  // namespace
OFL_REGISTER_KERNEL(copy_kernel, DeviceType::kMeta, meta_copy);
OFL_REGISTER_KERNEL(fill_kernel, DeviceType::kMeta, meta_fill);

Tensor contiguous_copy(const Tensor& x) {
  if (x.is_traced()) return call_op("clone", {x});  // no memory to copy: a node of the trace
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_kernel().get(x.device().type)(x, out);
  return out;
}

Tensor converted(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  copy_into(out, x);
  return out;
}

Tensor contiguous_local(const Tensor& x) {
  return x.is_contiguous() ? x : contiguous_copy(x);
}

void copy_into(const Tensor& dst, const Tensor& src) {
  // Between the host and a device, the device's kernel moves the data.
  const DeviceType t =
      dst.device().type == DeviceType::kCPU ? src.device().type : dst.device().type;
  copy_kernel().get(t)(src, dst);
}

void fill_into(const Tensor& dst, double value) {
  fill_kernel().get(dst.device().type)(dst, value);
}

Tensor filled(const Shape& shape, DType dtype, Device device, double value) {
  Tensor out = Tensor::empty(shape, dtype, device);
  fill_into(out, value);
  return out;
}

Tensor narrow_view(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  OFL_CHECK(
      axis >= 0 && axis < x.dim() && start >= 0 && length >= 0 && start + length <= x.shape()[axis],
      "narrow_view: [", start, ", ", start + length, ") of axis ", axis, " of ",
      shape_str(x.shape()));
  Shape shape = x.shape();
  shape[axis] = length;
  return Tensor::view_of(x.storage(), std::move(shape), x.strides(),
                         x.offset() + start * x.strides()[axis], x.dtype());
}

Tensor reshape_view(const Tensor& x, const Shape& shape) {
  OFL_CHECK(x.is_contiguous() && numel_of(shape) == x.numel(),
            "reshape_view: ", shape_str(x.shape()), " as ", shape_str(shape));
  return Tensor::view_of(x.storage(), shape, contiguous_strides(shape), x.offset(), x.dtype());
}

}  // namespace ofl::internal
