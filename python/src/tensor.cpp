// The Tensor class: properties, views, indexing and operator methods.
#include <pybind11/operators.h>

#include <map>

#include "convert.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "indexing.h"
#include "ops/ops.h"
#include "sbp/global_info.h"

namespace ofl::internal::py_bind {

namespace {

Tensor T(py::handle h, const char* op) {
  return as_tensor(h, op);
}

// scatter(dim, index, src) with src a tensor or a number, or scatter(dim, index, value=v).
Tensor scatter_arg(const Tensor& t, int64_t d, const Tensor& i, py::handle src, py::handle value) {
  py::handle v = src.is_none() ? value : src;
  if (v.is_none()) throw TypeError("[scatter] expects src or value");
  if (py::isinstance<Tensor>(v)) return scatter(t, d, i, v.cast<Tensor>());
  return scatter(t, d, i, v.cast<double>());
}

// (values, indices) as torch.return_types; leaked on purpose to outlive interpreter teardown.
py::object values_indices(const char* name, const Tensor& v, const Tensor& i) {
  static std::map<std::string, py::object*> types;
  py::object*& type = types[name];
  if (!type)
    type = new py::object(
        py::module_::import("collections").attr("namedtuple")(name, "values indices"));
  return (*type)(v, i);
}

std::string repr_dtype(DType t) {
  return std::string("oneflowlike.") + dtype_name(t);
}

py::object max_like(const Tensor& x, py::object dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return py::cast(is_max ? amax(x) : amin(x));
  auto [v, i] =
      is_max ? max_dim(x, dim.cast<int64_t>(), keepdim) : min_dim(x, dim.cast<int64_t>(), keepdim);
  return values_indices(is_max ? "max" : "min", v, i);
}

}  // namespace

void bind_tensor(py::module_& m) {
  auto cls = py::class_<Tensor>(m, "Tensor", py::dynamic_attr());
  cls.def(py::init([](const Tensor& other) { return other; }), py::arg("data"))
      .def(py::init([](py::args args) {
        if (args.size() == 0) return Tensor::empty({0}, DType::kFloat32);
        if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) {
          Tensor t = as_tensor(args[0], "Tensor");  // like torch.Tensor(data): always float32
          return t.dtype() == DType::kFloat32 ? contiguous_copy(t) : to_dtype(t, DType::kFloat32);
        }
        return Tensor::empty(shape_from_args(args, "Tensor"), DType::kFloat32);
      }))
      .def_property_readonly("shape",
                             [](const Tensor& t) {
                               const Shape& s = t.is_global() ? t.impl()->global->shape : t.shape();
                               return py::tuple(py::cast(s));
                             })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("is_global", [](const Tensor& t) { return t.is_global(); })
      .def_property_readonly("is_traced", [](const Tensor& t) { return t.is_traced(); })
      .def_property_readonly("_version", &Tensor::version)
      .def_property(
          "data", [](const Tensor& t) { return detach(t); },
          [](Tensor& t, const Tensor& other) {  // swaps in other's memory and layout (a
                                                // global tensor's too), keeps autograd state
            TensorImpl* impl = t.impl();
            impl->storage = other.storage();
            impl->shape = other.shape();
            impl->strides = other.strides();
            impl->offset = other.offset();
            impl->dtype = other.dtype();
            impl->global = other.impl()->global;
          })
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool r) { t.set_requires_grad(r, "requires_grad"); })
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            Tensor g = t.grad();
            return g.defined() ? py::cast(g) : py::none();
          },
          [](Tensor& t, py::object g) { t.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) -> py::object {
                               if (!t.grad_fn()) return py::none();
                               return py::cast(t.grad_fn());
                             })
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("element_size", [](const Tensor& t) { return itemsize(t.dtype()); })
      .def(
          "size",
          [](const Tensor& t, py::object dim) -> py::object {
            const Shape& s = t.is_global() ? t.impl()->global->shape : t.shape();
            if (dim.is_none()) return py::tuple(py::cast(s));
            return py::cast(s[normalize_axis(dim.cast<int64_t>(), s.size(), "size")]);
          },
          py::arg("dim") = py::none())
      .def(
          "stride",
          [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) return py::tuple(py::cast(t.strides()));
            return py::cast(t.strides()[normalize_axis(dim.cast<int64_t>(), t.dim(), "stride")]);
          },
          py::arg("dim") = py::none())
      .def("storage_offset", &Tensor::offset)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); })
      .def(
          "requires_grad_",
          [](Tensor& t, bool r) -> Tensor& {
            t.set_requires_grad(r);
            return t;
          },
          py::arg("requires_grad") = true, py::return_value_policy::reference)
      .def("retain_grad", &Tensor::retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def(
          "backward",
          [](const Tensor& t, py::object gradient, py::object retain_graph, bool create_graph) {
            Tensor g = gradient.is_none() ? Tensor() : as_tensor(gradient, "backward");
            bool retain = retain_graph.is_none() ? create_graph : retain_graph.cast<bool>();
            autograd::backward({t}, {g}, retain, create_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(),
          py::arg("create_graph") = false)
      .def("detach", [](const Tensor& t) { return detach(t); })
      .def(
          "detach_",
          [](Tensor& t) -> Tensor& {
            if (t.impl()->autograd) {
              t.impl()->autograd->grad_fn.reset();
              t.impl()->autograd->requires_grad = false;
            }
            return t;
          },
          py::return_value_policy::reference)
      .def("clone", [](const Tensor& t) { return clone(t); })
      .def("contiguous", [](const Tensor& t) { return contiguous(t); })
      .def("numpy", [](const Tensor& t) { return to_numpy(t); })
      .def(
          "__array__",
          [](const Tensor& t, py::object dtype, py::object) {
            py::array a = to_numpy(t);
            return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("item",
           [](const Tensor& t) -> py::object {
             if (t.numel() != 1)
               throw Error(str_cat("[item] a tensor with ", t.numel(),
                                   " elements cannot be converted to a Python scalar"));
             if (is_floating(t.dtype())) return py::float_(t.item<double>());
             if (t.dtype() == DType::kBool) return py::bool_(t.item<bool>());
             return py::int_(t.item<int64_t>());
           })
      .def("tolist",
           [](const Tensor& t) {
             Tensor c = t.dtype() == DType::kBFloat16 ? to_dtype(t, DType::kFloat32) : t;
             require_data("tolist", c);
             return to_numpy(host_copy(c)).attr("tolist")();  // any device, as PyTorch's
           })
      .def("to",
           [](const Tensor& t, py::args args, py::kwargs kwargs) {
             std::optional<DType> dt;
             std::optional<Device> device;
             for (auto a : args) {
               if (py::isinstance<DType>(a)) {
                 dt = a.cast<DType>();
               } else if (py::isinstance<Tensor>(a)) {  // other's dtype and device, as PyTorch's
                 dt = a.cast<Tensor>().dtype();
                 device = a.cast<Tensor>().device();
               } else if (py::isinstance<Device>(a)) {
                 device = a.cast<Device>();
               } else if (py::isinstance<py::str>(a)) {
                 device = Device::parse(a.cast<std::string>());
               }
             }
             if (kwargs.contains("dtype")) dt = to_dtype_opt(kwargs["dtype"]);
             if (kwargs.contains("device") && !kwargs["device"].is_none())
               device = py::isinstance<Device>(kwargs["device"])
                            ? kwargs["device"].cast<Device>()
                            : Device::parse(py::str(kwargs["device"]).cast<std::string>());
             Tensor out = device ? to_device(t, *device) : t;
             return dt ? to_dtype(out, *dt) : out;
           })
      .def("type", [](const Tensor& t, DType dt) { return to_dtype(t, dt); })
      .def("float", [](const Tensor& t) { return to_dtype(t, DType::kFloat32); })
      .def("double", [](const Tensor& t) { return to_dtype(t, DType::kFloat64); })
      .def("half", [](const Tensor& t) { return to_dtype(t, DType::kFloat16); })
      .def("bfloat16", [](const Tensor& t) { return to_dtype(t, DType::kBFloat16); })
      .def("long", [](const Tensor& t) { return to_dtype(t, DType::kInt64); })
      .def("int", [](const Tensor& t) { return to_dtype(t, DType::kInt32); })
      .def("bool", [](const Tensor& t) { return to_dtype(t, DType::kBool); })
      .def("cpu", [](const Tensor& t) { return to_device(t, Device{}); })
      .def(
          "cuda",
          [](const Tensor& t, int index) {
            return to_device(t, {DeviceType::kCUDA, index});
          },
          py::arg("device") = 0)
      // views
      .def("view",
           [](const Tensor& t, py::args a) {
             if (a.size() == 1 && py::isinstance<DType>(a[0]))
               return view_as_dtype(t, a[0].cast<DType>());
             return view(t, shape_from_args(a, "view"));
           })
      .def("view_as", [](const Tensor& t, const Tensor& o) { return view(t, o.shape()); })
      .def("reshape",
           [](const Tensor& t, py::args a) { return reshape(t, shape_from_args(a, "reshape")); })
      .def("reshape_as", [](const Tensor& t, const Tensor& o) { return reshape(t, o.shape()); })
      .def("permute",
           [](const Tensor& t, py::args a) { return permute(t, shape_from_args(a, "permute")); })
      .def(
          "transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); },
          py::arg("dim0"), py::arg("dim1"))
      .def("t",
           [](const Tensor& t) {
             if (t.dim() > 2)
               throw Error(str_cat("[t] expects a tensor with <= 2 dimensions, got ",
                                   shape_str(t.shape())));
             return t.dim() < 2 ? t : transpose(t, 0, 1);
           })
      .def_property_readonly("T",
                             [](const Tensor& t) {
                               std::vector<int64_t> dims(t.dim());
                               for (int64_t i = 0; i < t.dim(); ++i) dims[i] = t.dim() - 1 - i;
                               return permute(t, dims);
                             })
      .def_property_readonly("mT", [](const Tensor& t) { return transpose(t, -2, -1); })
      .def(
          "narrow",
          [](const Tensor& t, int64_t d, int64_t s, int64_t l) { return narrow(t, d, s, l); },
          py::arg("dim"), py::arg("start"), py::arg("length"))
      .def(
          "select", [](const Tensor& t, int64_t d, int64_t i) { return select(t, d, i); },
          py::arg("dim"), py::arg("index"))
      .def("expand",
           [](const Tensor& t, py::args a) { return expand(t, shape_from_args(a, "expand")); })
      .def("expand_as", [](const Tensor& t, const Tensor& o) { return expand(t, o.shape()); })
      .def(
          "squeeze",
          [](const Tensor& t, py::object dim) {
            if (dim.is_none()) return squeeze(t);
            return squeeze(t, to_axes(dim));
          },
          py::arg("dim") = py::none())
      .def(
          "unsqueeze", [](const Tensor& t, int64_t d) { return unsqueeze(t, d); }, py::arg("dim"))
      .def(
          "flatten", [](const Tensor& t, int64_t s, int64_t e) { return flatten(t, s, e); },
          py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unflatten",
           [](const Tensor& t, int64_t dim, py::object sizes) {
             dim = normalize_axis(dim, t.dim(), "unflatten");
             Shape s(t.shape().begin(), t.shape().begin() + dim);
             Shape mid = to_shape(sizes, "unflatten");
             s.insert(s.end(), mid.begin(), mid.end());
             s.insert(s.end(), t.shape().begin() + dim + 1, t.shape().end());
             return reshape(t, s);
           })
      .def(
          "split",
          [](const Tensor& t, py::object size, int64_t dim) {
            if (py::isinstance<py::int_>(size)) return split(t, size.cast<int64_t>(), dim);
            return split_sizes(t, to_shape(size, "split"), dim);
          },
          py::arg("split_size_or_sections"), py::arg("dim") = 0)
      .def(
          "chunk", [](const Tensor& t, int64_t c, int64_t d) { return chunk(t, c, d); },
          py::arg("chunks"), py::arg("dim") = 0)
      .def("__getitem__", [](const Tensor& t, py::handle key) { return index(t, key); })
      .def("__setitem__", [](Tensor& t, py::handle key, py::handle v) { set_index(t, key, v); })
      .def("__len__",
           [](const Tensor& t) {
             if (t.dim() == 0) throw TypeError("[len] len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__iter__",
           [](const Tensor& t) {
             if (t.dim() == 0) throw TypeError("[iter] iteration over a 0-d tensor");
             py::list items;
             for (int64_t i = 0; i < t.shape()[0]; ++i) items.append(select(t, 0, i));
             return py::iter(items);
           })
      .def("__bool__",
           [](const Tensor& t) {
             require_data("bool", t);
             if (t.numel() != 1)
               throw Error(str_cat("[bool] the truth value of a tensor with ", t.numel(),
                                   " elements is ambiguous"));
             return t.item<double>() != 0;
           })
      .def("__float__", [](const Tensor& t) { return t.item<double>(); })
      .def("__int__", [](const Tensor& t) { return t.item<int64_t>(); })
      .def("__index__",
           [](const Tensor& t) {
             if (!is_integral(t.dtype()) || t.numel() != 1)
               throw TypeError(
                   "[index] only integer tensors of a single element can be converted to an index");
             return t.item<int64_t>();
           })
      .def("__hash__", [](py::object self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  // Arithmetic: x op other, other op x, x op= other.
  auto bin = [&](const char* name, const char* rname, Tensor (*f)(const Tensor&, const Tensor&)) {
    cls.def(
        name, [f, name](const Tensor& a, py::handle b) { return f(a, T(b, name)); },
        py::arg("other"));
    if (rname)
      cls.def(rname, [f, rname](const Tensor& a, py::handle b) { return f(T(b, rname), a); });
  };
  bin("__mul__", "__rmul__", &mul);
  bin("__truediv__", "__rtruediv__", &div);
  bin("__floordiv__", "__rfloordiv__", &floor_divide);
  bin("__mod__", "__rmod__", &remainder);
  bin("__matmul__", "__rmatmul__", &matmul);
  bin("__and__", "__rand__", &logical_and);
  bin("__or__", "__ror__", &logical_or);
  bin("__xor__", "__rxor__", &logical_xor);
  bin("__eq__", nullptr, &eq);
  bin("__ne__", nullptr, &ne);
  bin("__lt__", nullptr, &lt);
  bin("__le__", nullptr, &le);
  bin("__gt__", nullptr, &gt);
  bin("__ge__", nullptr, &ge);
  bin("maximum", nullptr, &maximum);
  bin("minimum", nullptr, &minimum);
  bin("matmul", nullptr, &matmul);
  bin("eq", nullptr, &eq);
  bin("ne", nullptr, &ne);
  bin("lt", nullptr, &lt);
  bin("le", nullptr, &le);
  bin("gt", nullptr, &gt);
  bin("ge", nullptr, &ge);
  bin("logical_and", nullptr, &logical_and);
  bin("logical_or", nullptr, &logical_or);
  bin("logical_xor", nullptr, &logical_xor);
  cls.def("__add__", [](const Tensor& a, py::handle b) { return add(a, T(b, "add")); })
      .def("__radd__", [](const Tensor& a, py::handle b) { return add(T(b, "add"), a); })
      .def("__sub__", [](const Tensor& a, py::handle b) { return sub(a, T(b, "sub")); })
      .def("__rsub__", [](const Tensor& a, py::handle b) { return sub(T(b, "sub"), a); })
      .def(
          "add",
          [](const Tensor& a, py::handle b, double alpha) { return add(a, T(b, "add"), alpha); },
          py::arg("other"), py::arg("alpha") = 1.0)
      .def(
          "sub",
          [](const Tensor& a, py::handle b, double alpha) { return sub(a, T(b, "sub"), alpha); },
          py::arg("other"), py::arg("alpha") = 1.0)
      .def(
          "mul", [](const Tensor& a, py::handle b) { return mul(a, T(b, "mul")); },
          py::arg("other"))
      .def(
          "div", [](const Tensor& a, py::handle b) { return div(a, T(b, "div")); },
          py::arg("other"))
      .def("__pow__", [](const Tensor& a, py::handle b) { return pow_arg(a, b); })
      .def(
          "pow", [](const Tensor& a, py::handle b) { return pow_arg(a, b); }, py::arg("exponent"))
      .def("__rpow__", [](const Tensor& a, py::handle b) { return pow(T(b, "pow"), a); })
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__abs__", [](const Tensor& a) { return abs(a); })
      .def("__invert__", [](const Tensor& a) { return logical_not(a); })
      // in-place
      .def(
          "__iadd__", [](Tensor& a, py::handle b) -> Tensor& { return add_(a, T(b, "add_")); },
          py::return_value_policy::reference)
      .def(
          "__isub__", [](Tensor& a, py::handle b) -> Tensor& { return sub_(a, T(b, "sub_")); },
          py::return_value_policy::reference)
      .def(
          "__imul__", [](Tensor& a, py::handle b) -> Tensor& { return mul_(a, T(b, "mul_")); },
          py::return_value_policy::reference)
      .def(
          "__itruediv__", [](Tensor& a, py::handle b) -> Tensor& { return div_(a, T(b, "div_")); },
          py::return_value_policy::reference)
      .def(
          "add_",
          [](Tensor& a, py::handle b, double alpha) -> Tensor& {
            return add_(a, T(b, "add_"), alpha);
          },
          py::arg("other"), py::arg("alpha") = 1.0, py::return_value_policy::reference)
      .def(
          "sub_",
          [](Tensor& a, py::handle b, double alpha) -> Tensor& {
            return sub_(a, T(b, "sub_"), alpha);
          },
          py::arg("other"), py::arg("alpha") = 1.0, py::return_value_policy::reference)
      .def(
          "mul_", [](Tensor& a, py::handle b) -> Tensor& { return mul_(a, T(b, "mul_")); },
          py::return_value_policy::reference)
      .def(
          "div_", [](Tensor& a, py::handle b) -> Tensor& { return div_(a, T(b, "div_")); },
          py::return_value_policy::reference)
      .def(
          "copy_", [](Tensor& a, py::handle b) -> Tensor& { return copy_(a, T(b, "copy_")); },
          py::return_value_policy::reference)
      .def(
          "fill_", [](Tensor& a, double v) -> Tensor& { return fill_(a, v); },
          py::return_value_policy::reference)
      .def(
          "zero_", [](Tensor& a) -> Tensor& { return zero_(a); },
          py::return_value_policy::reference)
      .def(
          "clamp_",
          [](Tensor& a, std::optional<double> lo, std::optional<double> hi) -> Tensor& {
            return clamp_(a, lo, hi);
          },
          py::arg("min") = py::none(), py::arg("max") = py::none(),
          py::return_value_policy::reference)
      .def(
          "uniform_",
          [](Tensor& a, double lo, double hi, Generator* g) -> Tensor& {
            uniform_(a, lo, hi, g);
            return a;
          },
          py::arg("a") = 0.0, py::arg("b") = 1.0, py::arg("generator") = nullptr,
          py::return_value_policy::reference)
      .def(
          "normal_",
          [](Tensor& a, double mean, double std, Generator* g) -> Tensor& {
            normal_(a, mean, std, g);
            return a;
          },
          py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("generator") = nullptr,
          py::return_value_policy::reference)
      // reductions
      .def(
          "sum",
          [](const Tensor& t, py::object dim, bool keepdim, py::object dtype) {
            return sum(t, to_axes(dim), keepdim, to_dtype_opt(dtype));
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none())
      .def(
          "mean", [](const Tensor& t, py::object dim, bool k) { return mean(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "prod", [](const Tensor& t, py::object dim, bool k) { return prod(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "max",
          [](const Tensor& t, py::object dim, bool k) -> py::object {
            if (py::isinstance<Tensor>(dim)) return py::cast(maximum(t, dim.cast<Tensor>()));
            return max_like(t, dim, k, true);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "min",
          [](const Tensor& t, py::object dim, bool k) -> py::object {
            if (py::isinstance<Tensor>(dim)) return py::cast(minimum(t, dim.cast<Tensor>()));
            return max_like(t, dim, k, false);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "amax", [](const Tensor& t, py::object dim, bool k) { return amax(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "amin", [](const Tensor& t, py::object dim, bool k) { return amin(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "argmax",
          [](const Tensor& t, std::optional<int64_t> dim, bool k) { return argmax(t, dim, k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "argmin",
          [](const Tensor& t, std::optional<int64_t> dim, bool k) { return argmin(t, dim, k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "var",
          [](const Tensor& t, py::object dim, bool unbiased, bool k, std::optional<double> corr) {
            return var(t, to_axes(dim), corr.value_or(unbiased ? 1.0 : 0.0), k);
          },
          py::arg("dim") = py::none(), py::arg("unbiased") = true, py::arg("keepdim") = false,
          py::arg("correction") = py::none())
      .def(
          "std",
          [](const Tensor& t, py::object dim, bool unbiased, bool k, std::optional<double> corr) {
            return std(t, to_axes(dim), corr.value_or(unbiased ? 1.0 : 0.0), k);
          },
          py::arg("dim") = py::none(), py::arg("unbiased") = true, py::arg("keepdim") = false,
          py::arg("correction") = py::none())
      .def(
          "logsumexp",
          [](const Tensor& t, py::object dim, bool k) { return logsumexp(t, to_axes(dim), k); },
          py::arg("dim"), py::arg("keepdim") = false)
      .def(
          "all", [](const Tensor& t, py::object dim, bool k) { return all(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "any", [](const Tensor& t, py::object dim, bool k) { return any(t, to_axes(dim), k); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      // elementwise
      .def(
          "clamp",
          [](const Tensor& t, py::object lo, py::object hi) { return clamp_arg(t, lo, hi); },
          py::arg("min") = py::none(), py::arg("max") = py::none())
      .def(
          "masked_fill",
          [](const Tensor& t, const Tensor& mask, py::handle v) {
            return masked_fill(t, mask, T(v, "masked_fill"));
          },
          py::arg("mask"), py::arg("value"))
      .def(
          "softmax", [](const Tensor& t, int64_t d) { return softmax(t, d); }, py::arg("dim"))
      .def(
          "log_softmax", [](const Tensor& t, int64_t d) { return log_softmax(t, d); },
          py::arg("dim"))
      .def(
          "gelu", [](const Tensor& t, const std::string& a) { return gelu(t, a); },
          py::arg("approximate") = "none")
      .def(
          "index_select",
          [](const Tensor& t, int64_t d, const Tensor& i) { return index_select(t, d, i); },
          py::arg("dim"), py::arg("index"))
      .def(
          "gather", [](const Tensor& t, int64_t d, const Tensor& i) { return gather(t, d, i); },
          py::arg("dim"), py::arg("index"))
      .def(
          "scatter_add",
          [](const Tensor& t, int64_t d, const Tensor& i, const Tensor& s) {
            return scatter_add(t, d, i, s);
          },
          py::arg("dim"), py::arg("index"), py::arg("src"))
      .def(
          "index_add",
          [](const Tensor& t, int64_t d, const Tensor& i, const Tensor& s) {
            return index_add(t, d, i, s);
          },
          py::arg("dim"), py::arg("index"), py::arg("source"))
      .def(
          "where",
          [](const Tensor& t, const Tensor& c, py::handle o) { return where(c, t, T(o, "where")); },
          py::arg("condition"), py::arg("other"))
      .def(
          "masked_fill_",
          [](Tensor& t, const Tensor& mask, py::handle v) -> Tensor& {
            return masked_fill_(t, mask, T(v, "masked_fill_"));
          },
          py::arg("mask"), py::arg("value"), py::return_value_policy::reference)
      .def(
          "masked_select", [](const Tensor& t, const Tensor& m) { return masked_select(t, m); },
          py::arg("mask"))
      .def(
          "masked_scatter",
          [](const Tensor& t, const Tensor& m, const Tensor& s) { return masked_scatter(t, m, s); },
          py::arg("mask"), py::arg("source"))
      .def(
          "masked_scatter_",
          [](Tensor& t, const Tensor& m, const Tensor& s) -> Tensor& {
            return masked_scatter_(t, m, s);
          },
          py::arg("mask"), py::arg("source"), py::return_value_policy::reference)
      .def(
          "scatter",
          [](const Tensor& t, int64_t d, const Tensor& i, py::object src, py::object value) {
            return scatter_arg(t, d, i, src, value);
          },
          py::arg("dim"), py::arg("index"), py::arg("src") = py::none(),
          py::arg("value") = py::none())
      .def(
          "scatter_",
          [](Tensor& t, int64_t d, const Tensor& i, py::object src, py::object value) -> Tensor& {
            py::handle v = src.is_none() ? value : src;
            if (v.is_none()) throw TypeError("[scatter_] expects src or value");
            if (py::isinstance<Tensor>(v)) return scatter_(t, d, i, v.cast<Tensor>());
            return scatter_(t, d, i, v.cast<double>());
          },
          py::arg("dim"), py::arg("index"), py::arg("src") = py::none(),
          py::arg("value") = py::none(), py::return_value_policy::reference)
      .def(
          "topk",
          [](const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
            auto [v, i] = topk(t, k, dim, largest, sorted);
            return values_indices("topk", v, i);
          },
          py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true)
      .def(
          "sort",
          [](const Tensor& t, int64_t dim, bool descending, bool stable) {
            auto [v, i] = sort(t, dim, descending, stable);
            return values_indices("sort", v, i);
          },
          py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
          py::arg("stable") = false)
      .def(
          "argsort",
          [](const Tensor& t, int64_t dim, bool descending, bool stable) {
            return argsort(t, dim, descending, stable);
          },
          py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
          py::arg("stable") = false)
      .def(
          "cumsum",
          [](const Tensor& t, int64_t dim, py::object dtype) {
            return cumsum(t, dim, to_dtype_opt(dtype));
          },
          py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none())
      .def(
          "tril", [](const Tensor& t, int64_t k) { return tril(t, k); }, py::arg("diagonal") = 0)
      .def(
          "triu", [](const Tensor& t, int64_t k) { return triu(t, k); }, py::arg("diagonal") = 0)
      .def(
          "multinomial",
          [](const Tensor& t, int64_t n, bool replacement, Generator* g) {
            return multinomial(t, n, replacement, g);
          },
          py::arg("num_samples"), py::arg("replacement") = false, py::kw_only(),
          py::arg("generator") = nullptr);
  for (auto [name, f] : unary_functions()) cls.def(name, [f](const Tensor& t) { return f(t); });
}

}  // namespace ofl::internal::py_bind
