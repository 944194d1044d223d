// A graph saved from Python (nn.Graph.save), loaded and run from C++ with no Python: on one
// device, from many threads at once, for any batch size when it was saved with a dynamic batch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oneflowlike/distributed.h"
#include "oneflowlike/tensor.h"

namespace ofl {

// An input or output of a graph: its name in build(), dtype, shape (-1 for a dimension that
// follows the batch) and device.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  Device device;
};

class Graph {
 public:
  // Reads dir/graph.json and dir/weights.safetensors and builds the graph for the batch it was
  // saved at; the weights go to `device` (graphs whose weights files are hard links of one,
  // as save_for_generation writes them, share the tensors in memory). Loading creates only the
  // framework's own ops: nothing in the files is executed. Throws naming the file and the entry for
  // a missing, corrupt or foreign folder.
  static Graph load(const std::string& dir, const Device& device = Device());
  // A graph saved from a global model (over placements), on every rank of `world`: each rank
  // reads its own shards of the weights. forward() is then collective: every rank calls it with
  // the same whole inputs, and every rank gets the whole outputs. Calls of global graphs in one
  // process run one at a time (the ranks' collectives must meet in the same order).
  static Graph load(const std::string& dir, const World& world, const Device& device = Device());

  // Runs the graph. Safe to call from many threads at once on one Graph. Dimension 0 of the
  // inputs may differ from call to call in a graph saved with a dynamic batch (the graph for a
  // new batch size is built once, on its first call). Throws naming the input for a wrong count,
  // dtype, device or shape.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) const;
  // The same with each input given as this rank's shard of it (local_shape(i)), not copied: an
  // input the graph writes in place (a KV cache) is written there. On a local graph, forward().
  std::vector<Tensor> forward_shards(const std::vector<Tensor>& shards) const;
  // The shape of this rank's shard of input i (its whole shape in a local graph; -1 for the
  // batch).
  std::vector<int64_t> local_shape(size_t input) const;

  const std::vector<TensorInfo>& input_infos() const;
  const std::vector<TensorInfo>& output_infos() const;
  // The batch the graph was traced at; 0 when every shape is fixed.
  int64_t saved_batch() const;
  bool dynamic_batch() const { return saved_batch() > 0; }
  // Builds the graph for `batch` (0: the saved one) and runs it once on zeros, so that the
  // first real call at that size pays for nothing.
  void warmup(int64_t batch = 0) const;
  std::string str() const;  // "Graph(idx: (-1, 8) int64 -> output: (-1, 8, 17) float32, 70 nodes)"

 private:
  struct Impl;
  explicit Graph(std::shared_ptr<Impl> impl);
  static Graph load_on(const std::string& dir, const Device& device,
                       std::shared_ptr<internal::BoxingContext> ctx);
  std::shared_ptr<Impl> impl_;
};

}  // namespace ofl
