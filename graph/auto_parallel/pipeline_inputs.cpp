// plan_pipeline's inputs as files (pipeline.h: save_pipeline_inputs, load_pipeline_inputs).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "boxing/reshard.h"
#include "core/comm/refusing.h"
#include "core/error.h"
#include "graph/auto_parallel/pipeline.h"
#include "graph/serialize.h"

namespace ofl::internal::auto_parallel {

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kOp = "plan_pipeline";
constexpr const char* kFormat = "oneflowlike-pipeline-inputs";
constexpr int kFormatVersion = 1;
constexpr int kMaxDepth = 16;  // pipeline.json nests 4 levels deep

std::string step_file(size_t i) {
  return "step" + std::to_string(i) + ".json";
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.flush()) fail(kOp, "cannot write ", path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    fail<NotFoundError>(kOp, "cannot open ", path.string(),
                        " (not a folder plan_pipeline(save=...) wrote?)");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// pipeline.json, read with errors naming it and the entry.
struct Reader {
  std::string where;

  template <class... Args>
  [[noreturn]] void bad(const Args&... args) const {
    fail(kOp, where, ": ", args...);
  }
  Json parse(const std::string& text) const {
    try {
      // Refused while parsing: nlohmann's recursive copy of a far deeper value would exhaust the
      // stack.
      return Json::parse(text, [&](int depth, Json::parse_event_t, Json&) {
        if (depth > kMaxDepth) bad("nests deeper than ", kMaxDepth, " levels (damaged?)");
        return true;
      });
    } catch (const Json::parse_error& e) {  // (its what() may quote bytes that are not UTF-8)
      bad("is not JSON (a syntax error at byte ", e.byte, "; truncated or damaged?)");
    }
  }
  const Json& at(const Json& j, const char* key, const std::string& what) const {
    if (!j.is_object() || !j.contains(key)) bad(what, " has no \"", key, "\"");
    return j[key];
  }
  int64_t integer(const Json& j, const char* key, const std::string& what, int64_t least) const {
    const Json& v = at(j, key, what);
    if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > (1 << 30))
      bad(what, "'s ", key, " ", v.dump(), " is not an integer from ", least, " to 2^30");
    return v.get<int64_t>();
  }
  bool flag(const Json& j, const char* key, const std::string& what) const {
    const Json& v = at(j, key, what);
    if (!v.is_boolean()) bad(what, "'s ", key, " is not true or false");
    return v.get<bool>();
  }
  const Json& list(const Json& j, const char* key, const std::string& what) const {
    const Json& v = at(j, key, what);
    if (!v.is_array()) bad(what, "'s ", key, " is not a list");
    return v;
  }
};

// The world a loaded step's global values sit in: this process as rank 0, talking to no one (the
// planner runs no collectives; the variables are meta tensors).
std::shared_ptr<BoxingContext> planning_context(const ClusterSpec& cluster) {
  auto ctx = std::make_shared<BoxingContext>();
  ctx->world = std::make_shared<comm::RefusingCommunicator>(0, std::vector<int>{0}, "planning", kOp,
                                                            "a saved step is planned, not run");
  ctx->cache = std::make_shared<PlanCache>(cluster);
  return ctx;
}

}  // namespace

void save_pipeline_inputs(const std::string& dir, const PipelineInputs& in) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(kOp, "cannot make the folder ", dir, ": ", ec.message());
  Json steps = Json::array();
  for (size_t i = 0; i < in.steps.size(); ++i) {
    const StageStep& s = in.steps[i];
    Json variables = Json::array();
    for (const graph::Variable& v : s.traced->variables())
      variables.push_back({{"value", v.value},
                           {"name", s.name_of ? s.name_of(v.value) : "%" + std::to_string(v.value)},
                           {"kept", s.fixed.count(v.value) > 0},
                           {"trained", v.tensor.requires_grad()}});
    write_file(fs::path(dir) / step_file(i), graph::to_json(*s.traced));
    steps.push_back({{"devices_per_stage", s.devices_per_stage},
                     {"micro_batches", s.micro_batches},
                     {"graph", step_file(i)},
                     {"variables", std::move(variables)},
                     {"kept_in_place", s.fixed_in_place}});
  }
  const Json j = {{"format", kFormat},
                  {"format_version", kFormatVersion},
                  {"layers", in.layers},
                  {"total_devices", in.total_devices},
                  {"budget", std::isfinite(in.budget) ? Json(in.budget) : Json(nullptr)},
                  {"cluster", Json::parse(in.cluster.to_json())},
                  {"recompute", recompute_name(in.recompute)},
                  {"chunks", in.chunks},
                  {"steps", std::move(steps)}};
  write_file(fs::path(dir) / "pipeline.json", j.dump(1) + "\n");  // last: the folder is whole
}

