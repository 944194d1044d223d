// Graph mode's C++ side for nn.Graph (python/oneflowlike/nn/graph.py): a trace of build() and
// the compiled graph it gives, run by the C++ executor.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "boxing/reshard.h"
#include "graph/executor.h"
#include "graph/passes/passes.h"
#include "graph/serialize.h"
#include "graph/trace.h"

namespace py = pybind11;

namespace ofl::py_bind {

void bind_graph(py::module_& m) {
  using graph::Graph;
  using graph::Trace;
  py::class_<Graph, std::shared_ptr<Graph>>(m, "CompiledGraph")
      .def("run",
           [](const Graph& g, const std::vector<Tensor>& in) {
             py::gil_scoped_release release;
             return graph::run(g, in);
           })
      .def("__str__", &Graph::str)
      .def_property_readonly("signature", &graph::signature_str)
      .def_property_readonly("num_nodes", [](const Graph& g) { return g.nodes().size(); })
      .def_property_readonly("num_variables", [](const Graph& g) { return g.variables().size(); })
      .def_property_readonly("peak_bytes", &graph::peak_bytes)
      .def("to_json", &graph::to_json)
      .def_property_readonly("variables",
                             [](const Graph& g) {
                               py::dict out;
                               for (const graph::Variable& v : g.variables())
                                 out[py::str(graph::variable_name(v))] = v.tensor;
                               return out;
                             })
      .def_property_readonly_static("format_version",
                                    [](py::object) { return graph::kGraphFormatVersion; });
  py::class_<Trace>(m, "Trace")
      .def(py::init<>())
      .def("input", &Trace::input)
      .def("finish",
           [](Trace& t, const std::vector<Tensor>& outputs) {
             std::shared_ptr<BoxingContext> ctx = t.context();
             return std::make_shared<Graph>(
                 graph::compile(t.finish(outputs), ctx ? ctx->cache : nullptr));
           })
      .def("close", &Trace::close);
}

}  // namespace ofl::py_bind
