// oneflowlike._C.ClusterSpec, mirroring sbp/cluster_spec.h: presets, JSON read/write and the
// fields a profiler fills in. The default boxing PlanCache's spec is set in global.cpp.
#include <array>
#include <limits>
#include <optional>

#include "convert.h"
#include "sbp/cluster_spec.h"

namespace ofl::internal::py_bind {

namespace {

// A read/write count (nodes, devices or NICs a node): at least 1, or every rank's node is a
// division by zero.
void count(py::class_<ClusterSpec>& c, const char* name, int ClusterSpec::*field) {
  c.def_property(
      name, [field](const ClusterSpec& s) { return s.*field; },
      [name, field](ClusterSpec& s, int v) {
        if (v < 1)
          throw py::value_error(std::string("ClusterSpec.") + name + " must be at least 1, got " +
                                std::to_string(v));
        s.*field = v;
      });
}

// A read/write property for a double reached through `get`, at least `least` (a tile of no rows
// would price a GEMM as a division by zero).
template <typename Get>
void field(py::class_<ClusterSpec>& c, const char* name, Get get,
           double least = -std::numeric_limits<double>::infinity()) {
  c.def_property(
      name, [get](ClusterSpec& s) { return *get(s); },
      [name, get, least](ClusterSpec& s, double v) {
        if (!(v >= least))
          throw py::value_error(std::string("ClusterSpec.") + name + " must be at least " +
                                std::to_string(int(least)) + ", got " + std::to_string(v));
        *get(s) = v;
      });
}

}  // namespace

void bind_cluster(py::module_& m) {
  py::class_<ClusterSpec> c(m, "ClusterSpec");
  c.def(py::init<>())
      .def_static("cpu_loopback", &ClusterSpec::cpu_loopback, py::arg("world") = 1)
      .def_static("a100_nvlink", &ClusterSpec::a100_nvlink, py::arg("nodes") = 1,
                  py::arg("gpus_per_node") = 8)
      .def_static("h100_ib", &ClusterSpec::h100_ib, py::arg("nodes") = 1,
                  py::arg("gpus_per_node") = 8)
      .def_static("from_json", &ClusterSpec::from_json, py::arg("json"))
      .def_static("load", &ClusterSpec::load, py::arg("path"))
      .def("to_json", &ClusterSpec::to_json)
      .def("save", &ClusterSpec::save, py::arg("path"))
      .def_readwrite("name", &ClusterSpec::name)
      .def_readwrite("collective_overhead", &ClusterSpec::collective_overhead)
      .def_readwrite("tree_all_reduce", &ClusterSpec::tree_all_reduce)
      .def_property_readonly("world", &ClusterSpec::world)
      .def("all_reduce", &ClusterSpec::all_reduce, py::arg("group"), py::arg("bytes"))
      .def("all_gather", &ClusterSpec::all_gather, py::arg("group"), py::arg("bytes"))
      .def("reduce_scatter", &ClusterSpec::reduce_scatter, py::arg("group"), py::arg("bytes"))
      .def("all_to_all", &ClusterSpec::all_to_all, py::arg("group"), py::arg("bytes"))
      // [(kind, group, bytes, seconds)]: set through the JSON ("collectives"), which checks them.
      .def_property_readonly(
          "measured_collectives",
          [](const ClusterSpec& s) {
            py::list out;
            for (const MeasuredCollective& m : s.measured_collectives)
              out.append(py::make_tuple(m.kind, m.group, m.curve.at, m.curve.seconds));
            return out;
          })
      // [(dtype class, flops, seconds)]: set through the JSON ("gemms").
      .def_property_readonly("measured_gemms",
                             [](const ClusterSpec& s) {
                               py::list out;
                               for (const MeasuredGemm& m : s.measured_gemms)
                                 out.append(py::make_tuple(m.dtype, m.curve.at, m.curve.seconds));
                               return out;
                             })
      .def("send_recv", &ClusterSpec::send_recv, py::arg("src"), py::arg("dst"), py::arg("bytes"))
      .def(
          "compute",
          [](const ClusterSpec& s, double flops, double bytes, DType dtype,
             std::optional<std::array<double, 4>> gemm) {
            OpCost cost{flops, bytes};
            if (gemm) cost.gemm = {(*gemm)[0], (*gemm)[1], (*gemm)[2], (*gemm)[3]};
            return s.compute(cost, dtype);
          },
          py::arg("flops"), py::arg("bytes"), py::arg("dtype"), py::arg("gemm") = py::none(),
          "seconds of an op; gemm: (count, m, n, k) where its FLOPs are a GEMM's")
      .def(
          "gemm_efficiency",
          [](const ClusterSpec& s, double m, double n, double k, double count) {
            return s.device.gemm_efficiency({count, m, n, k});
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("count") = 1.0)
      .def("__eq__", [](const ClusterSpec& a, const ClusterSpec& b) { return a == b; })
      .def("__copy__", [](const ClusterSpec& s) { return ClusterSpec(s); })
      .def("__repr__", [](const ClusterSpec& s) {
        return "ClusterSpec(name='" + s.name + "', nodes=" + std::to_string(s.nodes) +
               ", devices_per_node=" + std::to_string(s.devices_per_node) + ")";
      });
  count(c, "nodes", &ClusterSpec::nodes);
  count(c, "devices_per_node", &ClusterSpec::devices_per_node);
  count(c, "nics_per_node", &ClusterSpec::nics_per_node);
  field(c, "flops_fp64", [](ClusterSpec& s) { return &s.device.flops_fp64; });
  field(c, "flops_fp32", [](ClusterSpec& s) { return &s.device.flops_fp32; });
  field(c, "flops_fp16", [](ClusterSpec& s) { return &s.device.flops_fp16; });
  field(c, "flops_int", [](ClusterSpec& s) { return &s.device.flops_int; });
  field(c, "mem_bandwidth", [](ClusterSpec& s) { return &s.device.mem_bandwidth; });
  field(c, "mem_capacity", [](ClusterSpec& s) { return &s.device.mem_capacity; });
  field(c, "op_overhead", [](ClusterSpec& s) { return &s.device.op_overhead; });
  field(c, "compute_efficiency", [](ClusterSpec& s) { return &s.device.compute_efficiency; });
  field(c, "half_efficiency_flops", [](ClusterSpec& s) { return &s.device.half_efficiency_flops; });
  field(
      c, "sms", [](ClusterSpec& s) { return &s.device.sms; }, 0);
  field(
      c, "tile_m", [](ClusterSpec& s) { return &s.device.tile_m; }, 1);
  field(
      c, "tile_n", [](ClusterSpec& s) { return &s.device.tile_n; }, 1);
  field(
      c, "tile_k_fill", [](ClusterSpec& s) { return &s.device.tile_k_fill; }, 0);
  field(c, "intra_alpha", [](ClusterSpec& s) { return &s.intra_node.alpha; });
  field(c, "intra_beta", [](ClusterSpec& s) { return &s.intra_node.beta; });
  field(c, "inter_alpha", [](ClusterSpec& s) { return &s.inter_node.alpha; });
  field(c, "inter_beta", [](ClusterSpec& s) { return &s.inter_node.beta; });
}

}  // namespace ofl::internal::py_bind
