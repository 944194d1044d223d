#include "core/tensor.h"

#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "core/primitives.h"

namespace ofl::internal {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) fail("empty", "negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      std::make_shared<Storage>(size_t(nbytes_of(shape, itemsize(dtype), "empty")), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset,
                       DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->is_view = true;
  return Tensor(std::move(impl));
}

Tensor Tensor::alias() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage();
  impl->shape = shape();
  impl->strides = strides();
  impl->offset = offset();
  impl->dtype = dtype();
  impl->traced = impl_->traced;  // a traced tensor's alias stands for the same graph value
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t axis) const {
  return shape()[normalize_axis(axis, dim(), "size")];
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // nothing to lay out, whatever the strides say
  int64_t expected = 1;
  for (size_t i = shape().size(); i-- > 0;) {
    if (shape()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= shape()[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return shape_str(shape()) + " " + dtype_name(dtype());
}

void Tensor::set_requires_grad(bool r, const char* op) {
  if (r && !is_differentiable(dtype()))
    fail<TypeError>(op, "only floating-point and complex tensors can require gradients, got ",
                    dtype_name(dtype()));
  if (!r && !is_leaf())
    fail(op, "cannot turn off requires_grad of a non-leaf tensor; use detach()");
  impl_->meta().requires_grad = r;
}

bool Tensor::is_leaf() const {
  return !impl_->autograd || !impl_->autograd->grad_fn;
}

Tensor Tensor::grad() const {
  return impl_->autograd ? impl_->autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  // Logical shapes: a traced gradient of a global tensor has no shard.
  if (g.defined() && (g.shape() != shape() || g.is_traced()))
    if (const Shape gs = meta_of(g).shape, s = meta_of(*this).shape; gs != s)
      fail("grad", "assigned gradient of shape ", shape_str(gs), " to a tensor of shape ",
           shape_str(s));
  impl_->meta().grad = g;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  return impl_->autograd ? impl_->autograd->grad_fn : none;
}

uint32_t Tensor::output_nr() const {
  return impl_->autograd ? impl_->autograd->output_nr : 0;
}

void Tensor::set_history(std::shared_ptr<autograd::Node> fn, uint32_t output_nr) {
  auto& m = impl_->meta();
  m.grad_fn = std::move(fn);
  m.output_nr = output_nr;
  m.requires_grad = true;
}

bool Tensor::retains_grad() const {
  return impl_->autograd && impl_->autograd->retains_grad;
}

void Tensor::retain_grad() {
  if (!requires_grad()) fail("retain_grad", "the tensor does not require grad");
  if (is_leaf()) return;
  impl_->meta().retains_grad = true;
  auto& retained = grad_fn()->retained();
  if (retained.size() <= output_nr()) retained.resize(output_nr() + 1);
  retained[output_nr()] = impl_;
}

void require_data(const char* op, const Tensor& t) {
  if (t.is_traced())
    fail(op, "data is not available while tracing a graph: the tensor of shape ",
         shape_str(t.shape()), " ", dtype_name(t.dtype()),
         " is symbolic (no .numpy(), .item() or Python control flow on its values inside "
         "build(); return it from build() instead)");
  if (t.device().is_meta())
    fail(op, "a meta tensor of shape ", shape_str(t.shape()),
         " has no data (meta tensors carry shapes and dtypes only)");
}

Tensor host_copy(const Tensor& t) {
  if (t.device().type == DeviceType::kCPU) return t;
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  copy_into(host, t);  // a copy to the host waits for the device's queued work
  return host;
}

}  // namespace ofl::internal
