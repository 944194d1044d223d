// Reading a distributed checkpoint (what flow.save writes for global tensors: per-rank
// safetensors shards and index.json, python/oneflowlike/_checkpoint.py) from C++: each tensor as
// the shard one rank holds under a placement and SBP, reading only the files whose pieces
// overlap it. What the C++ API loads a global graph's weights with.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "sbp/placement.h"

namespace ofl::internal::checkpoint {

class Reader {
 public:
  // Reads dir/index.json; raises naming it when it is missing, corrupt or of another format.
  explicit Reader(std::string dir);
  ~Reader();
  bool contains(const std::string& name) const;
  // Tensor `name` (checked against `shape` and `dtype`) as the rank at `coords` of `placement`
  // holds it under `nd_sbp`; without a placement, the whole tensor. A partial-sum layout holds
  // the value at coordinate 0 of its partial axes and zeros elsewhere. Raises naming the file
  // for a missing, truncated or corrupt shard.
  Tensor read(const std::string& name, const Shape& shape, DType dtype,
              const std::optional<Placement>& placement = std::nullopt, const NdSbp& nd_sbp = {},
              const std::vector<int64_t>& coords = {});
  // The shard files read so far (their names), for tests.
  std::vector<std::string> files_read() const;

 private:
  struct Index;
  std::string dir_;
  std::unique_ptr<Index> index_;
};

}  // namespace ofl::internal::checkpoint
