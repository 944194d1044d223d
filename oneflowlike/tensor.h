// The public C++ API's tensors, devices and dtypes. A Tensor is a handle: copies share the data,
// as in PyTorch. Every failure throws ofl::Error with a message naming what was wrong.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ofl {

namespace internal {
class Tensor;
}

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kComplex64,   // (real, imaginary) float32 pairs, as std::complex<float>
  kComplex128,  // (real, imaginary) float64 pairs, as std::complex<double>
};
const char* dtype_name(DType dtype);  // "float32", as in Python
size_t itemsize(DType dtype);

// The dtype of a C++ element type: dtype_of<float>() is DType::kFloat32.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::kInt8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kFloat64;
}

// "cpu", "cuda", "cuda:1"; Device("cuda", 1) is "cuda:1".
class Device {
 public:
  Device(const std::string& type = "cpu", int index = 0);  // NOLINT: "cpu" converts
  Device(const char* type) : Device(std::string(type)) {}  // NOLINT
  const std::string& type() const { return type_; }
  int index() const { return index_; }
  std::string str() const;
  bool operator==(const Device& other) const {
    return type_ == other.type_ && index_ == other.index_;
  }
  bool operator!=(const Device& other) const { return !(*this == other); }

 private:
  std::string type_;
  int index_ = 0;
};

class Tensor {
 public:
  Tensor();  // holds nothing: defined() is false
  // The caller's buffer as a contiguous tensor, not copied: it must outlive every use of the
  // tensor and of the graph outputs that alias it (use from_vector or clone() to copy).
  static Tensor from_blob(void* data, const std::vector<int64_t>& shape, DType dtype,
                          const Device& device = Device());
  // A copy of `values` on the CPU in `shape` (default: one dimension of values.size()).
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {int64_t(values.size())};
    return from_host(values.data(), values.size(), shape, dtype_of<T>());
  }

  bool defined() const { return impl_ != nullptr; }
  std::vector<int64_t> shape() const;
  int64_t dim() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;

  // The host pointer of a contiguous CPU tensor of dtype T; throws otherwise.
  template <class T>
  const T* data() const {
    return static_cast<const T*>(host_data(dtype_of<T>()));
  }
  template <class T>
  T* mutable_data() {
    return static_cast<T*>(const_cast<void*>(host_data(dtype_of<T>())));
  }
  // A host copy of the elements in row-major order (from any device and layout).
  template <class T>
  std::vector<T> to_vector() const {
    const Tensor host = to(Device("cpu")).contiguous();
    const T* p = host.data<T>();
    return std::vector<T>(p, p + host.numel());
  }

  Tensor to(const Device& device) const;
  Tensor to(DType dtype) const;
  Tensor contiguous() const;
  Tensor clone() const;
  std::string str() const;  // "Tensor((2, 8) int64 cpu)"

  // For the implementation: the framework's tensor this handle holds.
  explicit Tensor(std::shared_ptr<const internal::Tensor> impl);
  const internal::Tensor& impl() const;

 private:
  static Tensor from_host(const void* data, size_t count, const std::vector<int64_t>& shape,
                          DType dtype);
  const void* host_data(DType expected) const;
  std::shared_ptr<const internal::Tensor> impl_;
};

// Every tensor of a safetensors file (what flow.save writes), by name, on the CPU. Throws naming
// the file and the entry when it is missing, truncated or malformed.
std::map<std::string, Tensor> load_tensors(const std::string& path);

}  // namespace ofl
