// An op's compute on one rank's shards: what the eager global executor (global/dispatch_handler)
// and the graph executor (graph/executor) run once a call's inputs are in its signature's layouts.
#pragma once
#include <functional>
#include <vector>

#include "core/op_def.h"

namespace ofl::internal {

// Runs def's compute on `locals` (this rank's shards, or local constants) giving outputs of the
// shard shapes in `out`. An op whose compute depends on where its shards lie (a shard_attrs
// function: random blocks, vocabulary-split embeddings) gets attributes for them: `in_shapes` are
// the inputs' logical shapes and offset_of(i) / out_offset_of(i) where input / output i's shard
// begins in its logical tensor (as the signature lays it out). `streamed`: the peers of inputs
// that arrived as blocks for the compute to stream (global/streamed.h), or null.
using ShardOffsets = std::function<std::vector<int64_t>(size_t)>;
std::vector<Tensor> run_shards(const OpDef& def, const std::vector<Tensor>& locals,
                               const Attrs& attrs, const std::vector<TensorMeta>& out,
                               const std::vector<Shape>& in_shapes, const ShardOffsets& offset_of,
                               const ShardOffsets& out_offset_of,
                               const std::vector<StreamedBlocks>* streamed = nullptr);

}  // namespace ofl::internal
