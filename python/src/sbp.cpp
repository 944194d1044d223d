// oneflowlike._C.Sbp / NdSbp / Placement, mirroring sbp/sbp.h and sbp/placement.h.
#include <cstdlib>

#include "convert.h"
#include "core/error.h"
#include "sbp/placement.h"
#include "sbp/sbp.h"

namespace ofl::internal::py_bind {

namespace {

PartialOp to_partial_op(const std::string& op) {
  if (op == "sum") return PartialOp::kSum;
  if (op == "max") return PartialOp::kMax;
  if (op == "min") return PartialOp::kMin;
  fail("sbp", "unknown partial op '", op, "' (expected sum, max or min)");
}

DeviceType to_device_type(const std::string& type) {
  if (type == "cpu") return DeviceType::kCPU;
  if (type == "cuda") return DeviceType::kCUDA;
  if (type == "meta")
    fail("placement",
         "a placement names the devices a tensor runs on ('cpu' or 'cuda'), not "
         "'meta'; for a meta global tensor give the tensor device=\"meta\" (e.g. flow.randn(..., "
         "device=\"meta\", placement=p, sbp=s)), on a placement of any size");
  fail("placement", "unknown device type '", type, "' (expected 'cpu' or 'cuda')");
}

// OneFlow's spelling: oneflowlike.sbp.split(axis=0), .broadcast, .partial_sum.
std::string sbp_repr(const Sbp& s) {
  if (s.is_split()) return "oneflowlike.sbp.split(axis=" + std::to_string(s.axis()) + ")";
  if (s.is_broadcast()) return "oneflowlike.sbp.broadcast";
  return std::string("oneflowlike.sbp.partial_") + partial_op_name(s.op());
}

std::string nd_sbp_repr(const NdSbp& nd) {
  std::string out = "(";
  for (size_t i = 0; i < nd.size(); ++i) out += (i ? ", " : "") + sbp_repr(nd[i]);
  return out + (nd.size() == 1 ? ",)" : ")");
}

bool is_sequence(py::handle h) {
  return py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h) ||
         py::isinstance(h, py::module_::import("builtins").attr("range"));
}

// Flattens nested sequences of ints row-major; the mesh is the nesting's extents.
void flatten_ranks(py::handle h, size_t depth, Shape& mesh, std::vector<int>& ranks,
                   const std::string& text) {
  if (!is_sequence(h)) {
    if (depth != mesh.size() || !py::isinstance<py::int_>(h) || py::isinstance<py::bool_>(h))
      fail("placement", "ranks ", text, " must be a nested list of ints of one depth");
    ranks.push_back(h.cast<int>());
    return;
  }
  auto seq = py::reinterpret_borrow<py::sequence>(h);
  int64_t n = static_cast<int64_t>(py::len(seq));
  if (depth == mesh.size()) {
    if (!ranks.empty()) fail("placement", "ranks ", text, " are ragged (not an n-d mesh)");
    mesh.push_back(n);
  } else if (depth > mesh.size() || mesh[depth] != n) {
    fail("placement", "ranks ", text, " are ragged (not an n-d mesh)");
  }
  if (n == 0) fail("placement", "ranks ", text, " hold an empty list");
  for (auto item : seq) flatten_ranks(item, depth + 1, mesh, ranks, text);
}

Placement make_placement(const std::string& type, py::handle ranks) {
  std::string text = py::repr(ranks).cast<std::string>();
  Shape mesh;
  std::vector<int> flat;
  if (py::isinstance<py::int_>(ranks) && !py::isinstance<py::bool_>(ranks)) {
    flat.push_back(ranks.cast<int>());
    mesh.push_back(1);
  } else {
    if (!is_sequence(ranks))
      fail("placement", "ranks ", text, " must be an int or a (nested) list of ints");
    flatten_ranks(ranks, 0, mesh, flat, text);
  }
  return Placement(to_device_type(type), std::move(flat), std::move(mesh));
}

py::object nested_ranks(const Placement& p, size_t dim, size_t& next) {
  py::list out;
  for (int64_t i = 0; i < p.mesh()[dim]; ++i) {
    if (dim + 1 == p.mesh().size())
      out.append(p.ranks()[next++]);
    else
      out.append(nested_ranks(p, dim + 1, next));
  }
  return out;
}

py::object ranks_of(const Placement& p) {
  size_t next = 0;
  return nested_ranks(p, 0, next);
}

std::string placement_repr(const Placement& p) {
  return std::string("oneflowlike.placement(type=\"") + device_type_name(p.device_type()) +
         "\", ranks=" + py::repr(ranks_of(p)).cast<std::string>() + ")";
}

int world_size_from_env() {
  const char* ws = std::getenv("WORLD_SIZE");
  if (!ws || !*ws) return 1;
  try {
    return std::stoi(ws);
  } catch (const std::exception&) {
    fail("placement", "WORLD_SIZE='", ws, "' is not an integer");
  }
}

// An NdSbp from an Sbp, a sequence of Sbp, a string, or an NdSbp.
NdSbp to_nd_sbp(py::handle h) {
  if (py::isinstance<NdSbp>(h)) return h.cast<NdSbp>();
  if (py::isinstance<Sbp>(h)) return NdSbp({h.cast<Sbp>()});
  if (py::isinstance<py::str>(h)) return NdSbp::parse(h.cast<std::string>());
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    std::vector<Sbp> axes;
    for (auto item : h) {
      if (py::isinstance<py::str>(item))
        axes.push_back(Sbp::parse(item.cast<std::string>()));
      else if (py::isinstance<Sbp>(item))
        axes.push_back(item.cast<Sbp>());
      else
        fail("sbp", "expected an sbp, got ", py::repr(item).cast<std::string>());
    }
    return NdSbp(std::move(axes));
  }
  fail("sbp", "expected an sbp or a sequence of sbp, got ", py::repr(h).cast<std::string>());
}

}  // namespace

