// Reading a distributed checkpoint (what flow.save writes for global tensors: per-rank
// safetensors shards and index.json, python/oneflowlike/_checkpoint.py): each tensor as the shard
// one rank holds under a placement and SBP, reading only the files whose pieces overlap it. The
// one reader of checkpoints: the C++ API loads a global graph's weights with it, flow.load too.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "sbp/placement.h"

namespace ofl::internal::checkpoint {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;  // [begin, end) per axis

// Why pieces (Ranges inside `shape`) do not tile it exactly ("" when they do): they must be
// pairwise disjoint, their volumes adding up to the whole.
std::string tiling_error(const Shape& shape, const std::vector<Ranges>& pieces);

class Reader {
 public:
  struct TensorInfo {
    std::string name;
    Shape shape;
    DType dtype;
  };
  // Reads dir/index.json and checks all of it (each tensor's pieces must tile it); raises
  // naming it when it is corrupt or of another format, NotFoundError when it is missing.
  explicit Reader(std::string dir);
  ~Reader();
  bool contains(const std::string& name) const;
  // The logical tensors, in index.json's order.
  const std::vector<TensorInfo>& tensors() const;
  // The saved object's structure (index.json's "tree", JSON text): {"__tensor__": name} for each
  // tensor, {"__dict__": [[key, value]...]}, {"__tuple__": [...]}, lists and JSON scalars.
  const std::string& tree() const;
  // The shard files index.json names.
  std::vector<std::string> files() const;
  // Tensor `name` (checked against `shape` and `dtype`) as the rank at `coords` of `placement`
  // holds it under `nd_sbp`; without a placement, the whole tensor. A partial-sum layout holds
  // the value at coordinate 0 of its partial axes and zeros elsewhere. Raises naming the file
  // for a truncated or corrupt shard, NotFoundError for a missing one.
  Tensor read(const std::string& name, const Shape& shape, DType dtype,
              const std::optional<Placement>& placement = std::nullopt, const NdSbp& nd_sbp = {},
              const std::vector<int64_t>& coords = {});
  // The shard files read so far (their names), for tests.
  std::vector<std::string> files_read() const;
  // By shard file, the bytes of its pieces copied into what read() returned so far.
  std::map<std::string, int64_t> bytes_read() const;

 private:
  struct Index;
  std::string dir_;
  std::unique_ptr<Index> index_;
};

}  // namespace ofl::internal::checkpoint
