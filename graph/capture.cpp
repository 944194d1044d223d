#include "graph/capture.h"

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "core/stream.h"
#include "graph/executor.h"

namespace ofl::internal::graph {

std::string why_not_captured(const Graph& g, const std::vector<Tensor>& inputs) {
  for (const Value& v : g.values())
    if (v.is_global()) return "it runs on global tensors, whose collectives are not captured";
  for (const Node& n : g.nodes()) {
    if (n.kind != NodeKind::kOp) return "it communicates (" + n.name() + ")";
    if (n.random_counters) return n.name() + " draws random numbers, which a replay would repeat";
    bool reads = false;
    for (int id : n.inputs) reads |= id >= 0;
    for (int id : n.outputs)
      if (reads && g.values()[size_t(id)].device.type != DeviceType::kCUDA)
        return n.name() + " computes " + value_str(g.values()[size_t(id)]) +
               " off the device, which a replay would not run again";
  }
  std::optional<Device> device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || t.device().type != DeviceType::kCUDA || (device && t.device() != *device))
      return "input " + std::to_string(i) + " is " + (t.defined() ? t.str() : "None") +
             ": a captured step's inputs live on one CUDA device, where a replay copies each "
             "call's values";
    device = t.device();
  }
  if (!device) return "the graph has no input on a CUDA device";
  return "";
}

namespace {

// A copy of `t` made on the current stream.
Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  copy_kernel().get(t.device().type)(t, out);
  return out;
}

}  // namespace

CapturedStep::CapturedStep(std::shared_ptr<const Graph> g, const std::vector<Tensor>& inputs)
    : g_(std::move(g)) {
  if (const std::string reason = why_not_captured(*g_, inputs); !reason.empty())
    fail("cudagraph", "cannot capture this step: ", reason);
  device_ = inputs[0].device();
  runtime_ = runtime_for(device_.type);
  OFL_CHECK(runtime_, "cudagraph: no runtime for ", device_.str());
  const int index = device_.index;
  const Stream compute = current_stream(device_);
  stream_ = runtime_->capture_stream(index);
  const Stream own{device_, stream_};
  // Its buffers and every block the capture frees belong to its stream.
  runtime_->stream_wait(index, stream_, compute.handle);
  {
    StreamGuard guard(own);
    for (const Tensor& t : inputs) static_in_.push_back(copy_of(t));
    runtime_->begin_capture(index, stream_);
    try {
      static_out_ = run(*g_, static_in_);
      exec_ = runtime_->end_capture(index, stream_);
    } catch (...) {
      try {
        if (!exec_) runtime_->end_capture(index, stream_);
      } catch (...) {  // the op's error is the one to report
      }
      static_in_.clear();  // (the destructor does not run: give the stream back here)
      static_out_.clear();
      runtime_->release_capture(index, nullptr, stream_);
      throw;
    }
  }
  runtime_->stream_wait(index, compute.handle, stream_);
}

CapturedStep::~CapturedStep() {
  static_in_.clear();
  static_out_.clear();
  if (runtime_ && stream_) runtime_->release_capture(device_.index, exec_, stream_);
}

std::vector<Tensor> CapturedStep::operator()(const std::vector<Tensor>& inputs) {
  if (inputs.size() != static_in_.size())
    fail("cudagraph", "the captured step takes ", static_in_.size(), " inputs (",
         signature_str(*g_), "), got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || inputs[i].shape() != static_in_[i].shape() ||
        inputs[i].dtype() != static_in_[i].dtype() || inputs[i].device() != device_)
      fail("cudagraph", "input ", i, " is ", inputs[i].defined() ? inputs[i].str() : "None",
           ", the captured step takes ", static_in_[i].str(), " (", signature_str(*g_), ")");
  const int index = device_.index;
  const Stream compute = current_stream(device_);
  runtime_->stream_wait(index, stream_, compute.handle);
  {
    StreamGuard guard(Stream{device_, stream_});
    for (size_t i = 0; i < inputs.size(); ++i)
      copy_kernel().get(device_.type)(inputs[i], static_in_[i]);
    runtime_->replay(index, exec_, stream_);
  }
  runtime_->stream_wait(index, compute.handle, stream_);
  std::vector<Tensor> out;
  for (const Tensor& t : static_out_) out.push_back(copy_of(t));
  return out;
}

}  // namespace ofl::internal::graph
