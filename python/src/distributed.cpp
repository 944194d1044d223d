// oneflowlike._C.comm: the rendezvous store and communicators, mirroring core/comm.
#include "convert.h"
#include "core/comm/communicator.h"
#include "core/comm/device_communicator.h"
#include "core/comm/gloo/gloo_communicator.h"
#include "core/comm/tcp_store.h"
#include "core/comm/work_queue.h"
#include "ops/ops.h"

namespace ofl::internal::py_bind {

namespace {

using comm::Communicator;
using comm::ReduceOp;
using comm::Store;

comm::Millis seconds(double s) {
  return comm::Millis(static_cast<int64_t>(s * 1000));
}

ReduceOp parse_op(const std::string& op) {
  if (op == "sum") return ReduceOp::kSum;
  if (op == "product" || op == "prod") return ReduceOp::kProduct;
  if (op == "max") return ReduceOp::kMax;
  if (op == "min") return ReduceOp::kMin;
  if (op == "avg" || op == "mean") return ReduceOp::kAvg;
  fail("all_reduce", "unknown reduce op '", op, "' (expected sum, product, max, min or avg)");
}

comm::Bytes as_bytes(py::handle v) {
  if (py::isinstance<py::str>(v)) return comm::to_bytes(v.cast<std::string>());
  std::string s = v.cast<py::bytes>();
  return comm::Bytes(s.begin(), s.end());
}

py::bytes to_py(const comm::Bytes& b) {
  return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}

// Collectives take contiguous tensors; hand them a contiguous copy when needed and copy back.
Tensor dense(const Tensor& t) {
  return t.is_contiguous() ? t : contiguous_copy(t);
}

Tensor like(const Tensor& t, int64_t n) {
  return Tensor::empty({n}, t.dtype(), t.device());
}

Shape blocks_shape(const Tensor& t, int64_t rows) {
  Shape s = t.shape();
  if (s.empty()) return {rows};
  s[0] *= rows;
  return s;
}

std::vector<int64_t> counts_or_empty(py::object counts) {
  if (counts.is_none()) return {};
  return counts.cast<std::vector<int64_t>>();
}

// A collective that runs on the communicator's background thread (async_op=True); its tensor is
// not to be read or written before wait().
struct Work {
  std::shared_future<void> done;
  Tensor result;
};

// Submits `run` on a dense copy of t when t is not contiguous, copying the result back after.
Work submit_in_place(const std::shared_ptr<Communicator>& c, Tensor t,
                     std::function<void(Tensor&)> run) {
  Tensor d = dense(t);
  auto done = comm::submit(c, [d, t, run = std::move(run)]() mutable {
    run(d);
    if (!d.same(t)) copy_(t, d);
  });
  return {done, t};
}

}  // namespace

void bind_distributed(py::module_& parent) {
  py::module_ m = parent.def_submodule("comm", "stores and communicators");
  py::class_<Store, std::shared_ptr<Store>>(m, "Store")
      .def("set",
           [](Store& s, const std::string& k, py::handle v) {
             auto b = as_bytes(v);
             py::gil_scoped_release release;
             s.set(k, b);
           })
      .def("get",
           [](Store& s, const std::string& k) {
             comm::Bytes b;
             {
               py::gil_scoped_release release;
               b = s.get(k);
             }
             return to_py(b);
           })
      .def("add",
           [](Store& s, const std::string& k, int64_t d) {
             py::gil_scoped_release release;
             return s.add(k, d);
           })
      .def("compare_set",
           [](Store& s, const std::string& k, py::handle expected, py::handle desired) {
             auto e = as_bytes(expected), d = as_bytes(desired);
             comm::Bytes out;
             {
               py::gil_scoped_release release;
               out = s.compare_set(k, e, d);
             }
             return to_py(out);
           })
      .def(
          "wait",
          [](Store& s, const std::vector<std::string>& keys, std::optional<double> timeout_s) {
            py::gil_scoped_release release;
            s.wait(keys, timeout_s ? seconds(*timeout_s) : s.timeout());
          },
          py::arg("keys"), py::arg("timeout_s") = py::none())
      .def("remove", [](Store& s, const std::string& k) { return s.remove(k); })
      .def("delete_key", [](Store& s, const std::string& k) { return s.remove(k); })
      .def("check", [](Store& s, const std::vector<std::string>& keys) { return s.check(keys); })
      .def_property(
          "timeout_s", [](const Store& s) { return s.timeout().count() / 1000.0; },
          [](Store& s, double t) { s.set_timeout(seconds(t)); });
  m.def(
      "TcpStore",
      [](const std::string& host, int port, bool is_server, const std::string& token,
         double timeout_s) {
        py::gil_scoped_release release;
        return comm::make_tcp_store(host, port, is_server, token, seconds(timeout_s));
      },
      py::arg("host"), py::arg("port"), py::arg("is_server"), py::arg("token") = "",
      py::arg("timeout_s") = 300.0);

  py::class_<Work>(m, "Work", "a collective running in the background (async_op=True)")
      .def(
          "wait",
          [](const Work& w) {
            {
              py::gil_scoped_release release;
              w.done.get();  // rethrows the collective's error
            }
            return true;
          },
          "blocks until the collective has finished; raises its error")
      .def("is_completed",
           [](const Work& w) {
             return w.done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
           })
      .def("result", [](const Work& w) { return std::vector<Tensor>{w.result}; });

  py::class_<Communicator, std::shared_ptr<Communicator>>(m, "Communicator")
      .def("rank", &Communicator::rank)
      .def("size", &Communicator::size)
      .def("ranks", &Communicator::ranks)
      .def_property_readonly("name", &Communicator::name)
      .def_property(
          "timeout_s", [](const Communicator& c) { return c.timeout().count() / 1000.0; },
          [](Communicator& c, double t) { c.set_timeout(seconds(t)); })
      .def(
          "all_reduce",
          [](Communicator& c, Tensor& t, const std::string& op) {
            Tensor d = dense(t);
            {
              py::gil_scoped_release release;
              c.all_reduce(d, parse_op(op));
            }
            if (!d.same(t)) copy_(t, d);
            return t;
          },
          py::arg("tensor"), py::arg("op") = "sum")
      .def(
          "all_reduce_async",
          [](const std::shared_ptr<Communicator>& c, const Tensor& t, const std::string& op,
             bool planned) {
            ReduceOp r = parse_op(op);
            return submit_in_place(c, t, [c, r, planned](Tensor& d) {
              // planned: a call every rank makes alike by construction (DDP's buckets), which
              // skips the call check as boxing's collectives do.
              std::optional<comm::PlannedCollectives> scope;
              if (planned) scope.emplace();
              c->all_reduce(d, r);
            });
          },
          py::arg("tensor"), py::arg("op") = "sum", py::arg("planned") = false)
      .def(
          "broadcast_async",
          [](const std::shared_ptr<Communicator>& c, const Tensor& t, int root) {
            return submit_in_place(c, t, [c, root](Tensor& d) { c->broadcast(d, root); });
          },
          py::arg("tensor"), py::arg("root") = 0)
      .def("all_gather",
           [](Communicator& c, const Tensor& t) {
             Tensor in = dense(t),
                    out = Tensor::empty(blocks_shape(t, c.size()), t.dtype(), t.device());
             py::gil_scoped_release release;
             c.all_gather(in, out);
             return out;
           })
      .def("all_gather_v",
           [](Communicator& c, const Tensor& t, const std::vector<int64_t>& counts) {
             int64_t total = 0;
             for (int64_t n : counts) total += n;
             Tensor in = dense(t), out = like(t, total);
             py::gil_scoped_release release;
             c.all_gather_v(in, out, counts);
             return out;
           })
      .def(
          "reduce_scatter",
          [](Communicator& c, const Tensor& t, const std::string& op) {
            Tensor in = dense(t);
            if (t.dim() == 0 || t.shape()[0] % c.size() != 0)
              fail("reduce_scatter", "the first dimension of ", shape_str(t.shape()),
                   " must split evenly over ", c.size(), " ranks; use reduce_scatter_v");
            Shape s = t.shape();
            s[0] /= c.size();
            Tensor out = Tensor::empty(s, t.dtype(), t.device());
            py::gil_scoped_release release;
            c.reduce_scatter(in, out, parse_op(op));
            return out;
          },
          py::arg("tensor"), py::arg("op") = "sum")
      .def(
          "reduce_scatter_v",
          [](Communicator& c, const Tensor& t, const std::vector<int64_t>& counts,
             const std::string& op) {
            check_peer("reduce_scatter_v", c, c.rank(), "rank");
            if (static_cast<int>(counts.size()) != c.size())
              fail("reduce_scatter_v", "got ", counts.size(), " counts for ", c.size(), " ranks");
            Tensor in = dense(t), out = like(t, counts[c.rank()]);
            py::gil_scoped_release release;
            c.reduce_scatter_v(in, out, counts, parse_op(op));
            return out;
          },
          py::arg("tensor"), py::arg("counts"), py::arg("op") = "sum")
      .def("all_to_all",
           [](Communicator& c, const Tensor& t) {
             Tensor in = dense(t), out = Tensor::empty(t.shape(), t.dtype(), t.device());
             py::gil_scoped_release release;
             c.all_to_all(in, out);
             return out;
           })
      .def("all_to_all_v",
           [](Communicator& c, const Tensor& t, const std::vector<int64_t>& send_counts,
              const std::vector<int64_t>& recv_counts) {
             int64_t total = 0;
             for (int64_t n : recv_counts) total += n;
             Tensor in = dense(t), out = like(t, total);
             py::gil_scoped_release release;
             c.all_to_all_v(in, send_counts, out, recv_counts);
             return out;
           })
      .def(
          "broadcast",
          [](Communicator& c, Tensor& t, int root) {
            Tensor d = dense(t);
            {
              py::gil_scoped_release release;
              c.broadcast(d, root);
            }
            if (!d.same(t)) copy_(t, d);
            return t;
          },
          py::arg("tensor"), py::arg("root") = 0)
      .def(
          "reduce",
          [](Communicator& c, Tensor& t, int root, const std::string& op) {
            Tensor d = dense(t);
            {
              py::gil_scoped_release release;
              c.reduce(d, root, parse_op(op));
            }
            if (!d.same(t)) copy_(t, d);
            return t;
          },
          py::arg("tensor"), py::arg("root") = 0, py::arg("op") = "sum")
      .def(
          "gather",
          [](Communicator& c, const Tensor& t, int root, py::object counts) -> py::object {
            auto cs = counts_or_empty(counts);
            int64_t total = t.numel() * c.size();
            if (!cs.empty()) {
              total = 0;
              for (int64_t n : cs) total += n;
            }
            Tensor in = dense(t), out = like(t, c.rank() == root ? total : 0);
            {
              py::gil_scoped_release release;
              c.gather(in, out, root, cs);
            }
            if (c.rank() != root) return py::none();
            return py::cast(cs.empty() ? reshape(out, blocks_shape(t, c.size())) : out);
          },
          py::arg("tensor"), py::arg("root") = 0, py::arg("counts") = py::none())
      .def(
          "scatter",
          [](Communicator& c, py::object t, int root, py::object counts, py::object like_t) {
            auto cs = counts_or_empty(counts);
            Tensor in = t.is_none() ? Tensor() : dense(t.cast<Tensor>());
            if (c.rank() == root && !in.defined())
              fail("scatter", "the root rank ", root, " must pass the tensor to scatter");
            Tensor proto = in.defined() ? in : like_t.cast<Tensor>();
            int64_t n = cs.empty() ? proto.numel() / std::max(c.size(), 1) : cs[c.rank()];
            if (!in.defined()) in = like(proto, 0);
            Tensor out = like(proto, n);
            {
              py::gil_scoped_release release;
              c.scatter(in, out, root, cs);
            }
            return out;
          },
          py::arg("tensor"), py::arg("root") = 0, py::arg("counts") = py::none(),
          py::arg("like") = py::none())
      .def(
          "send",
          [](Communicator& c, const Tensor& t, int dst, int tag) {
            Tensor d = dense(t);
            py::gil_scoped_release release;
            c.send(d, dst, tag);
          },
          py::arg("tensor"), py::arg("dst"), py::arg("tag") = 0)
      .def(
          "recv",
          [](Communicator& c, Tensor& t, int src, int tag) {
            Tensor d = dense(t);
            {
              py::gil_scoped_release release;
              c.recv(d, src, tag);
            }
            if (!d.same(t)) copy_(t, d);
            return t;
          },
          py::arg("tensor"), py::arg("src"), py::arg("tag") = 0)
      .def("barrier",
           [](Communicator& c) {
             py::gil_scoped_release release;
             c.barrier();
           })
      .def("new_group", [](Communicator& c, const std::vector<int>& ranks) {
        py::gil_scoped_release release;
        return c.group(ranks);
      });

  m.def(
      "new_communicator",
      [](std::shared_ptr<Store> store, int rank, int world_size, const std::string& host,
         double timeout_s, const std::string& device_backend) -> std::shared_ptr<Communicator> {
        if (world_size == 1) return comm::make_local_communicator();
        py::gil_scoped_release release;
        return comm::make_device_communicator(
            comm::make_gloo_communicator(store, rank, world_size, host, seconds(timeout_s)), store,
            device_backend);
      },
      py::arg("store"), py::arg("rank"), py::arg("world_size"), py::arg("host") = "127.0.0.1",
      py::arg("timeout_s") = 300.0, py::arg("device_backend") = "auto");
  m.def("local_communicator", &comm::make_local_communicator);
}

}  // namespace ofl::internal::py_bind
