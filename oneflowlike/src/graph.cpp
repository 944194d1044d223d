#include "oneflowlike/graph.h"

#include <fstream>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include <sys/stat.h>

#include "boxing/reshard.h"
#include "core/autograd/grad_mode.h"
#include "core/safetensors.h"
#include "graph/executor.h"
#include "graph/serialize.h"
#include "oneflowlike/src/api_util.h"
#include "ops/creation.h"
#include "ops/shape_ops.h"
#include "sbp/placement.h"

namespace ofl {

namespace graph = internal::graph;
using api::fail;
using api::from_internal;
using api::guarded;
using api::to_internal;

namespace {

using Weights = std::map<std::string, internal::Tensor>;

std::vector<Tensor> wrap(std::vector<internal::Tensor> tensors) {
  std::vector<Tensor> out;
  for (internal::Tensor& t : tensors)
    out.emplace_back(std::make_shared<const internal::Tensor>(std::move(t)));
  return out;
}

std::string info_str(const TensorInfo& info) {
  return info.name + ": " + internal::shape_str(info.shape) + " " + dtype_name(info.dtype);
}

Weights read_weights(const std::string& path, const Device& device) {
  Weights out;
  for (auto& [name, t] : internal::safetensors::read(path))
    out.emplace(name, internal::to_device(t, to_internal(device)));
  return out;
}

std::vector<TensorInfo> infos(const std::vector<graph::ValueInfo>& values, const Device& device) {
  std::vector<TensorInfo> out;
  for (const graph::ValueInfo& v : values)
    out.push_back({v.name, from_internal(v.dtype), v.shape, device});
  return out;
}

// A safetensors file's tensors on `device`. A file with hard links (save_for_generation links
// the graphs' equal weights) is read once while any graph holds it, and the graphs share the
// tensors; a file without is read for each graph, which then has its own (a graph that writes
// a variable in place writes only its own).
std::shared_ptr<const Weights> weights_of(const std::string& path, const Device& device) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_nlink < 2)
    return std::make_shared<const Weights>(read_weights(path, device));
  const auto key =
      std::make_tuple(uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_size),
                      int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec), device.str());
  static std::mutex mutex;
  static std::map<decltype(key), std::weak_ptr<const Weights>> loaded;
  std::lock_guard lock(mutex);
  std::erase_if(loaded, [](const auto& entry) { return entry.second.expired(); });
  if (auto held = loaded[key].lock()) return held;
  auto read = std::make_shared<const Weights>(read_weights(path, device));
  loaded[key] = read;
  return read;
}

}  // namespace

// The loaded text and weights, and the graph built for each batch size met so far (shared by
// every thread that calls forward: built once under the lock, then only read).
struct Graph::Impl {
  std::string dir, where, text;
  Device device;
  std::shared_ptr<const Weights> variables;  // on `device`
  graph::Signature signature;
  std::vector<TensorInfo> inputs, outputs;

  std::shared_ptr<internal::BoxingContext> ctx;  // a global graph's world; null for a local one

  mutable std::shared_mutex mutex;
  mutable std::map<int64_t, std::shared_ptr<const graph::Graph>> by_batch;

  std::shared_ptr<const graph::Graph> at(int64_t batch) const {
    {
      std::shared_lock lock(mutex);
      if (auto it = by_batch.find(batch); it != by_batch.end()) return it->second;
    }
    graph::LoadOptions options;
    options.batch = batch == signature.batch ? 0 : batch;
    options.device = to_internal(device);
    options.ctx = ctx;
    auto built = std::make_shared<const graph::Graph>(
        ctx ? graph::load(dir, options) : graph::from_json(text, *variables, where, options));
    std::unique_lock lock(mutex);
    return by_batch.emplace(batch, std::move(built)).first->second;
  }

