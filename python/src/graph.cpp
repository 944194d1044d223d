// Graph mode's C++ side for nn.Graph (python/oneflowlike/nn/graph/graph.py): a trace of build() and
// the compiled graph it gives, run by the C++ executor.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "boxing/reshard.h"
#include "core/autograd/node.h"
#include "graph/auto_parallel/pipeline.h"
#include "graph/auto_parallel/planner.h"
#include "graph/auto_parallel/predict.h"
#include "graph/auto_parallel/stages.h"
#include "graph/capture.h"
#include "graph/executor.h"
#include "graph/passes/passes.h"
#include "graph/serialize.h"
#include "graph/trace.h"

namespace py = pybind11;

namespace ofl::internal::py_bind {

namespace {

// A plan with the traced graph it lays out, for Python (flow.auto_parallel.Plan).
struct PlanResult {
  std::shared_ptr<const graph::Graph> graph;
  auto_parallel::Plan plan;
  double budget;
  bool activations = true;  // counted in plan.memory
};

// The variables of `g` capturing the tensors in `keep` (they keep their layouts), and a name for
// each variable by value id from `names` (by _impl_id; "%<id>" for the others), for errors.
std::pair<std::set<int>, std::function<std::string(int)>> kept_and_names(
    const graph::Graph& g, const std::vector<Tensor>& keep,
    const std::map<uintptr_t, std::string>& names) {
  std::set<const void*> kept;
  for (const Tensor& t : keep) kept.insert(t.impl());
  std::set<int> fixed;
  std::map<int, std::string> name_of_value;
  for (const graph::Variable& v : g.variables()) {
    if (kept.count(v.tensor.impl())) fixed.insert(v.value);
    const auto it = names.find(reinterpret_cast<uintptr_t>(v.tensor.impl()));
    if (it != names.end()) name_of_value[v.value] = it->second;
  }
  return {fixed, [name_of_value](int value) {
            const auto it = name_of_value.find(value);
            return it != name_of_value.end() ? it->second : "%" + std::to_string(value);
          }};
}

// search_pipeline's steps from Python's (devices per stage, micro-batches, traced Graph, keep,
// names, kept in place) tuples.
std::vector<auto_parallel::StageStep> stage_steps(const py::list& steps) {
  std::vector<auto_parallel::StageStep> in;
  for (py::handle h : steps) {
    auto t = h.cast<py::tuple>();
    auto g = t[2].cast<std::shared_ptr<graph::Graph>>();
    auto [fixed, name_of] = kept_and_names(*g, t[3].cast<std::vector<Tensor>>(),
                                           t[4].cast<std::map<uintptr_t, std::string>>());
    in.push_back(
        {t[0].cast<int>(), t[1].cast<int>(), g, std::move(fixed), t[5].cast<bool>(), name_of});
  }
  return in;
}

py::dict choice_dict(const auto_parallel::PipelineChoice& c) {
  py::dict out;
  out["option"] = c.option;
  out["stages"] = c.stages;
  out["devices_per_stage"] = c.devices_per_stage;
  out["micro_batches"] = c.micro_batches;
  out["chunks"] = c.chunks;
  out["recompute"] = c.recompute;
  out["first_layer"] = c.first_layer;
  out["stage_seconds"] = c.stage_seconds;
  out["stage_bytes"] = c.stage_bytes;
  out["seconds"] = c.seconds;
  out["description"] = c.str();
  return out;
}

std::string megabytes(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << bytes / (1 << 20) << " MB";
  return os.str();
}

std::string microseconds(double seconds) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << seconds * 1e6 << " us";
  return os.str();
}

// A table of the variables' layouts, then the ops' signatures counted by op, then the totals.
std::string explain(const PlanResult& r, const std::map<int, std::string>& names) {
  const graph::Graph& g = *r.graph;
  std::ostringstream os;
  os << "variable                                  shape           layout      bytes/device\n";
  for (const auto& [id, layout] : r.plan.layout) {
    const graph::Value& v = g.values()[size_t(id)];
    const auto it = names.find(id);
    const std::string name = it != names.end() ? it->second : "%" + std::to_string(id);
    os << std::left << std::setw(42) << name << std::setw(16) << shape_str(v.shape) << std::setw(12)
       << layout.str() << megabytes(double(graph::bytes_per_rank(v, layout))) << "\n";
  }
  std::map<std::pair<std::string, std::string>, int> ops;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (!r.plan.sig[i].in.empty()) ++ops[{g.nodes()[i].name(), r.plan.sig[i].str()}];
  os << "\nop                    signature                                         count\n";
  for (const auto& [key, count] : ops)
    os << std::left << std::setw(22) << key.first << std::setw(50) << key.second << count << "\n";
  os << "\npredicted step: " << microseconds(r.plan.seconds()) << " (compute "
     << microseconds(r.plan.compute_seconds) << ", communication "
     << microseconds(r.plan.comm_seconds) << "); memory " << megabytes(r.plan.memory)
     << " per device for variables, gradients and " << (r.activations ? "" : "no ")
     << "activations";
  if (std::isfinite(r.budget)) os << " (budget " << megabytes(r.budget) << ")";
  if (r.plan.peak > 0) os << "; compiled, the step peaks at " << megabytes(r.plan.peak);
  if (r.plan.lower_bound_seconds < r.plan.seconds())
    os << "\nwithin " << std::setprecision(3)
       << 100 * (1 - r.plan.lower_bound_seconds / r.plan.seconds())
       << "% of the optimum: no plan is predicted faster than "
       << microseconds(r.plan.lower_bound_seconds);
  return os.str();
}

}  // namespace

