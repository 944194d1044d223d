// Global tensors in Python: to_global / to_local / reshard / numpy of the logical tensor, and
// flow.boxing's cost, explain and comm_log. Python keeps the default boxing context (the world
// communicator comes from flow.distributed).
#include <cstdlib>

#include "boxing/reshard.h"
#include "convert.h"
#include "core/autograd/node.h"
#include "ops/ops.h"
#include "sbp/global_info.h"

namespace ofl::py_bind {

namespace {

// The spec boxing prices plans with: the JSON file OFL_CLUSTER_SPEC names (e.g. one written by
// `python -m oneflowlike.profile_cluster`), else the rough loopback figures.
ClusterSpec default_cluster() {
  const char* path = std::getenv("OFL_CLUSTER_SPEC");
  return path && *path ? ClusterSpec::load(path) : ClusterSpec::cpu_loopback(1);
}

struct DefaultBoxing {
  std::shared_ptr<PlanCache> cache = std::make_shared<PlanCache>(default_cluster());
  std::vector<std::string> log;
  bool logging = false;
};

DefaultBoxing& boxing() {
  static DefaultBoxing* b = new DefaultBoxing();  // outlives interpreter teardown
  return *b;
}

BoxingContext context(std::shared_ptr<comm::Communicator> world) {
  BoxingContext ctx;
  ctx.world = std::move(world);
  ctx.cache = boxing().cache;
  ctx.log = boxing().logging ? &boxing().log : nullptr;
  return ctx;
}

const GlobalInfo& info_of(const Tensor& t, const char* op) {
  if (!t.is_global()) fail(op, "expects a global tensor, got a local ", t.str());
  return *t.impl()->global;
}

// A Tensor handle for this rank's shard, carrying the global layout.
Tensor wrap(const GlobalTensor& g) {
  Tensor t = g.local.alias();
  t.impl()->global = std::make_shared<GlobalInfo>(GlobalInfo{g.shape, g.placement, g.nd_sbp});
  return t;
}

GlobalTensor unwrap(const Tensor& t) {
  const GlobalInfo& info = info_of(t, "to_global");
  return {t.alias(), info.shape, info.placement, info.nd_sbp};
}

}  // namespace

void bind_global(py::module_& m) {
  m.def("make_global", [](const Tensor& local, const Placement& placement, const NdSbp& nd_sbp,
                          std::shared_ptr<comm::Communicator> world, bool check_meta) {
    if (local.is_global()) fail("to_global", "the tensor is already global");
    BoxingContext ctx = context(world);
    Tensor out;
    {
      py::gil_scoped_release release;
      out = wrap(make_global(local.is_contiguous() ? local : contiguous_copy(local), placement,
                             nd_sbp, ctx, check_meta));
    }
    // The local input's gradient is this rank's shard of the global gradient.
    if (autograd::needs_grad(local))
      autograd::record("to_global", {local}, {out},
                       [world, placement, nd_sbp](const autograd::Grads& g,
                                                  const autograd::Needs&) -> autograd::Grads {
                         BoxingContext ctx = context(world);
                         return {reshard(unwrap(g[0]), placement, nd_sbp, ctx).local};
                       });
    return out;
  });
  m.def("reshard", [](const Tensor& x, const Placement& placement, const NdSbp& nd_sbp,
                      std::shared_ptr<comm::Communicator> world) {
    BoxingContext ctx = context(world);
    GlobalTensor g = unwrap(x);
    Tensor out;
    {
      py::gil_scoped_release release;
      out = wrap(reshard(g, placement, nd_sbp, ctx));
    }
    // Reshard keeps the logical tensor, so its backward reshards the gradient back.
    if (autograd::needs_grad(x))
      autograd::record(
          "reshard", {x}, {out},
          [world, from_p = g.placement, from = g.nd_sbp](
              const autograd::Grads& grads, const autograd::Needs&) -> autograd::Grads {
            BoxingContext ctx = context(world);
            return {wrap(reshard(unwrap(grads[0]), from_p, from, ctx))};
          });
    return out;
  });
  m.def("global_to_full", [](const Tensor& x, std::shared_ptr<comm::Communicator> world) {
    BoxingContext ctx = context(std::move(world));
    GlobalTensor g = unwrap(x);
    py::gil_scoped_release release;
    return to_full(g, ctx);
  });
  m.def("to_local", [](const Tensor& x) {
    GlobalTensor g = unwrap(x);
    Tensor out = g.local.alias();
    if (autograd::needs_grad(x))
      autograd::record(
          "to_local", {x}, {out},
          [shape = g.shape, p = g.placement, s = g.nd_sbp](
              const autograd::Grads& grads, const autograd::Needs&) -> autograd::Grads {
            return {wrap({grads[0], shape, p, s})};
          });
    return out;
  });
  // Every rank holds the same full tensor (e.g. from the same seed): keep this rank's shard.
  m.def("global_from_full",
        [](const Tensor& full, const Placement& placement, const NdSbp& nd_sbp, int rank) {
          validate_sbp("to_global", full.shape(), nd_sbp, placement);
          auto coords = placement.coords_of(rank);
          Tensor local = coords ? contiguous(shard_of(full, placement, nd_sbp, *coords))
                                : Tensor::empty({0}, full.dtype(), full.device());
          return wrap({local, full.shape(), placement, nd_sbp});
        });
  m.def("global_shape",
        [](const Tensor& x) { return py::tuple(py::cast(info_of(x, "shape").shape)); });
  m.def("global_placement", [](const Tensor& x) { return info_of(x, "placement").placement; });
  m.def("global_sbp", [](const Tensor& x) { return info_of(x, "sbp").nd_sbp; });
  m.def("shard_of",
        [](const Tensor& full, const Placement& p, const NdSbp& s,
           const std::vector<int64_t>& coords) { return shard_of(full, p, s, coords); });
  m.def("boxing_plan", [](const Shape& shape, DType dtype, const Placement& from_p,
                          const NdSbp& from, const Placement& to_p, const NdSbp& to) {
    auto plan = boxing().cache->get(shape, dtype, from_p, from, to_p, to);
    return py::make_tuple(plan->seconds, plan->str(), plan->num_communication_steps());
  });
  m.def("boxing_log_start", []() {
    boxing().log.clear();
    boxing().logging = true;
  });
  m.def("boxing_log_stop", []() {
    boxing().logging = false;
    return boxing().log;
  });
  // A fresh PlanCache: plans priced with the old spec are dropped with it.
  m.def("set_cluster_spec",
        [](const ClusterSpec& spec) { boxing().cache = std::make_shared<PlanCache>(spec); });
  m.def("get_cluster_spec", []() { return boxing().cache->cluster(); });
  m.def("boxing_cache_stats",
        []() { return py::make_tuple(boxing().cache->hits(), boxing().cache->misses()); });
}

}  // namespace ofl::py_bind
