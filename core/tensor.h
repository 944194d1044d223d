// Tensor: a cheap handle to a strided view of a Storage, plus autograd metadata.
#pragma once
#include <memory>
#include <optional>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/storage.h"

namespace ofl::internal {

class TensorImpl;
struct GlobalInfo;  // sbp/global_info.h: logical shape, placement, NdSbp
struct TraceValue;  // graph/trace.h: the graph value a traced tensor stands for
namespace autograd {
class Node;
struct LeafHooks;  // core/autograd/node.h
}  // namespace autograd

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous tensor with uninitialised memory.
  static Tensor empty(const Shape& shape, DType dtype, Device device = {});
  // A view of `storage` (shared, not copied).
  static Tensor view_of(std::shared_ptr<Storage> storage, Shape shape, Shape strides,
                        int64_t offset, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }
  // A new handle on the same memory and layout, without autograd history or global layout (a
  // traced tensor's alias is still traced).
  Tensor alias() const;

  const Shape& shape() const;
  const Shape& strides() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;
  int64_t numel() const;
  int64_t offset() const;
  DType dtype() const;
  Device device() const;
  const std::shared_ptr<Storage>& storage() const;
  bool is_contiguous() const;
  // Address of element 0 of this view.
  void* raw_data() const;
  template <class T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  template <class T>
  T item() const;           // the single element, converted to T
  std::string str() const;  // "(2, 3) float32" for messages

  // --- autograd ---
  bool requires_grad() const;
  void set_requires_grad(bool r, const char* op = "requires_grad_");
  bool is_leaf() const;
  Tensor grad() const;
  void set_grad(const Tensor& g);
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  uint32_t output_nr() const;
  void set_history(std::shared_ptr<autograd::Node> fn, uint32_t output_nr);
  bool retains_grad() const;
  void retain_grad();
  uint64_t version() const { return storage()->version(); }
  void bump_version() const { storage()->bump_version(); }

  // Python scalars become 0-d "wrapped numbers" that do not drive type promotion.
  bool is_wrapped_number() const;
  bool is_global() const;
  // A symbolic tensor of a graph being traced: shape, dtype and device, no data.
  bool is_traced() const;
  void set_wrapped_number(bool w);

 private:
  std::shared_ptr<TensorImpl> impl_;
};

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;
  // A leaf's hooks (Tensor.register_hook, register_post_accumulate_grad_hook); a non-leaf's
  // register_hook sits on its grad_fn.
  std::shared_ptr<autograd::LeafHooks> hooks;
};

class TensorImpl {
 public:
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::kFloat32;
  bool is_wrapped_number = false;
  bool is_view = false;  // shares storage with a tensor it was derived from
  std::unique_ptr<AutogradMeta> autograd;
  // Set when this tensor is one rank's shard of a global tensor; shape/strides stay local.
  std::shared_ptr<const GlobalInfo> global;
  // Set on the symbolic tensors of a trace (graph mode).
  std::shared_ptr<const TraceValue> traced;

  AutogradMeta& meta() {
    if (!autograd) autograd = std::make_unique<AutogradMeta>();
    return *autograd;
  }
};

inline const Shape& Tensor::shape() const {
  return impl_->shape;
}
inline const Shape& Tensor::strides() const {
  return impl_->strides;
}
inline int64_t Tensor::offset() const {
  return impl_->offset;
}
inline DType Tensor::dtype() const {
  return impl_->dtype;
}
inline Device Tensor::device() const {
  return impl_->storage->device();
}
inline const std::shared_ptr<Storage>& Tensor::storage() const {
  return impl_->storage;
}
inline int64_t Tensor::numel() const {
  return numel_of(impl_->shape);
}
inline void* Tensor::raw_data() const {
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * itemsize(impl_->dtype);
}
inline bool Tensor::requires_grad() const {
  return impl_->autograd && impl_->autograd->requires_grad;
}
inline bool Tensor::is_global() const {
  return impl_->global != nullptr;
}
inline bool Tensor::is_traced() const {
  return impl_->traced != nullptr;
}
inline bool Tensor::is_wrapped_number() const {
  return impl_->is_wrapped_number;
}
inline void Tensor::set_wrapped_number(bool w) {
  impl_->is_wrapped_number = w;
}

// Raises naming op for tensors without data: meta tensors, and traced ones (while a graph is
// traced, values are symbolic: no .numpy(), .item() or Python control flow on them).
void require_data(const char* op, const Tensor& t);
// t itself on the host; a host copy of a device tensor (its device's work on it done first).
Tensor host_copy(const Tensor& t);

template <class T>
T Tensor::item() const {
  if (numel() != 1)
    fail("item", "only a tensor with one element can be converted to a scalar, got shape ",
         shape_str(shape()));
  require_data("item", *this);
  if (device().type != DeviceType::kCPU) return host_copy(*this).item<T>();
  return dispatch_all(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return static_cast<T>(static_cast<opmath_t<S>>(*data<S>()));
  });
}

}  // namespace ofl::internal