  // Runs g on the inputs: a global graph's given whole on every rank (each keeps its shard) or,
  // with given_shards, as this rank's shards; a global graph's outputs come back whole.
  std::vector<Tensor> run(const std::shared_ptr<const graph::Graph>& g,
                          const std::vector<Tensor>& inputs, bool given_shards) const {
    internal::autograd::NoGradGuard no_grad;
    std::vector<internal::Tensor> in;
    for (const Tensor& t : inputs) in.push_back(t.impl());
    if (!ctx) return wrap(graph::run(*g, in));
    // One call at a time in this process, whichever graph: the ranks' collectives must meet in
    // the same order.
    static std::mutex collective;
    std::lock_guard lock(collective);
    const int rank = graph::rank_of(*ctx->world);
    for (size_t i = 0; i < in.size(); ++i) {
      const graph::Value& v = g->values()[size_t(g->inputs()[i])];
      if (!v.is_global()) continue;
      auto coords = v.placement->coords_of(rank);
      internal::Tensor local =
          !coords ? internal::outside_shard(v.shape, v.dtype, v.device)
          : given_shards
              ? in[i]
              : internal::contiguous(internal::shard_of(in[i], *v.placement, v.nd_sbp, *coords));
      in[i] = internal::as_tensor({local, v.shape, *v.placement, v.nd_sbp}, ctx);
    }
    std::vector<internal::Tensor> out = graph::run(*g, in);
    for (internal::Tensor& t : out)
      if (t.is_global()) t = internal::to_full(internal::as_global(t, "forward"), *ctx);
    return wrap(std::move(out));
  }

  // The batch of these inputs, after checking each against its info.
  int64_t check(const std::vector<Tensor>& given) const {
    if (given.size() != inputs.size()) {
      std::string want;
      for (const TensorInfo& info : inputs) want += (want.empty() ? "" : ", ") + info_str(info);
      fail("forward", "the graph takes ", inputs.size(), " input", inputs.size() == 1 ? "" : "s",
           " (", want, "), got ", given.size());
    }
    int64_t batch = 0;
    const TensorInfo* batch_from = nullptr;
    for (size_t i = 0; i < given.size(); ++i) {
      const TensorInfo& info = inputs[i];
      const Tensor& t = given[i];
      if (!t.defined()) fail("forward", "input ", i, " (", info.name, ") is an undefined tensor");
      const std::vector<int64_t> shape = t.shape();
      bool fits = shape.size() == info.shape.size() && t.dtype() == info.dtype;
      for (size_t d = 0; fits && d < shape.size(); ++d)
        fits = info.shape[d] < 0 || info.shape[d] == shape[d];
      if (!fits)
        fail("forward", "input ", i, " is ", internal::shape_str(shape), " ", dtype_name(t.dtype()),
             " where the graph takes ", info_str(info),
             signature.batch ? " (-1: any batch size)" : "");
      if (t.device() != device)
        fail("forward", "input ", i, " (", info.name, ") is on ", t.device().str(),
             " but the graph was loaded on ", device.str());
      for (size_t d = 0; d < shape.size(); ++d) {
        if (info.shape[d] >= 0) continue;
        if (shape[d] == 0)
          fail("forward", "input ", i, " (", info.name, ") has a batch of 0: nothing to run");
        if (batch_from && shape[d] != batch)
          fail("forward", "input ", i, " (", info.name, ") has a batch of ", shape[d], " but ",
               batch_from->name, " has ", batch);
        batch = shape[d];
        batch_from = &info;
      }
    }
    return batch ? batch : signature.batch;
  }
};

