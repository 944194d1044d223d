// The global kind of the dispatcher: a call with global inputs runs through the global executor,
// which picks a signature from the op's SBP rule, reshards, and runs the op's compute on shards.
#include "core/dispatcher.h"
#include "global/forced.h"
#include "global/global_op.h"
#include "global/shards.h"
#include "sbp/global_info.h"

namespace ofl::internal {

namespace {

// Runs calls on global tensors through the executor; the forcing variant, installed while the
// conformance checker has a ForcedCall in scope (global/forced.h), runs them as it asks.
class GlobalHandler : public KindHandler {
 public:
  explicit GlobalHandler(bool forcing) : forcing_(forcing) {}
  std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                          const std::vector<TensorMeta>& out) override {
    GlobalOp op;
    op.def = &def;
    op.inputs = in;
    for (const TensorMeta& m : out) {
      op.out_shapes.push_back(m.shape);
      op.out_dtypes.push_back(m.dtype);
    }
    op.typed_attrs = &attrs;
    op.inplace = def.inplace;
    op.local = [&](const std::vector<Tensor>& locals, const std::vector<Shape>& shapes) {
      std::vector<TensorMeta> metas = out;
      for (size_t j = 0; j < metas.size(); ++j) metas[j].shape = shapes[j];
      std::vector<Shape> in_shapes;
      if (def.shard_attrs)
        for (const Tensor& t : in) in_shapes.push_back(meta_of(t).shape);
      return run_shards(def, locals, attrs, metas, in_shapes, shard_offsets, shard_out_offsets,
                        shard_streamed());
    };
    ForcedCall* forced = forcing_ ? forced_call() : nullptr;
    return forced && !forced->seen ? run_global_forced(op, *forced) : run_global(op);
  }
  const Shape& logical_shape(const Tensor& t) const override { return t.impl()->global->shape; }

 private:
  const bool forcing_;
};

GlobalHandler& forcing_handler() {
  static GlobalHandler handler(true);
  return handler;
}

}  // namespace

std::vector<Tensor> run_shards(const OpDef& def, const std::vector<Tensor>& locals,
                               const Attrs& attrs, const std::vector<TensorMeta>& out,
                               const std::vector<Shape>& in_shapes, const ShardOffsets& offset_of,
                               const ShardOffsets& out_offset_of,
                               const std::vector<StreamedBlocks>* streamed) {
  if (!def.shard_attrs) return run_local(def, locals, attrs, out, streamed);
  std::vector<Shape> out_shapes;
  for (const TensorMeta& m : out) out_shapes.push_back(m.shape);
  std::vector<std::vector<int64_t>> offsets, out_offsets;
  for (size_t i = 0; i < locals.size(); ++i) offsets.push_back(offset_of(i));
  for (size_t j = 0; j < out.size(); ++j) out_offsets.push_back(out_offset_of(j));
  return run_local(def, locals,
                   def.shard_attrs(attrs, {in_shapes, out_shapes, offsets, out_offsets}), out,
                   streamed);
}

namespace {

const bool registered = [] {
  static GlobalHandler handler(false);
  set_kind_handler(TensorKind::kGlobal, &handler);
  return true;
}();

}  // namespace

KindHandler& forcing_global_handler() {
  return forcing_handler();
}

}  // namespace ofl::internal
