// A compiled step captured as a device graph and replayed (nn.Graph's config.enable_cudagraph, as
// OneFlow's and torch.cuda.graphs): one launch for the whole step instead of one a kernel. The
// capture runs the step once on buffers of its own, on a stream of its own whose freed memory
// only that stream reuses (core/device.h), so every address its kernels were recorded with stays
// the step's. A replay copies the call's inputs into those buffers, launches the recorded
// kernels, and returns copies of the outputs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ofl::internal {
class DeviceRuntime;
}

namespace ofl::internal::graph {

// Why `g` run on `inputs` cannot be captured ("" where it can): a replay re-runs only the device's
// kernels with the values they were recorded with, so every input must be on one CUDA device,
// nothing may compute on the host from the step's values, draw random numbers (a replay would
// repeat the draws) or communicate.
std::string why_not_captured(const Graph& g, const std::vector<Tensor>& inputs);

class CapturedStep {
 public:
  // Captures g run on `inputs` (recorded, not run: a call computes); raises with
  // why_not_captured's reason, or the runtime's where an op does what a capture cannot hold
  // (waiting on the host).
  CapturedStep(std::shared_ptr<const Graph> g, const std::vector<Tensor>& inputs);
  ~CapturedStep();
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  // Replays on `inputs` (the signature of the captured ones; raises naming the graph's
  // otherwise).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

 private:
  std::shared_ptr<const Graph> g_;
  Device device_;
  DeviceRuntime* runtime_ = nullptr;
  void* stream_ = nullptr;
  void* exec_ = nullptr;
  std::vector<Tensor> static_in_, static_out_;
};

}  // namespace ofl::internal::graph