Graph::Graph(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Graph Graph::load(const std::string& dir, const Device& device) {
  return load_on(dir, device, nullptr);
}

Graph Graph::load(const std::string& dir, const World& world, const Device& device) {
  return load_on(dir, device, world.impl());
}

Graph Graph::load_on(const std::string& dir, const Device& device,
                     std::shared_ptr<internal::BoxingContext> ctx) {
  return guarded([&] {
    auto impl = std::make_shared<Impl>();
    impl->dir = dir;
    impl->ctx = std::move(ctx);
    impl->where = dir + "/graph.json";
    impl->text = graph::read_text(impl->where);
    impl->device = device;
    impl->signature = graph::signature_from_json(impl->text, impl->where);
    impl->inputs = infos(impl->signature.inputs, device);
    impl->outputs = infos(impl->signature.outputs, device);
    // A global graph's weights are a distributed checkpoint, read (per batch size) as this
    // rank's shards; a local graph's are read once here.
    if (!std::ifstream(dir + "/weights/index.json"))
      impl->variables = weights_of(dir + "/weights.safetensors", device);
    else if (!impl->ctx)
      fail("load", dir,
           " holds a graph saved over placements: load it with a World "
           "(ofl::init_distributed()) on the ranks it was saved for");
    impl->at(impl->signature.batch);  // built (and checked) now: forward finds it ready
    return Graph(std::move(impl));
  });
}

std::vector<Tensor> Graph::forward(const std::vector<Tensor>& inputs) const {
  return guarded([&] {
    const int64_t batch = impl_->check(inputs);
    return impl_->run(impl_->at(batch), inputs, /*given_shards=*/false);
  });
}

std::vector<Tensor> Graph::forward_shards(const std::vector<Tensor>& shards) const {
  return guarded([&] {
    if (!impl_->ctx) return forward(shards);
    std::shared_ptr<const graph::Graph> g = impl_->at(impl_->signature.batch);
    if (shards.size() != impl_->inputs.size())
      fail("forward_shards", "the graph takes ", impl_->inputs.size(), " inputs, got ",
           shards.size());
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::vector<int64_t> want = local_shape(i);
      const TensorInfo& info = impl_->inputs[i];
      if (!shards[i].defined() || shards[i].shape() != want || shards[i].dtype() != info.dtype ||
          shards[i].device() != impl_->device)
        fail("forward_shards", "input ", i, " (", info.name, ") is ",
             shards[i].defined() ? shards[i].str() : "undefined", " where this rank's shard is ",
             internal::shape_str(want), " ", dtype_name(info.dtype), " ", impl_->device.str());
    }
    return impl_->run(g, shards, /*given_shards=*/true);
  });
}

std::vector<int64_t> Graph::local_shape(size_t input) const {
  return guarded([&] {
    if (input >= impl_->inputs.size())
      fail("local_shape", "input ", input, " of a graph of ", impl_->inputs.size(), " inputs");
    if (!impl_->ctx) return impl_->inputs[input].shape;
    std::shared_ptr<const graph::Graph> g = impl_->at(impl_->signature.batch);
    const graph::Value& v = g->values()[size_t(g->inputs()[input])];
    if (!v.is_global()) return std::vector<int64_t>(v.shape.begin(), v.shape.end());
    const auto coords = v.placement->coords_of(graph::rank_of(*impl_->ctx->world));
    const internal::Shape local =
        coords ? internal::local_shape(v.shape, v.nd_sbp, *v.placement, *coords)
               : internal::Shape();
    return std::vector<int64_t>(local.begin(), local.end());
  });
}

const std::vector<TensorInfo>& Graph::input_infos() const {
  return impl_->inputs;
}
const std::vector<TensorInfo>& Graph::output_infos() const {
  return impl_->outputs;
}
int64_t Graph::saved_batch() const {
  return impl_->signature.batch;
}

void Graph::warmup(int64_t batch) const {
  guarded([&] {
    if (batch < 0) fail("warmup", "batch ", batch, " is negative");
    if (batch && !dynamic_batch())
      fail("warmup", "the graph was saved for one batch size only: warmup() without a batch");
    std::vector<Tensor> zeros;
    for (const TensorInfo& info : impl_->inputs) {
      std::vector<int64_t> shape = info.shape;
      for (int64_t& d : shape)
        if (d < 0) d = batch ? batch : impl_->signature.batch;
      zeros.emplace_back(std::make_shared<const internal::Tensor>(
          internal::zeros(shape, to_internal(info.dtype), to_internal(impl_->device))));
    }
    forward(zeros);
  });
}

std::string Graph::str() const {
  std::string s = "Graph(";
  for (size_t i = 0; i < impl_->inputs.size(); ++i)
    s += (i ? ", " : "") + info_str(impl_->inputs[i]);
  s += " -> ";
  for (size_t i = 0; i < impl_->outputs.size(); ++i)
    s += (i ? ", " : "") + info_str(impl_->outputs[i]);
  return s + ", " + std::to_string(impl_->at(saved_batch())->nodes().size()) + " nodes)";
}

}  // namespace ofl
