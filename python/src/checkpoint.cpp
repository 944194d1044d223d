// Reading what flow.save writes, for flow.load: safetensors files and file objects
// (core/safetensors.h) and distributed checkpoints (global/checkpoint.h), the readers the C++ API
// uses too. Python only rebuilds the saved structure and wraps shards as global tensors.
#include "global/checkpoint.h"
#include "convert.h"
#include "core/safetensors.h"

namespace ofl::internal::py_bind {

namespace {

// (tensors by name in file order, __metadata__)
py::tuple contents(safetensors::Contents c) {
  py::dict tensors, metadata;
  for (auto& [name, t] : c.tensors) tensors[py::str(name)] = py::cast(std::move(t));
  for (const auto& [k, v] : c.metadata) metadata[py::str(k)] = py::str(v);
  return py::make_tuple(tensors, metadata);
}

}  // namespace

void bind_checkpoint(py::module_& m) {
  using py::arg;
  using OnlyNames = std::optional<std::set<std::string>>;
  m.def(
      "read_safetensors_file",
      [](const std::string& path, const OnlyNames& only) {
        return contents(safetensors::read_file(path, only ? &*only : nullptr));
      },
      arg("path"), arg("only") = py::none());
  m.def(
      "read_safetensors_bytes",
      [](py::bytes data, const std::string& name, const OnlyNames& only) {
        std::string_view bytes = data;
        return contents(safetensors::read_bytes(bytes, name, only ? &*only : nullptr));
      },
      arg("data"), arg("name") = "<bytes>", arg("only") = py::none());
  m.def("checkpoint_tiling_error", &checkpoint::tiling_error, arg("shape"), arg("pieces"));
  py::class_<checkpoint::Reader>(m, "CheckpointReader")
      .def(py::init<std::string>(), arg("dir"))
      .def("contains", &checkpoint::Reader::contains, arg("name"))
      .def("tensors",
           [](const checkpoint::Reader& r) {
             py::list out;
             for (const auto& t : r.tensors())
               out.append(py::make_tuple(t.name, py::tuple(py::cast(t.shape)), t.dtype));
             return out;
           })
      .def("tree", &checkpoint::Reader::tree)
      .def("files", &checkpoint::Reader::files)
      .def("files_read", &checkpoint::Reader::files_read)
      .def("bytes_read", &checkpoint::Reader::bytes_read)
      .def(
          "read",
          [](checkpoint::Reader& r, const std::string& name, const Shape& shape, DType dtype,
             const std::optional<Placement>& placement, const std::optional<NdSbp>& nd_sbp,
             const std::vector<int64_t>& coords) {
            return r.read(name, shape, dtype, placement, nd_sbp ? *nd_sbp : NdSbp{}, coords);
          },
          arg("name"), arg("shape"), arg("dtype"), arg("placement") = py::none(),
          arg("nd_sbp") = py::none(), arg("coords") = std::vector<int64_t>{});
}

}  // namespace ofl::internal::py_bind
