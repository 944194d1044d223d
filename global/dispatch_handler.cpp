// The global kind of the dispatcher: a call with global inputs runs through the global executor,
// which picks a signature from the op's SBP rule, reshards, and runs the op's compute on shards.
#include "core/dispatcher.h"
#include "ops/global_op.h"
#include "sbp/global_info.h"

namespace ofl {

namespace {

class GlobalHandler : public KindHandler {
 public:
  std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                          const std::vector<TensorMeta>& out) override {
    GlobalOp op;
    op.name = def.name.c_str();
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
      if (!def.shard_attrs) return run_local(def, locals, attrs, metas);
      std::vector<Shape> in_shapes;
      std::vector<std::vector<int64_t>> offsets;
      for (size_t i = 0; i < locals.size(); ++i) {
        in_shapes.push_back(meta_of(in[i]).shape);
        offsets.push_back(shard_offsets(i));
      }
      return run_local(def, locals, def.shard_attrs(attrs, {in_shapes, shapes, offsets}), metas);
    };
    return run_global(op);
  }
  const Shape& logical_shape(const Tensor& t) const override { return t.impl()->global->shape; }
};

const bool registered = [] {
  static GlobalHandler handler;
  set_kind_handler(TensorKind::kGlobal, &handler);
  return true;
}();

}  // namespace

}  // namespace ofl
