// Global tensors in Python: to_global / to_local / reshard / numpy of the logical tensor, and
// flow.boxing's cost, explain and comm_log. Python keeps the default boxing context (the world
// communicator comes from flow.distributed).
#include <cstdlib>

#include "boxing/reshard.h"
#include "convert.h"
#include "core/autograd/node.h"
#include "global/global_op.h"
#include "global/simulate.h"
#include "graph/trace.h"
#include "ops/ops.h"
#include "sbp/global_info.h"

namespace ofl::internal::py_bind {

namespace {

struct DefaultBoxing {
  std::shared_ptr<PlanCache> cache = std::make_shared<PlanCache>(ClusterSpec::default_for(1));
  std::vector<std::string> log;
  bool logging = false;
  std::vector<PredictedCost> costs;
  bool costing = false;
  std::shared_ptr<BoxingContext> ctx;  // the tensors' context: one per world communicator
};

DefaultBoxing& boxing() {
  static DefaultBoxing* b = new DefaultBoxing();  // outlives interpreter teardown
  return *b;
}

// The context global tensors of `world` carry; ops on them plan with the current cache and
// log while comm_log() is open.
std::shared_ptr<BoxingContext> context(std::shared_ptr<comm::Communicator> world) {
  DefaultBoxing& b = boxing();
  if (!b.ctx || b.ctx->world != world) {
    b.ctx = std::make_shared<BoxingContext>();
    b.ctx->world = std::move(world);
  }
  b.ctx->cache = b.cache;
  b.ctx->log = b.logging ? &b.log : nullptr;
  b.ctx->costs = b.costing ? &b.costs : nullptr;
  return b.ctx;
}

const GlobalInfo& info_of(const Tensor& t, const char* op) {
  if (!t.is_global()) fail(op, "expects a global tensor, got a local ", t.str());
  return *t.impl()->global;
}

// to_global(placement, sbp) of a traced tensor inside nn.Graph.build: a boxing node (with no sbp,
// nd_sbp is empty and the SBP pass keeps the input's layout). Its gradient converts back to the
// input's placement and layout, or, where that layout is chosen when the graph compiles, to
// whatever the SBP pass gives it there.
Tensor traced_reshard(const Tensor& x, const Placement& placement, const NdSbp& nd_sbp) {
  graph::Trace* trace = graph::Trace::current();
  if (!trace) fail("to_global", "a traced tensor is used after its graph's tracing ended");
  if (!x.is_global() && !nd_sbp.all_broadcast())
    fail("to_global", "a local traced tensor of shape ", shape_str(x.shape()),
         " can only become broadcast "
         "inside build() (each rank computes the same whole tensor), not ",
         nd_sbp.str(), "; make the graph's input global before calling the graph");
  Tensor out = trace->box("to_global", x, placement, nd_sbp);
  if (autograd::needs_grad(x))
    autograd::record("to_global", {x}, {out},
                     [from_p = x.impl()->global->placement, from = x.impl()->global->nd_sbp](
                         const autograd::Grads& g, const autograd::Needs&) -> autograd::Grads {
                       return {graph::Trace::current()->box("to_global", g[0], from_p, from)};
                     });
  return out;
}

}  // namespace

void bind_global(py::module_& m) {
  m.def("check_placement_in_world",
        [](const Placement& placement, std::shared_ptr<comm::Communicator> world,
           const std::string& op) { check_placement_in_world(placement, *world, op.c_str()); });
  m.def("make_global",
        [](const Tensor& local, const Placement& placement, const NdSbp& nd_sbp,
           std::shared_ptr<comm::Communicator> world, bool check_meta, bool sync_data) {
          if (local.is_global()) fail("to_global", "the tensor is already global");
          auto ctx = context(world);
          Tensor out;
          {
            py::gil_scoped_release release;
            out = as_tensor(make_global(local.is_contiguous() ? local : contiguous_copy(local),
                                        placement, nd_sbp, *ctx, check_meta, sync_data),
                            ctx);
          }
          // The local input's gradient is this rank's shard of the global gradient.
          if (autograd::needs_grad(local))
            autograd::record(
                "to_global", {local}, {out},
                [ctx, placement, nd_sbp](const autograd::Grads& g,
                                         const autograd::Needs&) -> autograd::Grads {
                  return {reshard(as_global(g[0], "to_global"), placement, nd_sbp, *ctx).local};
                });
          return out;
        });
  // sbp None keeps x's layout (a traced x's as the graph compiles it). Inside build() a real
  // tensor (a parameter, a captured constant) is converted in the graph too, not now.
  m.def("reshard", [](const Tensor& x, const Placement& placement, const std::optional<NdSbp>& sbp,
                      std::shared_ptr<comm::Communicator> world) {
    if (x.is_traced() || graph::Trace::current())
      return traced_reshard(x, placement, sbp.value_or(NdSbp()));
    auto ctx = context(world);
    GlobalTensor g = as_global(x, "to_global");
    const NdSbp nd_sbp = sbp.value_or(g.nd_sbp);
    Tensor out;
    {
      py::gil_scoped_release release;
      out = as_tensor(reshard(g, placement, nd_sbp, *ctx), ctx);
    }
    // Reshard keeps the logical tensor, so its backward reshards the gradient back.
    if (autograd::needs_grad(x))
      autograd::record(
          "reshard", {x}, {out},
          [ctx, from_p = g.placement, from = g.nd_sbp](const autograd::Grads& grads,
                                                       const autograd::Needs&) -> autograd::Grads {
            return {as_tensor(reshard(as_global(grads[0], "to_global"), from_p, from, *ctx), ctx)};
          });
    return out;
  });
  m.def("global_to_full", [](const Tensor& x, std::shared_ptr<comm::Communicator> world) {
    if (x.is_traced()) require_data("numpy", x);
    auto ctx = context(std::move(world));
    GlobalTensor g = as_global(x, "numpy");
    py::gil_scoped_release release;
    return to_full(g, *ctx);
  });
  m.def("to_local", [](const Tensor& x) {
    if (x.is_traced() || graph::Trace::current())
      fail("to_local",
           "a traced tensor has no shard yet (data is not available while tracing); "
           "return it from build() and call to_local() on the graph's output");
    GlobalTensor g = as_global(x, "to_local");
    auto ctx = x.impl()->global->ctx;
    Tensor out = g.local.alias();
    if (autograd::needs_grad(x))
      autograd::record(
          "to_local", {x}, {out},
          [ctx, shape = g.shape, p = g.placement, s = g.nd_sbp](
              const autograd::Grads& grads, const autograd::Needs&) -> autograd::Grads {
            return {as_tensor({grads[0], shape, p, s}, ctx)};
          });
    return out;
  });
  // Every rank holds the same full tensor (e.g. from the same seed): keep this rank's shard, on
  // `device` when given (where the placement's shards live).
  m.def(
      "global_from_full",
      [](const Tensor& full, const Placement& placement, const NdSbp& nd_sbp,
         std::shared_ptr<comm::Communicator> world, std::optional<Device> device) {
        if (full.is_traced()) {  // made inside build(): the same on every rank, a constant
          graph::Trace* trace = graph::Trace::current();
          if (!trace) fail("to_global", "a traced tensor is used after its graph's tracing ended");
          const NdSbp whole(std::vector<Sbp>(nd_sbp.size(), Sbp::broadcast()));
          Tensor b = trace->box("to_global", full, placement, whole);
          return nd_sbp == whole ? b : trace->box("to_global", b, placement, nd_sbp);
        }
        if (full.device().is_meta()) {
          auto ctx = context(world);
          return as_tensor(meta_global(full.shape(), full.dtype(), placement, nd_sbp, *ctx), ctx);
        }
        validate_sbp("to_global", full.shape(), nd_sbp, placement);
        check_placement_in_world(placement, *world, "to_global");
        auto coords = placement.coords_of(world->ranks()[size_t(world->rank())]);
        const Device to = device ? *device : full.device();
        Tensor local = coords
                           ? to_device(contiguous(shard_of(full, placement, nd_sbp, *coords)), to)
                           : outside_shard(full.shape(), full.dtype(), to);
        return as_tensor({local, full.shape(), placement, nd_sbp}, context(world));
      },
      py::arg("full"), py::arg("placement"), py::arg("nd_sbp"), py::arg("world"),
      py::arg("device") = py::none());
  // The SBP conformance checker's simulated ranks (tests/python/test_sbp_conformance.py).
  m.def("sbp_simulated_global", &simulated_global);
  m.def("sbp_declared", [](py::function call) {
    Declared d = declared_signatures([&] { call(); });
    py::list sigs;
    for (const SbpSignature& s : d.signatures) sigs.append(py::make_tuple(s.in, s.out));
    return py::make_tuple(d.op, sigs);
  });
  m.def("sbp_run_as_laid_out", [](py::function call, const Sbp& out) {
    return run_first_op_as_laid_out([&] { call(); }, out);
  });
  m.def("global_shape",
        [](const Tensor& x) { return py::tuple(py::cast(info_of(x, "shape").shape)); });
  m.def("global_placement", [](const Tensor& x) { return info_of(x, "placement").placement; });
  m.def("global_sbp", [](const Tensor& x) {
    const NdSbp& sbp = info_of(x, "sbp").nd_sbp;
    if (sbp.empty())
      fail("sbp", "the SBP of a traced tensor is chosen when the graph compiles (after build())");
    return sbp;
  });
  m.def("global_local_shapes", [](const Tensor& x) {
    const GlobalInfo& g = info_of(x, "local_shapes");
    const std::vector<Shape> shapes = local_shapes(x);
    py::dict out;
    for (size_t i = 0; i < shapes.size(); ++i)
      out[py::int_(g.placement.ranks()[i])] = py::tuple(py::cast(shapes[i]));
    return out;
  });
  m.def("shard_of",
        [](const Tensor& full, const Placement& p, const NdSbp& s,
           const std::vector<int64_t>& coords) { return shard_of(full, p, s, coords); });
  // The [begin, end) per axis of the logical tensor that `rank` holds; None outside the
  // placement (distributed checkpoints write and read pieces by these).
  m.def("local_ranges",
        [](const Shape& shape, const Placement& p, const NdSbp& s,
           int64_t rank) -> std::optional<std::vector<std::pair<int64_t, int64_t>>> {
          auto coords = p.coords_of(rank);
          if (!coords) return std::nullopt;
          return local_ranges(shape, s, p, *coords);
        });
  m.def("boxing_plan", [](const Shape& shape, DType dtype, const Placement& from_p,
                          const NdSbp& from, const Placement& to_p, const NdSbp& to) {
    auto plan = boxing().cache->get(shape, dtype, from_p, from, to_p, to);
    return py::make_tuple(plan->seconds, plan->str(), plan->num_communication_steps());
  });
  m.def("boxing_log_start", []() {
    boxing().log.clear();
    boxing().logging = true;
    if (boxing().ctx) boxing().ctx->log = &boxing().log;
  });
  m.def("boxing_log_stop", []() {
    boxing().logging = false;
    if (boxing().ctx) boxing().ctx->log = nullptr;
    return boxing().log;
  });
  m.def("cost_log_start", []() {
    boxing().costs.clear();
    boxing().costing = true;
    if (boxing().ctx) boxing().ctx->costs = &boxing().costs;
  });
  m.def("cost_log_stop", []() {
    boxing().costing = false;
    if (boxing().ctx) boxing().ctx->costs = nullptr;
    py::list out;
    for (const PredictedCost& c : boxing().costs) {
      py::dict d;
      d["op"] = c.op;
      d["signature"] = c.signature;
      d["comm_seconds"] = c.comm_seconds;
      d["comm_bytes"] = c.comm_bytes;
      d["comm_steps"] = c.comm_steps;
      d["compute_seconds"] = c.compute_seconds;
      d["flops"] = c.flops;
      d["steps"] = c.steps;
      d["text"] = c.str();
      out.append(d);
    }
    boxing().costs.clear();
    return out;
  });
  // A fresh PlanCache: plans priced with the old spec are dropped with it.
  m.def("set_cluster_spec", [](const ClusterSpec& spec) {
    boxing().cache = std::make_shared<PlanCache>(spec);
    if (boxing().ctx) boxing().ctx->cache = boxing().cache;
  });
  m.def("get_cluster_spec", []() { return boxing().cache->cluster(); });
  m.def("boxing_cache_stats",
        []() { return py::make_tuple(boxing().cache->hits(), boxing().cache->misses()); });
}

}  // namespace ofl::internal::py_bind
