// Module-level functions that are not ops: tensors from numpy arrays and Python data,
// conversions, and raw bytes for serialization.
#include "convert.h"
#include "core/safetensors.h"
#include "ops/ops.h"

namespace ofl::internal::py_bind {

void bind_functions(py::module_& m) {
  using py::arg;
  m.def("from_numpy", &from_numpy);
  m.def("as_tensor_arg", [](py::handle h) { return as_tensor(h, "tensor"); });
  m.def("tensor_bytes", [](const Tensor& t) {
    require_data("save", t);
    Tensor c = host_copy(contiguous(t));  // a device tensor's bytes come to the host first
    return py::bytes(static_cast<const char*>(c.raw_data()), c.numel() * itemsize(c.dtype()));
  });
  // The C++ reader of safetensors files (core/safetensors.h), which the C++ API loads weights
  // with: tensors by name.
  m.def(
      "read_safetensors", [](const std::string& path) { return safetensors::read(path); },
      py::arg("path"));
  m.def("tensor_from_bytes", [](py::buffer buf, DType d, const Shape& shape) {
    py::buffer_info info = buf.request();
    size_t n = static_cast<size_t>(numel_of(shape)) * itemsize(d);
    if (static_cast<size_t>(info.size * info.itemsize) != n)
      throw Error(str_cat("[load] buffer of ", info.size * info.itemsize, " bytes does not hold ",
                          shape_str(shape), " ", dtype_name(d), " (", n, " bytes)"));
    Tensor t = Tensor::empty(shape, d);
    std::memcpy(t.raw_data(), info.ptr, n);
    return t;
  });

  m.def("to_dtype", [](const Tensor& t, DType d) { return to_dtype(t, d); });
  // attention
  m.def("set_attention_allow_fused", [](bool allow) { attention_allow_fused() = allow; });
  m.def("attention_allow_fused", [] { return attention_allow_fused().load(); });
}

}  // namespace ofl::internal::py_bind
