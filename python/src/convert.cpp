#include "convert.h"

#include "ops/ops.h"

namespace ofl::internal::py_bind {

DType dtype_of_array(const py::array& arr) {
  py::dtype dt = arr.dtype();
  char kind = dt.kind();
  size_t size = dt.itemsize();
  if (kind == 'b') return DType::kBool;
  if (kind == 'f' && size == 2) return DType::kFloat16;
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'i' && size == 1) return DType::kInt8;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'u' && size == 1) return DType::kUInt8;
  if (kind == 'c' && size == 8) return DType::kComplex64;
  if (kind == 'c' && size == 16) return DType::kComplex128;
  throw TypeError(str_cat("[from_numpy] numpy dtype ", std::string(py::str(dt)),
                          " is not supported (supported: bool, uint8, int8, int32, int64, "
                          "float16, float32, float64, complex64, complex128)"));
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kBool:
      return py::dtype("bool");
    case DType::kUInt8:
      return py::dtype("uint8");
    case DType::kInt8:
      return py::dtype("int8");
    case DType::kInt32:
      return py::dtype("int32");
    case DType::kInt64:
      return py::dtype("int64");
    case DType::kFloat16:
      return py::dtype("float16");
    case DType::kFloat32:
      return py::dtype("float32");
    case DType::kFloat64:
      return py::dtype("float64");
    case DType::kComplex64:
      return py::dtype("complex64");
    case DType::kComplex128:
      return py::dtype("complex128");
    case DType::kBFloat16:
      throw TypeError("[numpy] numpy has no bfloat16; convert with .float() first");
  }
  throw TypeError("[numpy] unknown dtype");
}

Tensor from_numpy(py::array arr) {
  DType dt = dtype_of_array(arr);
  const auto isz = static_cast<py::ssize_t>(itemsize(dt));
  bool usable = reinterpret_cast<uintptr_t>(arr.data()) % isz == 0;
  for (py::ssize_t d = 0; d < arr.ndim(); ++d)
    if (arr.strides(d) < 0 || arr.strides(d) % isz != 0) usable = false;
  if (!usable) {
    py::module_ np = py::module_::import("numpy");
    arr = np.attr("ascontiguousarray")(arr);
  }
  Shape shape(arr.ndim()), strides(arr.ndim());
  int64_t span = 1;  // elements spanned by the view
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
    shape[d] = arr.shape(d);
    strides[d] = arr.strides(d) / isz;
    if (shape[d] == 0) span = 0;
  }
  if (span != 0)
    for (py::ssize_t d = 0; d < arr.ndim(); ++d) span += (shape[d] - 1) * strides[d];
  auto keep = new py::object(arr);
  auto storage =
      std::make_shared<Storage>(const_cast<void*>(arr.data()), span * isz, Device{}, [keep]() {
        py::gil_scoped_acquire gil;
        delete keep;
      });
  Tensor t = Tensor::view_of(std::move(storage), shape, strides, 0, dt);
  t.impl()->is_view = false;
  return t;
}

py::array to_numpy(const Tensor& t) {
  require_data("numpy", t);
  if (t.device().type != DeviceType::kCPU)
    throw Error("[numpy] can't convert a " + t.device().str() + " tensor; call .cpu() first");
  py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides())
    strides.push_back(s * static_cast<py::ssize_t>(itemsize(t.dtype())));
  auto holder = new std::shared_ptr<Storage>(t.storage());
  py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  return py::array(dt, shape, strides, t.raw_data(), base);
}

Tensor as_tensor(py::handle obj, const char* op) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (py::isinstance<py::bool_>(obj)) return wrap_scalar(obj.cast<bool>(), DType::kBool);
  if (py::isinstance<py::int_>(obj)) {  // set directly: a double would round beyond 2**53
    Tensor t = Tensor::empty({}, DType::kInt64);
    *t.data<int64_t>() = obj.cast<int64_t>();
    t.set_wrapped_number(true);
    return t;
  }
  if (py::isinstance<py::float_>(obj)) return wrap_scalar(obj.cast<double>(), DType::kFloat64);
  if (PyComplex_Check(obj.ptr())) {  // a wrapped complex64 scalar (z * 1j)
    Tensor t = Tensor::empty({}, DType::kComplex64);
    t.data<float>()[0] = static_cast<float>(PyComplex_RealAsDouble(obj.ptr()));
    t.data<float>()[1] = static_cast<float>(PyComplex_ImagAsDouble(obj.ptr()));
    t.set_wrapped_number(true);
    return t;
  }
  if (py::isinstance<py::array>(obj) || py::isinstance<py::list>(obj) ||
      py::isinstance<py::tuple>(obj)) {
    py::module_ np = py::module_::import("numpy");
    py::array arr = np.attr("array")(obj);
    if (arr.ndim() == 0 && !py::isinstance<py::array>(obj))
      return as_tensor(arr.attr("item")(), op);
    if (arr.dtype().kind() == 'f' && !py::isinstance<py::array>(obj))
      arr = np.attr("asarray")(arr, py::str("float32"));
    if (arr.dtype().kind() == 'c' && !py::isinstance<py::array>(obj))  // PyTorch's default
      arr = np.attr("asarray")(arr, py::str("complex64"));
    return from_numpy(arr);
  }
  // numpy scalars and anything with __float__
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance(obj, np.attr("generic"))) return from_numpy(np.attr("array")(obj));
  throw TypeError(str_cat("[", op, "] expected a Tensor or a number, got ",
                          std::string(py::str(obj.get_type().attr("__name__")))));
}

Shape to_shape(py::handle obj, const char* op) {
  if (py::isinstance<py::int_>(obj)) return {obj.cast<int64_t>()};
  if (!py::isinstance<py::iterable>(obj))
    throw TypeError(str_cat("[", op, "] sizes must be ints or a sequence of ints, got ",
                            std::string(py::str(obj.get_type().attr("__name__")))));
  Shape s;
  try {
    for (auto item : obj) s.push_back(item.cast<int64_t>());
  } catch (const py::cast_error&) {
    throw TypeError(
        str_cat("[", op, "] expected a shape of ints, got ", std::string(py::str(obj))));
  }
  return s;
}

Shape shape_from_args(const py::args& args, const char* op) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return to_shape(args[0], op);
  Shape s;
  for (auto a : args) {
    if (!py::isinstance<py::int_>(a))
      throw TypeError(str_cat("[", op, "] sizes must be ints, got ",
                              std::string(py::str(a.get_type().attr("__name__")))));
    s.push_back(a.cast<int64_t>());
  }
  return s;
}

std::vector<int64_t> to_axes(py::handle obj) {
  if (obj.is_none()) return {};
  if (py::isinstance<py::int_>(obj)) return {obj.cast<int64_t>()};
  std::vector<int64_t> axes;
  for (auto a : obj) axes.push_back(a.cast<int64_t>());
  return axes;
}

std::optional<DType> to_dtype_opt(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return obj.cast<DType>();
}

std::shared_ptr<py::function> hold_callable(py::function fn) {
  return std::shared_ptr<py::function>(new py::function(std::move(fn)), [](py::function* f) {
    py::gil_scoped_acquire gil;
    delete f;
  });
}

}  // namespace ofl::internal::py_bind
