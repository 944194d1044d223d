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
  // Onto itself (an in-place op's output is its input): nothing to move. A KV cache written by
  // scatter_ would otherwise be copied whole at every token.
  if (dst.storage() == src.storage() && dst.offset() == src.offset() &&
      dst.dtype() == src.dtype() && dst.shape() == src.shape() && dst.strides() == src.strides())
    return;
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

Tensor complex_as_real(const Tensor& x) {
  OFL_CHECK(is_complex(x.dtype()), "complex_as_real of ", x.str());
  Shape shape = x.shape(), strides = x.strides();
  for (int64_t& s : strides) s *= 2;
  shape.push_back(2);
  strides.push_back(1);
  return Tensor::view_of(x.storage(), std::move(shape), std::move(strides), x.offset() * 2,
                         complex_part_dtype(x.dtype()));
}

Tensor real_as_complex(const Tensor& x) {
  OFL_CHECK((x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat64) && x.dim() > 0 &&
                x.shape().back() == 2 && x.offset() % 2 == 0,
            "real_as_complex of ", x.str());
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  Shape strides(x.strides().begin(), x.strides().end() - 1);
  for (int64_t& s : strides) s /= 2;
  return Tensor::view_of(x.storage(), std::move(shape), std::move(strides), x.offset() / 2,
                         complex_dtype_of(x.dtype()));
}

namespace {
// The real (part 0) or imaginary (part 1) floats of a complex x, with x's shape.
Tensor complex_part(const Tensor& x, int part) {
  Shape strides = x.strides();
  for (int64_t& s : strides) s *= 2;
  return Tensor::view_of(x.storage(), x.shape(), std::move(strides), x.offset() * 2 + part,
                         complex_part_dtype(x.dtype()));
}
}  // namespace

bool copy_complex(const Tensor& src, const Tensor& dst, CopyKernel* copy, FillKernel* fill) {
  const bool from = is_complex(src.dtype()), to = is_complex(dst.dtype());
  if (!from && !to) return false;
  if (from && to) {
    copy(complex_as_real(src), complex_as_real(dst));
  } else if (to) {
    copy(src, complex_part(dst, 0));
    fill(complex_part(dst, 1), 0.0);
  } else {
    copy(complex_part(src, 0), dst);
  }
  return true;
}

bool fill_complex(const Tensor& dst, double value, FillKernel* fill) {
  if (!is_complex(dst.dtype())) return false;
  fill(complex_part(dst, 0), value);
  fill(complex_part(dst, 1), 0.0);
  return true;
}

Tensor add_grads(const Tensor& a, const Tensor& b) {
  if (!is_complex(a.dtype()) || !is_complex(b.dtype())) return call_op("add", {a, b});
  // Through the view ops, so that global and traced gradients add up as well.
  const Tensor sum = call_op("add", {call_op("view_as_real", {a}), call_op("view_as_real", {b})});
  return call_op("view_as_complex", {sum});
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