void bind_sbp(py::module_& m) {
  py::class_<Sbp>(m, "Sbp")
      .def_static("split", &Sbp::split, py::arg("axis"))
      .def_static("broadcast", &Sbp::broadcast)
      .def_static(
          "partial", [](const std::string& op) { return Sbp::partial(to_partial_op(op)); },
          py::arg("op") = "sum")
      .def_static("parse", &Sbp::parse, py::arg("text"))
      .def_property_readonly("kind",
                             [](const Sbp& s) -> std::string {
                               if (s.is_split()) return "split";
                               if (s.is_broadcast()) return "broadcast";
                               return "partial";
                             })
      .def_property_readonly("axis", &Sbp::axis)
      .def_property_readonly("op",
                             [](const Sbp& s) { return std::string(partial_op_name(s.op())); })
      .def("is_split", &Sbp::is_split)
      .def("is_broadcast", &Sbp::is_broadcast)
      .def("is_partial", &Sbp::is_partial)
      .def("to_string", &Sbp::str)
      .def("__repr__", &sbp_repr)
      .def("__str__", &sbp_repr)
      .def("__eq__",
           [](const Sbp& a, py::handle b) { return py::isinstance<Sbp>(b) && a == b.cast<Sbp>(); })
      .def("__hash__", &Sbp::hash)
      .def(py::pickle([](const Sbp& s) { return s.str(); },
                      [](const std::string& s) { return Sbp::parse(s); }));

  py::class_<NdSbp>(m, "NdSbp")
      .def(py::init([](py::handle h) { return to_nd_sbp(h); }), py::arg("sbp"))
      .def_static("parse", &NdSbp::parse, py::arg("text"))
      .def("__len__", &NdSbp::size)
      .def("__getitem__",
           [](const NdSbp& nd, int64_t i) {
             int64_t n = static_cast<int64_t>(nd.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n)
               fail<IndexError>("sbp", "index ", i, " out of range for ", nd.str());
             return nd[i];
           })
      .def("__iter__", [](const NdSbp& nd) { return py::iter(py::cast(nd.axes())); })
      .def_property_readonly("axes", [](const NdSbp& nd) { return py::tuple(py::cast(nd.axes())); })
      .def("all_broadcast", &NdSbp::all_broadcast)
      .def("any_partial", &NdSbp::any_partial)
      .def("to_string", &NdSbp::str)
      .def("__repr__", &nd_sbp_repr)
      .def("__str__", &nd_sbp_repr)
      .def("__eq__", [](const NdSbp& a,
                        py::handle b) { return py::isinstance<NdSbp>(b) && a == b.cast<NdSbp>(); })
      .def("__hash__", &NdSbp::hash)
      .def(py::pickle([](const NdSbp& s) { return s.str(); },
                      [](const std::string& s) { return NdSbp::parse(s); }));

  py::class_<Placement>(m, "Placement")
      .def(py::init([](const std::string& type, py::handle ranks) {
             return make_placement(type, ranks);
           }),
           py::arg("type"), py::arg("ranks"))
      .def_static(
          "all",
          [](const std::string& type, std::optional<int> size) {
            return Placement::all(to_device_type(type), size ? *size : world_size_from_env());
          },
          py::arg("type"), py::arg("size") = py::none())
      .def_property_readonly(
          "type", [](const Placement& p) { return std::string(device_type_name(p.device_type())); })
      .def_property_readonly("ranks", &ranks_of)
      .def_property_readonly("flat_ranks", [](const Placement& p) { return p.ranks(); })
      .def_property_readonly("hierarchy",
                             [](const Placement& p) { return py::tuple(py::cast(p.mesh())); })
      .def_property_readonly("mesh",
                             [](const Placement& p) { return py::tuple(py::cast(p.mesh())); })
      .def_property_readonly("ndim", &Placement::ndim)
      .def_property_readonly("size", &Placement::size)
      .def("__len__", &Placement::size)
      .def("__contains__", &Placement::contains)
      .def("contains", &Placement::contains, py::arg("rank"))
      .def(
          "coords_of",
          [](const Placement& p, int rank) -> py::object {
            auto c = p.coords_of(rank);
            return c ? py::object(py::tuple(py::cast(*c))) : py::object(py::none());
          },
          py::arg("rank"))
      .def("rank_at", &Placement::rank_at, py::arg("coords"))
      .def("axis_group", &Placement::axis_group, py::arg("rank"), py::arg("axis"))
      .def("to_string", &Placement::str)
      .def("__repr__", &placement_repr)
      .def("__str__", &placement_repr)
      .def("__eq__",
           [](const Placement& a, py::handle b) {
             return py::isinstance<Placement>(b) && a == b.cast<Placement>();
           })
      .def("__hash__", &Placement::hash)
      .def(py::pickle(
          [](const Placement& p) {
            return py::make_tuple(std::string(device_type_name(p.device_type())), ranks_of(p));
          },
          [](py::tuple t) { return make_placement(t[0].cast<std::string>(), t[1]); }));

  m.def(
      "validate_sbp",
      [](const std::string& op, const Shape& shape, py::handle sbp, const Placement& p) {
        validate_sbp(op.c_str(), shape, to_nd_sbp(sbp), p);
      },
      py::arg("op"), py::arg("shape"), py::arg("sbp"), py::arg("placement"));
  m.def(
      "local_shape",
      [](const Shape& shape, py::handle sbp, const Placement& p,
         const std::vector<int64_t>& coords) {
        return py::tuple(py::cast(local_shape(shape, to_nd_sbp(sbp), p, coords)));
      },
      py::arg("shape"), py::arg("sbp"), py::arg("placement"), py::arg("coords"));
  m.def(
      "local_ranges",
      [](const Shape& shape, py::handle sbp, const Placement& p,
         const std::vector<int64_t>& coords) {
        return local_ranges(shape, to_nd_sbp(sbp), p, coords);
      },
      py::arg("shape"), py::arg("sbp"), py::arg("placement"), py::arg("coords"));
  m.def("split_range", &split_range, py::arg("n"), py::arg("parts"), py::arg("index"));
}

}  // namespace ofl::internal::py_bind
