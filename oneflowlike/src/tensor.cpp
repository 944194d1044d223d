#include <cstring>

#include "core/safetensors.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "oneflowlike/src/api_util.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace ofl {

using api::from_internal;
using api::guarded;
using api::to_internal;

static_assert(int(DType::kFloat64) == int(internal::DType::kFloat64) &&
                  int(DType::kBFloat16) == int(internal::DType::kBFloat16) &&
                  int(DType::kBool) == int(internal::DType::kBool) &&
                  int(DType::kComplex64) == int(internal::DType::kComplex64) &&
                  int(DType::kComplex128) == int(internal::DType::kComplex128),
              "the public DType mirrors the framework's");

const char* dtype_name(DType dtype) {
  return internal::dtype_name(to_internal(dtype));
}

size_t itemsize(DType dtype) {
  return internal::itemsize(to_internal(dtype));
}

Device::Device(const std::string& type, int index) {
  guarded([&] {
    if (index < 0) api::fail("device", "device index ", index, " of '", type, "' is negative");
    internal::Device d = internal::Device::parse(type);
    if (d.is_meta())
      api::fail("device", "the meta device holds no data: graphs run on cpu or cuda");
    type_ = internal::device_type_name(d.type);
    index_ = type.find(':') != std::string::npos ? d.index : index;
  });
}

std::string Device::str() const {
  return type_ == "cpu" ? type_ : type_ + ":" + std::to_string(index_);
}

Tensor::Tensor() = default;

Tensor::Tensor(std::shared_ptr<const internal::Tensor> impl) : impl_(std::move(impl)) {}

const internal::Tensor& Tensor::impl() const {
  if (!impl_) api::fail("tensor", "the tensor is undefined (default-constructed)");
  return *impl_;
}

namespace {

Tensor wrap(internal::Tensor t) {
  return Tensor(std::make_shared<const internal::Tensor>(std::move(t)));
}

void check_shape(const std::vector<int64_t>& shape, const char* what) {
  for (int64_t d : shape)
    if (d < 0) api::fail(what, "shape ", internal::shape_str(shape), " has a negative dimension");
}

}  // namespace

Tensor Tensor::from_blob(void* data, const std::vector<int64_t>& shape, DType dtype,
                         const Device& device) {
  return guarded([&] {
    check_shape(shape, "from_blob");
    const int64_t n = internal::numel_of(shape);
    if (!data && n > 0) api::fail("from_blob", "a null pointer for ", n, " elements");
    const size_t nbytes = size_t(n) * itemsize(dtype);
    auto storage = std::make_shared<internal::Storage>(data, nbytes, to_internal(device), [] {});
    return wrap(internal::Tensor::view_of(
        std::move(storage), shape, internal::contiguous_strides(shape), 0, to_internal(dtype)));
  });
}

Tensor Tensor::from_host(const void* data, size_t count, const std::vector<int64_t>& shape,
                         DType dtype) {
  return guarded([&] {
    check_shape(shape, "from_vector");
    if (internal::numel_of(shape) != int64_t(count))
      api::fail("from_vector", count, " values do not fill shape ", internal::shape_str(shape));
    internal::Tensor t = internal::Tensor::empty(shape, to_internal(dtype));
    if (count) std::memcpy(t.raw_data(), data, count * itemsize(dtype));
    return wrap(std::move(t));
  });
}

std::vector<int64_t> Tensor::shape() const {
  return impl().shape();
}
int64_t Tensor::dim() const {
  return impl().dim();
}
int64_t Tensor::numel() const {
  return impl().numel();
}
DType Tensor::dtype() const {
  return from_internal(impl().dtype());
}
Device Tensor::device() const {
  return from_internal(impl().device());
}
bool Tensor::is_contiguous() const {
  return impl().is_contiguous();
}

const void* Tensor::host_data(DType expected) const {
  const internal::Tensor& t = impl();
  if (from_internal(t.dtype()) != expected)
    api::fail("data", "data<", dtype_name(expected), ">() of a ", internal::dtype_name(t.dtype()),
              " tensor (convert with to(DType))");
  if (t.device().type != internal::DeviceType::kCPU)
    api::fail("data", "a ", t.device().str(), " tensor has no host pointer: to(\"cpu\") first");
  if (!t.is_contiguous())
    api::fail("data", "the ", t.str(), " tensor is not contiguous: contiguous() first");
  return t.raw_data();
}

Tensor Tensor::to(const Device& device) const {
  return guarded([&] { return wrap(internal::to_device(impl(), to_internal(device))); });
}
Tensor Tensor::to(DType dtype) const {
  return guarded([&] { return wrap(internal::to_dtype(impl(), to_internal(dtype))); });
}
Tensor Tensor::contiguous() const {
  return guarded([&] { return is_contiguous() ? *this : wrap(internal::contiguous(impl())); });
}
Tensor Tensor::clone() const {
  return guarded([&] { return wrap(internal::clone(impl())); });
}
std::string Tensor::str() const {
  return impl_ ? "Tensor(" + impl_->str() + " " + impl_->device().str() + ")" : "Tensor()";
}

std::map<std::string, Tensor> load_tensors(const std::string& path) {
  return guarded([&] {
    std::map<std::string, Tensor> out;
    for (auto& [name, t] : internal::safetensors::read(path)) out.emplace(name, wrap(t));
    return out;
  });
}

}  // namespace ofl