void bind_graph(py::module_& m) {
  using graph::Graph;
  using graph::Trace;
  py::class_<Graph, std::shared_ptr<Graph>>(m, "CompiledGraph")
      .def_static(
          "load", [](const std::string& dir) { return std::make_shared<Graph>(graph::load(dir)); },
          py::arg("path"), "The graph nn.Graph.save wrote to the folder `path` (local graphs)")
      .def_static(
          "load_at",
          [](const std::string& dir, int64_t batch) {
            graph::LoadOptions options;
            options.batch = batch;
            return std::make_shared<Graph>(graph::load(dir, options));
          },
          py::arg("path"), py::arg("batch"),
          "The saved graph rebuilt for another batch size (saved with a dynamic batch)")
      .def("run",
           [](const Graph& g, const std::vector<Tensor>& in) {
             py::gil_scoped_release release;
             return graph::run(g, in);
           })
      .def(
          "run_timed",
          [](const Graph& g, const std::vector<Tensor>& in) {
            // (outputs, [(node, "compute" or "comm", start, end, stage, micro-batch, backward)])
            std::vector<graph::NodeSpan> spans;
            std::vector<Tensor> out;
            {
              py::gil_scoped_release release;
              out = graph::run(g, in, &spans);
            }
            py::list timed;
            for (const graph::NodeSpan& s : spans) {
              const graph::Node& n = g.nodes()[s.node];
              timed.append(py::make_tuple(s.node, s.comm ? "comm" : "compute", s.start, s.end,
                                          n.stage, n.micro, n.backward));
            }
            return py::make_tuple(out, timed);
          },
          "Runs the graph and says when each node with work on this rank ran.")
      .def("__str__", &Graph::str)
      .def(
          "why_not_captured",
          [](const Graph& g, const std::vector<Tensor>& in) {
            return graph::why_not_captured(g, in);
          },
          "Why config.enable_cudagraph cannot capture this graph on these inputs ('' if it can)")
      .def_property_readonly("signature", &graph::signature_str)
      .def_property_readonly("num_nodes", [](const Graph& g) { return g.nodes().size(); })
      .def_property_readonly("num_variables", [](const Graph& g) { return g.variables().size(); })
      .def_property_readonly("peak_bytes", &graph::peak_bytes)
      .def(
          "predict",
          [](const Graph& g, const ClusterSpec& cluster) {
            PlanCache cache(cluster);
            const auto p = auto_parallel::predict(g, cache);
            return py::make_tuple(p.step_seconds, p.compute_seconds, p.comm_seconds);
          },
          py::arg("cluster"))
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
  py::class_<graph::CapturedStep>(m, "CapturedStep",
                                  "A compiled step captured as a CUDA graph and replayed")
      .def(py::init([](std::shared_ptr<Graph> g, const std::vector<Tensor>& in) {
             py::gil_scoped_release release;
             return std::make_unique<graph::CapturedStep>(std::move(g), in);
           }),
           py::arg("graph"), py::arg("inputs"))
      .def("__call__", [](graph::CapturedStep& step, const std::vector<Tensor>& in) {
        py::gil_scoped_release release;
        return step(in);
      });
  py::class_<Trace>(m, "Trace")
      .def(py::init<>())
      .def("input", &Trace::input)
      .def("set_micro_batch", &Trace::set_micro_batch, py::arg("micro"))
      .def("set_defer_grad_reductions", &Trace::set_defer_grad_reductions, py::arg("on"))
      .def("box_grad", &Trace::box_grad, py::arg("param"), py::arg("grad"),
           py::arg("nd_sbp") = py::none())
      .def("input_moves", &Trace::input_moves, py::arg("outputs"))
      .def(
          "finish",
          [](Trace& t, const std::vector<Tensor>& outputs, bool auto_parallel, double budget,
             const std::vector<Placement>& stages, const std::string& schedule, int micro_batches,
             bool fuse_add_to_output) {
            std::shared_ptr<BoxingContext> ctx = t.context();
            graph::CompileOptions options{auto_parallel, budget};
            options.fusion.add_to_output = fuse_add_to_output;
            if (!stages.empty())
              options.pipeline = {graph::pipeline::parse_schedule(schedule), micro_batches, stages};
            return std::make_shared<Graph>(
                graph::compile(t.finish(outputs), ctx ? ctx->cache : nullptr, options));
          },
          py::arg("outputs"), py::arg("auto_parallel") = false,
          py::arg("memory_budget") = std::numeric_limits<double>::infinity(),
          py::arg("stages") = std::vector<Placement>{}, py::arg("schedule") = "1f1b",
          py::arg("micro_batches") = 1, py::arg("fuse_add_to_output") = true)
      .def("finish_traced",
           [](Trace& t, const std::vector<Tensor>& outputs) {
             return std::make_shared<Graph>(graph::dead_code(t.finish(outputs)));
           })
      .def("close", &Trace::close);
  py::class_<PlanCache, std::shared_ptr<PlanCache>>(m, "PlanCache",
                                                    "Boxing plans priced under one cluster spec")
      .def(py::init<ClusterSpec>(), py::arg("cluster"))
      .def_property_readonly("hits", &PlanCache::hits)
      .def_property_readonly("misses", &PlanCache::misses);
  py::class_<PlanResult>(m, "AutoParallelPlan")
      .def_property_readonly("compute_seconds",
                             [](const PlanResult& r) { return r.plan.compute_seconds; })
      .def_property_readonly("comm_seconds",
                             [](const PlanResult& r) { return r.plan.comm_seconds; })
      .def_property_readonly("seconds", [](const PlanResult& r) { return r.plan.seconds(); })
      .def_property_readonly("lower_bound_seconds",
                             [](const PlanResult& r) { return r.plan.lower_bound_seconds; })
      .def_property_readonly(
          "repeated_layers",
          [](const PlanResult& r) { return py::make_tuple(r.plan.layers, r.plan.copied_layers); })
      .def_property_readonly("memory_bytes", [](const PlanResult& r) { return r.plan.memory; })
      .def_property_readonly("activations", [](const PlanResult& r) { return r.activations; })
      .def_property_readonly("peak_bytes", [](const PlanResult& r) { return r.plan.peak; })
      .def("layouts",
           [](const PlanResult& r) {
             // (variable tensor, layout, value id, bytes per device), for Python to name by its
             // module's parameters
             py::list out;
             for (const graph::Variable& v : r.graph->variables())
               if (auto it = r.plan.layout.find(v.value); it != r.plan.layout.end()) {
                 out.append(py::make_tuple(
                     v.tensor, it->second, v.value,
                     graph::bytes_per_rank(r.graph->values()[size_t(v.value)], it->second)));
               }
             return out;
           })
      .def("signatures",
           [](const PlanResult& r) {
             py::list out;
             for (size_t i = 0; i < r.graph->nodes().size(); ++i)
               if (!r.plan.sig[i].in.empty())
                 out.append(py::make_tuple(r.graph->nodes()[i].name(), r.plan.sig[i].str()));
             return out;
           })
      .def("explain", &explain)
      .def(
          "layer_costs",
          [](const PlanResult& r, std::shared_ptr<PlanCache> shared) {
            // The plan compiled as graph mode would, priced per layer (auto_parallel/stages.h):
            // (forward, backward, update, state bytes, activation bytes, input bytes) per row.
            PlanCache& cache = *shared;
            std::vector<auto_parallel::LayerCost> rows;
            {
              py::gil_scoped_release release;
              rows = auto_parallel::layer_costs(
                  graph::lower_layout(auto_parallel::apply(*r.graph, r.plan), &cache), cache);
            }
            py::list out;
            for (const auto& c : rows)
              out.append(py::make_tuple(c.forward, c.backward, c.update, c.state_bytes,
                                        c.activation_bytes, c.input_bytes));
            return out;
          },
          py::arg("cache"));
  m.def(
      "plan_stages",
      [](const py::list& options, int total_devices, double budget) {
        // options: (devices per stage, micro-batches, send seconds, [layer_costs rows])
        std::vector<auto_parallel::StageOption> opts;
        for (py::handle h : options) {
          auto t = h.cast<py::tuple>();
          auto_parallel::StageOption o{.devices_per_stage = t[0].cast<int>(),
                                       .micro_batches = t[1].cast<int>(),
                                       .send_seconds = t[2].cast<double>()};
          for (py::handle row : t[3].cast<py::list>()) {
            auto c = row.cast<std::vector<double>>();
            if (c.size() != 6) fail("auto_parallel", "a layer's costs are 6 numbers");
            o.layers.push_back({c[0], c[1], c[2], c[3], c[4], c[5]});
          }
          opts.push_back(std::move(o));
        }
        auto_parallel::PipelineChoice c;
        {
          py::gil_scoped_release release;
          c = auto_parallel::plan_stages(opts, total_devices, budget);
        }
        return choice_dict(c);
      },
      py::arg("options"), py::arg("total_devices"), py::arg("budget"),
      "The pipeline (stages, layer split, micro-batches, recomputation) least in predicted step "
      "time that fits the budget, over per-layer cost tables (auto_parallel/stages.h).");
  m.def(
      "search_pipeline",
      [](const py::list& steps, int layers, int total_devices, double budget,
         std::shared_ptr<PlanCache> cache, const std::string& recompute,
         const std::vector<int>& chunks) {
        const std::vector<auto_parallel::StageStep> in = stage_steps(steps);
        const auto_parallel::Recompute allowed = auto_parallel::parse_recompute(recompute);
        auto_parallel::PipelineSearch found;
        {
          py::gil_scoped_release release;
          found = auto_parallel::search_pipeline(in, layers, total_devices, budget, *cache, allowed,
                                                 chunks);
        }
        py::dict out = choice_dict(found.choice);
        py::list options;
        for (const auto_parallel::StagePlan& o : found.options)
          options.append(py::make_tuple(o.costs.devices_per_stage, o.costs.micro_batches));
        out["options"] = options;
        py::list seconds;
        for (const auto_parallel::StagePlan& o : found.options) seconds.append(o.seconds);
        out["option_seconds"] = seconds;
        const auto_parallel::StagePlan& chosen = found.options[size_t(found.choice.option)];
        out["plan"] = PlanResult{in[size_t(chosen.step)].traced, chosen.plan, chosen.budget,
                                 chosen.activations};
        out["step"] = chosen.step;
        return out;
      },
      py::arg("steps"), py::arg("layers"), py::arg("total_devices"), py::arg("budget"),
      py::arg("cache"), py::arg("recompute") = "either", py::arg("chunks") = std::vector<int>{1},
      "plan_pipeline's search after the tracing (auto_parallel/pipeline.h): the chosen pipeline "
      "(plan_stages' fields), every option weighed as (devices per stage, micro-batches), and the "
      "chosen option's intra-op plan and step.");
  m.def(
      "save_pipeline_inputs",
      [](const std::string& dir, const py::list& steps, int layers, int total_devices,
         double budget, const ClusterSpec& cluster, const std::string& recompute,
         const std::vector<int>& chunks) {
        auto_parallel::save_pipeline_inputs(
            dir, {stage_steps(steps), layers, total_devices, budget, cluster,
                  auto_parallel::parse_recompute(recompute), chunks});
      },
      py::arg("dir"), py::arg("steps"), py::arg("layers"), py::arg("total_devices"),
      py::arg("budget"), py::arg("cluster"), py::arg("recompute") = "either",
      py::arg("chunks") = std::vector<int>{1},
      "Writes search_pipeline's inputs to the folder `dir` (auto_parallel/pipeline.h), for the C++ "
      "API's ofl::plan_pipeline.");
  m.def(
      "stage_placement",
      [](const std::string& device_type, int devices, const ClusterSpec& cluster, int first) {
        return auto_parallel::stage_placement(Device::parse(device_type).type, devices, cluster,
                                              first);
      },
      py::arg("device_type"), py::arg("devices"), py::arg("cluster"), py::arg("first") = 0,
      "One pipeline stage's placement: ranks first .. first + devices - 1, a (nodes, devices per "
      "node) mesh once it spans whole nodes, else a line.");
  m.def("_impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); });
  // Sets one field of where ops are called from (autograd::Place); returns its value before.
  const auto place_setter = [](int autograd::Place::*field) {
    return [field](int value) {
      autograd::Place p = autograd::current_place();
      std::swap(p.*field, value);
      autograd::set_current_place(p);
      return value;
    };
  };
  m.def("_set_layer", place_setter(&autograd::Place::layer),
        "Sets the repeated layer ops are traced in (-1: none); returns the one before.");
  m.def("_set_stage", place_setter(&autograd::Place::stage),
        "Sets the pipeline stage ops are called in (-1: none); returns the one before.");
  m.def(
      "auto_parallel_plan",
      [](std::shared_ptr<Graph> g, const ClusterSpec& cluster, double budget,
         const std::vector<Tensor>& keep, const std::map<uintptr_t, std::string>& names,
         bool activations, double update_weight, std::shared_ptr<PlanCache> shared, bool in_place) {
        const auto [fixed, name_of] = kept_and_names(*g, keep, names);
        // A shared cache (plan_pipeline's) keeps the conversions priced for the next plans.
        std::shared_ptr<PlanCache> own = shared ? shared : std::make_shared<PlanCache>(cluster);
        PlanCache& cache = *own;
        PlanResult r{g, {}, budget, activations};
        {
          py::gil_scoped_release release;
          r.plan =
              auto_parallel::plan(*g, cache, budget, fixed, name_of, activations,
                                  {.update_weight = update_weight, .fixed_in_place = in_place});
        }
        return r;
      },
      py::arg("graph"), py::arg("cluster"), py::arg("memory_budget"),
      py::arg("keep") = std::vector<Tensor>{},
      py::arg("names") = std::map<uintptr_t, std::string>{}, py::arg("activations") = true,
      py::arg("update_weight") = 1.0, py::arg("cache") = nullptr, py::arg("in_place") = false);
}

}  // namespace ofl::internal::py_bind
