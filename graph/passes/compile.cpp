#include <cstdlib>
#include <functional>
#include <iostream>
#include <vector>

#include "graph/auto_parallel/planner.h"
#include "graph/passes/passes.h"

namespace ofl::internal::graph {

namespace {

bool printing() {
  const char* env = std::getenv("OFL_GRAPH_PRINT");
  return env && *env && std::string(env) != "0";
}

int64_t largest_placement(const Graph& g) {
  int64_t n = 0;
  for (const Value& v : g.values())
    if (v.is_global()) n = std::max(n, v.placement->size());
  return n;
}

struct Pass {
  const char* name;
  std::function<Graph(const Graph&)> run;
};

// The passes after the layout (lower_layout).
std::vector<Pass> lowering(PlanCache* cache, const pipeline::PipelineOptions* pipe) {
  return {
      {"insert_boxing", insert_boxing},
      {"share_conversions",
       [cache](const Graph& x) { return cache ? share_conversions(x, *cache) : x; }},
      {"order_by_schedule",
       [pipe](const Graph& x) {
         return pipe && !pipe->stages.empty() ? pipeline::order_by_schedule(x, *pipe) : x;
       }},
      {"bucket_grads", [](const Graph& x) { return bucket_grads(x); }},
      {"gather_params", [](const Graph& x) { return gather_params(x); }},
      {"hoist_collectives", [](const Graph& x) { return hoist_collectives(x); }},
      {"dead_code", dead_code},  // views left unread by gather_params
  };
}

}  // namespace

Graph lower_layout(const Graph& laid, PlanCache* cache, const pipeline::PipelineOptions* pipeline) {
  Graph g = laid;
  for (const Pass& pass : lowering(cache, pipeline)) g = pass.run(g);
  return g;
}

Graph compile(Graph g, std::shared_ptr<PlanCache> cache, const CompileOptions& options) {
  const bool print = printing();
  if (print) std::cerr << "[graph] traced:\n" << g.str() << "\n";
  if (const int64_t ranks = largest_placement(g); ranks && !cache)
    cache = std::make_shared<PlanCache>(ClusterSpec::default_for(int(ranks)));
  std::vector<Pass> passes = {
      {"dead_code", dead_code},
      {"drop_identity_views", drop_identity_views},
      {options.auto_parallel ? "auto_parallel" : "assign_sbp",
       [&](const Graph& x) {
         if (!cache) return x;
         if (!options.auto_parallel) return assign_sbp(x, *cache);
         return auto_parallel::apply(x, auto_parallel::plan(x, *cache, options.memory_budget,
                                                            auto_parallel::all_variables(x)));
       }},
  };
  for (Pass& pass : lowering(cache.get(), &options.pipeline)) passes.push_back(std::move(pass));
  if (options.fuse_elementwise && fusion_enabled())
    passes.push_back(
        {"fuse_elementwise", [&](const Graph& x) { return fuse_elementwise(x, options.fusion); }});
  for (const Pass& pass : passes) {
    g = pass.run(g);
    if (print) std::cerr << "[graph] after " << pass.name << ":\n" << g.str() << "\n";
  }
  return g;
}

}  // namespace ofl::internal::graph
