// The Tensor class: properties, conversions, indexing and Python's operators (the op methods are
// bound from the registry: op_binding.cpp).
#include <pybind11/operators.h>

#include "convert.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "indexing.h"
#include "ops/ops.h"
#include "sbp/global_info.h"

namespace ofl::internal::py_bind {

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
      .def("numel",  // logical, as the shape: a global tensor's, not its shard's
           [](const Tensor& t) {
             return t.is_global() ? numel_of(t.impl()->global->shape) : t.numel();
           })
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
      .def(
          "_register_hook",
          [](const Tensor& t, py::function fn) {
            auto hook = hold_callable(std::move(fn));
            return autograd::add_grad_hook(t, [hook](const Tensor& g) -> Tensor {
              py::gil_scoped_acquire gil;
              py::object out = (*hook)(g);
              return out.is_none() ? Tensor() : as_tensor(out, "register_hook");
            });
          },
          py::arg("hook"))
      .def(
          "_register_post_accumulate_grad_hook",
          [](const Tensor& t, py::function fn) {
            auto hook = hold_callable(std::move(fn));
            return autograd::add_post_accumulate_grad_hook(t, [hook](const Tensor& leaf) {
              py::gil_scoped_acquire gil;
              (*hook)(leaf);
            });
          },
          py::arg("hook"))
      .def("_remove_hook", [](const Tensor& t, int id) { return autograd::remove_hook(t, id); })
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
             if (is_complex(t.dtype())) {  // a Python complex, as PyTorch's
               require_data("item", t);
               return to_numpy(host_copy(t)).attr("item")();
             }
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
      .def_property_readonly("T",
                             [](const Tensor& t) {
                               std::vector<int64_t> dims(t.dim());
                               for (int64_t i = 0; i < t.dim(); ++i) dims[i] = t.dim() - 1 - i;
                               return permute(t, dims);
                             })
      .def_property_readonly("mT", [](const Tensor& t) { return transpose(t, -2, -1); })
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
        name, [f, name](const Tensor& a, py::handle b) { return f(a, as_tensor(b, name)); },
        py::arg("other"));
    if (rname)
      cls.def(rname,
              [f, rname](const Tensor& a, py::handle b) { return f(as_tensor(b, rname), a); });
  };
  bin("__mul__", "__rmul__", &mul);
  bin("__truediv__", "__rtruediv__", &div);
  bin("__floordiv__", "__rfloordiv__", &floor_divide);
  bin("__mod__", "__rmod__", &remainder);
  bin("__matmul__", "__rmatmul__", &matmul);
  bin("__and__", "__rand__", &bitwise_and);
  bin("__or__", "__ror__", &bitwise_or);
  bin("__xor__", "__rxor__", &bitwise_xor);
  bin("__lshift__", "__rlshift__", &bitwise_left_shift);
  bin("__rshift__", "__rrshift__", &bitwise_right_shift);
  bin("__eq__", nullptr, &eq);
  bin("__ne__", nullptr, &ne);
  bin("__lt__", nullptr, &lt);
  bin("__le__", nullptr, &le);
  bin("__gt__", nullptr, &gt);
  bin("__ge__", nullptr, &ge);
  cls.def("__add__", [](const Tensor& a, py::handle b) { return add(a, as_tensor(b, "add")); })
      .def("__radd__", [](const Tensor& a, py::handle b) { return add(as_tensor(b, "add"), a); })
      .def("__sub__", [](const Tensor& a, py::handle b) { return sub(a, as_tensor(b, "sub")); })
      .def("__rsub__", [](const Tensor& a, py::handle b) { return sub(as_tensor(b, "sub"), a); })
      .def("__pow__", [](const Tensor& a, py::handle b) { return pow(a, as_tensor(b, "pow")); })
      .def("__rpow__", [](const Tensor& a, py::handle b) { return pow(as_tensor(b, "pow"), a); })
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__abs__", [](const Tensor& a) { return abs(a); })
      .def("__invert__", [](const Tensor& a) { return bitwise_not(a); })
      // in-place
      .def(
          "__iadd__",
          [](Tensor& a, py::handle b) -> Tensor& { return add_(a, as_tensor(b, "add_")); },
          py::return_value_policy::reference)
      .def(
          "__isub__",
          [](Tensor& a, py::handle b) -> Tensor& { return sub_(a, as_tensor(b, "sub_")); },
          py::return_value_policy::reference)
      .def(
          "__imul__",
          [](Tensor& a, py::handle b) -> Tensor& { return mul_(a, as_tensor(b, "mul_")); },
          py::return_value_policy::reference)
      .def(
          "__itruediv__",
          [](Tensor& a, py::handle b) -> Tensor& { return div_(a, as_tensor(b, "div_")); },
          py::return_value_policy::reference);
}

}  // namespace ofl::internal::py_bind
