// The _C extension module: dtypes, devices, generators, autograd and the op functions.
#include <algorithm>

#include "convert.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "core/parallel.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/ops.h"
#include "sbp/signature.h"

namespace ofl::internal::py_bind {

void bind_tensor(py::module_& m);
void bind_functions(py::module_& m);
void bind_ops(py::module_& m, py::handle tensor_cls);
void bind_distributed(py::module_& m);
void bind_global(py::module_& m);
void bind_checkpoint(py::module_& m);
void bind_cluster(py::module_& m);
void bind_sbp(py::module_& m);
void bind_graph(py::module_& m);
void bind_pipeline(py::module_& m);

namespace {

void bind_dtypes(py::module_& m) {
  py::enum_<DType> dt(m, "dtype");
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    dt.value(dtype_name(t), t);
  }
  dt.def_property_readonly("itemsize", [](DType t) { return itemsize(t); })
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating(t); })
      .def_property_readonly("name", [](DType t) { return std::string(dtype_name(t)); });
  // Assigned, not def()'d: def() would add an overload behind py::enum_'s own __repr__.
  auto qualified = [](DType t) { return std::string("oneflowlike.") + dtype_name(t); };
  dt.attr("__repr__") = py::cpp_function(qualified, py::name("__repr__"), py::is_method(dt));
  dt.attr("__str__") = py::cpp_function(qualified, py::name("__str__"), py::is_method(dt));
  m.def("promote_types", &promote_types);
  m.def("result_type", [](py::handle a, py::handle b) {
    return result_type(as_tensor(a, "result_type"), as_tensor(b, "result_type"));
  });
}

void bind_device(py::module_& m) {
  py::class_<Device>(m, "device")
      .def(py::init([](const std::string& s) { return Device::parse(s); }))
      .def(py::init([](const std::string& type, int index) {
        Device d = Device::parse(type);
        d.index = index;
        return d;
      }))
      .def_property_readonly("type",
                             [](const Device& d) { return std::string(device_type_name(d.type)); })
      .def_property_readonly("index", [](const Device& d) { return d.index; })
      .def("__str__", &Device::str)
      .def("__repr__",
           [](const Device& d) {
             return "device(type='" + std::string(device_type_name(d.type)) +
                    "', index=" + std::to_string(d.index) + ")";
           })
      .def("__eq__",
           [](const Device& d, py::handle o) {
             if (py::isinstance<py::str>(o)) return d == Device::parse(o.cast<std::string>());
             return py::isinstance<Device>(o) && d == o.cast<Device>();
           })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); });
}

void bind_autograd(py::module_& m) {
  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node")
      .def("name", &autograd::Node::name)
      .def("__repr__", [](const autograd::Node& n) { return "<" + n.name() + "Backward>"; })
      .def_property_readonly("next_functions", [](autograd::Node& n) {
        py::list out;
        for (auto& e : n.next_edges())
          out.append(py::make_tuple(e.fn ? py::cast(e.fn) : py::none(), e.input_nr));
        return py::tuple(out);
      });
  m.def("is_grad_enabled", &autograd::grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled);
  m.def("autograd_backward",
        [](const std::vector<Tensor>& roots, const std::vector<std::optional<Tensor>>& grads,
           bool retain_graph, bool create_graph) {
          std::vector<Tensor> g;
          for (auto& x : grads) g.push_back(x ? *x : Tensor());
          autograd::backward(roots, g, retain_graph, create_graph);
        });
  m.def(
      "queue_callback",
      [](py::function fn) {
        auto held = hold_callable(std::move(fn));
        autograd::queue_callback([held] {
          py::gil_scoped_acquire gil;
          (*held)();
        });
      },
      "runs fn once the running backward() has finished (not on error)");
  m.def("autograd_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                            const std::vector<std::optional<Tensor>>& grads, bool retain_graph,
                            bool create_graph, bool allow_unused) {
    std::vector<Tensor> g;
    for (auto& x : grads) g.push_back(x ? *x : Tensor());
    auto res = autograd::grad(outputs, g, inputs, retain_graph, create_graph, allow_unused);
    py::list out;
    for (auto& r : res) out.append(r.defined() ? py::cast(r) : py::none());
    return py::tuple(out);
  });
  // One autograd node whose backward is a Python function (flow.autograd.Function): given the
  // outputs' gradients (None where none flowed) and which inputs need one, it returns one
  // gradient per input (None for none).
  m.def("record_function", [](const std::string& name, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs, py::function backward) {
    auto fn = hold_callable(std::move(backward));
    const size_t num_inputs = inputs.size();
    autograd::record(name, inputs, outputs,
                     [fn, num_inputs, name](const autograd::Grads& grads,
                                            const autograd::Needs& needs) -> autograd::Grads {
                       py::gil_scoped_acquire gil;
                       py::list g;
                       for (const Tensor& t : grads)
                         g.append(t.defined() ? py::cast(t) : py::none());
                       py::list n;
                       for (bool b : needs) n.append(b);
                       py::object result = (*fn)(g, n);
                       autograd::Grads out;
                       for (py::handle h : result)
                         out.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
                       if (out.size() != num_inputs)
                         throw Error(str_cat("[", name, "] backward returned ", out.size(),
                                             " gradients for ", num_inputs, " inputs"));
                       return out;
                     });
  });
}

