// Pipeline schedules (graph/pipeline/schedule.h) for Python: flow.nn.graph.pipeline_schedule.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "graph/pipeline/schedule.h"

namespace py = pybind11;

namespace ofl::internal::py_bind {

void bind_pipeline(py::module_& m) {
  using namespace graph::pipeline;
  py::class_<Action>(m, "PipelineAction")
      .def_property_readonly("phase",
                             [](const Action& a) { return a.phase == Phase::kForward ? "F" : "B"; })
      .def_readonly("micro", &Action::micro)
      .def_readonly("stage", &Action::stage)
      .def_readonly("chunk", &Action::chunk)
      .def_readonly("recv_from", &Action::recv_from)
      .def_readonly("send_to", &Action::send_to)
      .def("__repr__", &Action::str);
  py::class_<Schedule>(m, "PipelineSchedule")
      .def_property_readonly("kind", [](const Schedule& s) { return schedule_name(s.kind); })
      .def_readonly("devices", &Schedule::devices)
      .def_readonly("micro_batches", &Schedule::micro_batches)
      .def_readonly("chunks", &Schedule::chunks)
      .def_readonly("order", &Schedule::order)
      .def("peak_in_flight", &Schedule::peak_in_flight, py::arg("device"))
      .def(
          "timeline",
          [](const Schedule& s, const std::vector<double>& forward,
             const std::vector<double>& backward, double send) {
            py::list out;
            for (const Timed& t : s.timeline(forward, backward, send))
              out.append(py::make_tuple(t.device, t.action, t.start, t.end));
            return out;
          },
          py::arg("forward") = std::vector<double>{1.0},
          py::arg("backward") = std::vector<double>{2.0}, py::arg("send") = 0.0)
      .def("bubble_fraction", &Schedule::bubble_fraction,
           py::arg("forward") = std::vector<double>{1.0},
           py::arg("backward") = std::vector<double>{2.0}, py::arg("send") = 0.0)
      .def("__str__", &Schedule::str)
      .def("__repr__", [](const Schedule& s) {
        return "PipelineSchedule(" + std::string(schedule_name(s.kind)) +
               ", devices=" + std::to_string(s.devices) +
               ", micro_batches=" + std::to_string(s.micro_batches) +
               ", chunks=" + std::to_string(s.chunks) + ")";
      });
  m.def(
      "pipeline_schedule",
      [](const std::string& kind, int devices, int micro_batches, int chunks) {
        return make_schedule(parse_schedule(kind), devices, micro_batches, chunks);
      },
      py::arg("kind"), py::arg("devices"), py::arg("micro_batches"), py::arg("chunks") = 1);
}

}  // namespace ofl::internal::py_bind