PipelineInputs load_pipeline_inputs(const std::string& dir) {
  const Reader r{(fs::path(dir) / "pipeline.json").string()};
  const Json j = r.parse(read_file(r.where));
  if (!j.is_object() || j.value("format", Json()) != kFormat)
    r.bad("is not a ", kFormat, " file (plan_pipeline(save=...) writes one)");
  if (j.value("format_version", Json()) != kFormatVersion)
    r.bad("has format_version ", r.at(j, "format_version", "the file").dump(),
          "; this build reads ", kFormatVersion);
  PipelineInputs in;
  in.layers = int(r.integer(j, "layers", "the file", 1));
  in.total_devices = int(r.integer(j, "total_devices", "the file", 1));
  const Json& budget = r.at(j, "budget", "the file");
  if (!budget.is_null() && !(budget.is_number() && budget.get<double>() > 0))
    r.bad("the budget ", budget.dump(), " is not a positive number of bytes (or null: none)");
  if (!budget.is_null()) in.budget = budget.get<double>();
  const Json recompute = j.value("recompute", Json("either"));  // folders saved before it: either
  try {
    in.recompute = parse_recompute(recompute.is_string() ? recompute.get<std::string>() : "");
  } catch (const Error&) {
    r.bad("recompute is ", recompute.dump(), ", not \"either\", \"always\" or \"never\"");
  }
  const Json chunks = j.value("chunks", Json::array({1}));  // folders saved before it: 1F1B
  const auto positive = [](const Json& c) {
    return c.is_number_integer() && c.get<int64_t>() >= 1;
  };
  if (!chunks.is_array() || chunks.empty() || !std::all_of(chunks.begin(), chunks.end(), positive))
    r.bad("chunks is ", chunks.dump(), ", not a list of counts of at least 1");
  in.chunks = chunks.get<std::vector<int>>();
  try {
    in.cluster = ClusterSpec::from_json(r.at(j, "cluster", "the file").dump());
  } catch (const Error& e) {
    r.bad("its cluster: ", e.what());
  }
  const std::shared_ptr<BoxingContext> ctx = planning_context(in.cluster);
  const Json& steps = r.list(j, "steps", "the file");
  if (steps.empty()) r.bad("has no steps");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string what = "step " + std::to_string(i);
    const Json& step = steps[i];
    StageStep s;
    s.devices_per_stage = int(r.integer(step, "devices_per_stage", what, 1));
    s.micro_batches = int(r.integer(step, "micro_batches", what, 1));
    // Files from before kept_in_place priced kept layouts with their weights free to move.
    if (step.contains("kept_in_place")) s.fixed_in_place = r.flag(step, "kept_in_place", what);
    if (step.value("graph", Json()) != step_file(i))
      r.bad(what, "'s graph is not \"", step_file(i), "\"");
    const std::string path = (fs::path(dir) / step_file(i)).string();
    graph::LoadOptions options;
    options.ctx = ctx;
    options.device = Device{DeviceType::kMeta};  // every value: the ops' checks see no data
    auto traced = std::make_shared<graph::Graph>(graph::from_json(
        read_file(path),
        [](const std::string&, const graph::Value& v) {  // this rank's shard, without data
          const Shape shape = v.is_global() ? local_shape(v.shape, v.nd_sbp, *v.placement,
                                                          *v.placement->coords_of(0))
                                            : v.shape;
          return Tensor::empty(shape, v.dtype, Device{DeviceType::kMeta});
        },
        path, options));
    std::map<int, std::string> names;
    for (const Json& v : r.list(step, "variables", what)) {
      const int id = int(r.integer(v, "value", what + "'s variable", 0));
      const auto& vars = traced->variables();
      auto it = std::find_if(vars.begin(), vars.end(),
                             [&](const graph::Variable& x) { return x.value == id; });
      if (it == vars.end()) r.bad(what, " names value ", id, ", not a variable of ", path);
      const Json& name = r.at(v, "name", what + "'s variable");
      if (!name.is_string()) r.bad(what, "'s variable ", id, " has a name that is not a string");
      names[id] = name.get<std::string>();
      if (r.flag(v, "kept", what + "'s variable")) s.fixed.insert(id);
      if (r.flag(v, "trained", what + "'s variable")) {
        Tensor t = it->tensor;  // a handle on the graph's variable
        t.set_requires_grad(true, kOp);
      }
    }
    s.traced = std::move(traced);
    s.name_of = [names](int value) {
      const auto it = names.find(value);
      return it != names.end() ? it->second : "%" + std::to_string(value);
    };
    in.steps.push_back(std::move(s));
  }
  return in;
}

}  // namespace ofl::internal::auto_parallel
