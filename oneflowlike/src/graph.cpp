#include "oneflowlike/graph.h"

#include <map>
#include <mutex>
#include <shared_mutex>

#include "core/autograd/grad_mode.h"
#include "core/safetensors.h"
#include "graph/executor.h"
#include "graph/serialize.h"
#include "oneflowlike/src/api_util.h"
#include "ops/creation.h"

namespace ofl {

namespace graph = internal::graph;
using api::fail;
using api::from_internal;
using api::guarded;
using api::to_internal;

namespace {

std::string info_str(const TensorInfo& info) {
  return info.name + ": " + internal::shape_str(info.shape) + " " + dtype_name(info.dtype);
}

std::vector<TensorInfo> infos(const std::vector<graph::ValueInfo>& values, const Device& device) {
  std::vector<TensorInfo> out;
  for (const graph::ValueInfo& v : values)
    out.push_back({v.name, from_internal(v.dtype), v.shape, device});
  return out;
}

}  // namespace

// The loaded text and weights, and the graph built for each batch size met so far (shared by
// every thread that calls forward: built once under the lock, then only read).
struct Graph::Impl {
  std::string where, text;
  Device device;
  std::map<std::string, internal::Tensor> variables;  // on `device`
  graph::Signature signature;
  std::vector<TensorInfo> inputs, outputs;

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
    auto built =
        std::make_shared<const graph::Graph>(graph::from_json(text, variables, where, options));
    std::unique_lock lock(mutex);
    return by_batch.emplace(batch, std::move(built)).first->second;
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
  return guarded([&] {
    auto impl = std::make_shared<Impl>();
    impl->where = dir + "/graph.json";
    impl->text = graph::read_text(impl->where);
    impl->device = device;
    impl->signature = graph::signature_from_json(impl->text, impl->where);
    impl->inputs = infos(impl->signature.inputs, device);
    impl->outputs = infos(impl->signature.outputs, device);
    for (auto& [name, t] : internal::safetensors::read(dir + "/weights.safetensors"))
      impl->variables.emplace(name, internal::to_device(t, to_internal(device)));
    impl->at(impl->signature.batch);  // built (and checked) now: forward finds it ready
    return Graph(std::move(impl));
  });
}

std::vector<Tensor> Graph::forward(const std::vector<Tensor>& inputs) const {
  return guarded([&] {
    const int64_t batch = impl_->check(inputs);
    std::shared_ptr<const graph::Graph> g = impl_->at(batch);
    std::vector<internal::Tensor> in;
    for (const Tensor& t : inputs) in.push_back(t.impl());
    internal::autograd::NoGradGuard no_grad;
    std::vector<Tensor> out;
    for (internal::Tensor& t : graph::run(*g, in))
      out.emplace_back(std::make_shared<const internal::Tensor>(std::move(t)));
    return out;
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