void bind_random(py::module_& m) {
  py::class_<Generator>(m, "Generator")
      .def(py::init([](uint64_t seed) { return new Generator(seed); }), py::arg("seed") = 0)
      .def(
          "manual_seed",
          [](Generator& g, uint64_t s) -> Generator& {
            g.manual_seed(s);
            return g;
          },
          py::return_value_policy::reference)
      .def("initial_seed", &Generator::seed)
      .def("get_state", [](const Generator& g) { return py::make_tuple(g.seed(), g.offset()); })
      .def("set_state", [](Generator& g, py::tuple st) {
        g.manual_seed(st[0].cast<uint64_t>());
        g.set_offset(st[1].cast<uint64_t>());
      });
  m.def(
      "default_generator", []() { return &default_generator(); },
      py::return_value_policy::reference);
  m.def("manual_seed", [](uint64_t s) { default_generator().manual_seed(s); });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "oneflowlike core bindings";
  // Translators run newest first, so the base class is registered before its subclasses.
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<IndexError>(m, "IndexError", PyExc_IndexError);
  py::register_exception<TypeError>(m, "TypeError", PyExc_TypeError);
  py::register_exception<NotFoundError>(m, "NotFoundError", PyExc_FileNotFoundError);
  bind_dtypes(m);
  bind_device(m);
  bind_random(m);
  bind_autograd(m);
  bind_tensor(m);
  bind_functions(m);
  bind_ops(m, m.attr("Tensor"));
  bind_sbp(m);
  bind_distributed(m);
  bind_cluster(m);
  bind_global(m);
  bind_checkpoint(m);
  bind_graph(m);
  bind_pipeline(m);
  m.def("empty_cache", &release_cached_cpu_memory);
  m.def("set_num_threads", &set_num_threads);
  m.def("get_num_threads", &get_num_threads);
  m.def("cached_cpu_bytes", &cached_cpu_bytes);
  m.def("memory_allocated", [] { return cpu_memory_stats().allocated; });
  m.def("max_memory_allocated", [] { return cpu_memory_stats().peak; });
  m.def("reset_peak_memory_stats", &reset_cpu_peak_memory);
  // A device backend's runtime (flow.cuda): how many devices, waits, memory statistics. Without
  // the backend in this build, there are no devices and the rest raises.
  auto runtime = [](const std::string& type) -> DeviceRuntime& {
    const DeviceType t = Device::parse(type).type;
    DeviceRuntime* r = runtime_for(t);
    if (!r) fail(type.c_str(), backend_missing_reason(t));
    return *r;
  };
  // flow.autocast: this thread's state, set and read back (the context manager nests).
  m.def("set_autocast", [](bool enabled, const std::string& device, DType dtype) {
    autocast_state() = {enabled, Device::parse(device).type, dtype};
  });
  m.def("get_autocast", [] {
    const AutocastState& s = autocast_state();
    return py::make_tuple(s.enabled, device_type_name(s.device), s.dtype);
  });
  m.def("set_matmul_allow_tf32", [](bool allow) { matmul_allow_tf32() = allow; });
  m.def("matmul_allow_tf32", [] { return matmul_allow_tf32().load(); });
  m.def("set_conv_allow_tf32", [](bool allow) { conv_allow_tf32() = allow; });
  m.def("conv_allow_tf32", [] { return conv_allow_tf32().load(); });
  // The kernel tables without a kernel for a device type: what this build cannot run there.
  m.def("kernels_missing", [](const std::string& type) {
    const DeviceType t = Device::parse(type).type;
    load_backend(t);
    std::vector<std::string> missing;
    for (const KernelTableBase* table : kernel_tables())
      if (!table->has(t) && !(table->host_only() && t != DeviceType::kCPU))
        missing.push_back(table->op());
    std::sort(missing.begin(), missing.end());
    return missing;
  });
  m.def("has_backend",
        [](const std::string& type) { return runtime_for(Device::parse(type).type) != nullptr; });
  m.def("backend_missing_reason",
        [](const std::string& type) { return backend_missing_reason(Device::parse(type).type); });
  m.def("device_count", [](const std::string& type) {
    DeviceRuntime* r = runtime_for(Device::parse(type).type);
    return r ? r->device_count() : 0;
  });
  m.def("device_synchronize", [runtime](const std::string& type, int index) {
    py::gil_scoped_release release;
    runtime(type).synchronize(index);
  });
  m.def("device_memory_stats", [runtime](const std::string& type, int index) {
    const DeviceMemoryStats s = runtime(type).memory_stats(index);
    return py::dict(py::arg("allocated") = s.allocated, py::arg("peak") = s.peak,
                    py::arg("reserved") = s.reserved);
  });
  m.def("device_reset_peak_memory",
        [runtime](const std::string& type, int index) { runtime(type).reset_peak_memory(index); });
  m.def("device_empty_cache", [runtime](const std::string& type) {
    if (runtime_for(Device::parse(type).type)) runtime(type).empty_cache();
  });
  m.def("registered_ops", []() {
    py::list out;
    for (const auto& op : registered_ops())
      out.append(py::dict(py::arg("name") = op.name, py::arg("num_inputs") = op.num_inputs,
                          py::arg("differentiable") = op.differentiable,
                          py::arg("sbp") = op.sbp ? py::object(py::str(op.sbp->name)) : py::none(),
                          py::arg("dispatched") = op.dispatched(),
                          py::arg("has_backward") = static_cast<bool>(op.backward)));
    return out;
  });
  // Any registered op through the dispatcher, attributes converted by the op's schema.
  m.def(
      "dispatch",
      [](const std::string& name, const std::vector<std::optional<Tensor>>& inputs,
         const py::dict& attrs) {
        const OpDef* op = find_op(name);
        if (!op) throw Error("[dispatch] no op named '" + name + "'");
        if (!op->dispatched())
          throw Error("[dispatch] op '" + name + "' is not run by the dispatcher yet");
        Attrs a;
        for (const AttrDef& d : op->attrs) {
          if (!attrs.contains(d.name)) continue;  // the dispatcher names what is missing
          py::handle v = attrs[d.name];
          switch (d.type) {
            case AttrType::kBool:
              a.set(d.name, v.cast<bool>());
              break;
            case AttrType::kInt:
              a.set(d.name, v.cast<int64_t>());
              break;
            case AttrType::kFloat:
              a.set(d.name, v.cast<double>());
              break;
            case AttrType::kString:
              a.set(d.name, v.cast<std::string>());
              break;
            case AttrType::kDType:
              a.set(d.name, v.cast<DType>());
              break;
            case AttrType::kInts:
              a.set(d.name, v.cast<std::vector<int64_t>>());
              break;
          }
        }
        std::vector<Tensor> in;
        for (const auto& t : inputs) in.push_back(t ? *t : Tensor());
        return dispatch(*op, in, a);
      },
      py::arg("name"), py::arg("inputs"), py::arg("attrs") = py::dict());
  m.def("op_cost", [](const std::string& name, const std::vector<Shape>& inputs,
                      const Shape& output, DType dtype) {
    const OpDef* op = find_op(name);
    if (!op) throw Error("[op_cost] no op named '" + name + "'");
    if (!op->cost) throw Error("[op_cost] op '" + name + "' declares no cost");
    OpCost c = op->cost(inputs, output, dtype);
    return py::make_tuple(c.flops, c.bytes);
  });
}

}  // namespace ofl::internal::py_bind
