// The one dispatcher every op call goes through (DESIGN.md): check and infer once from the
// inputs' metas, route by the inputs' kind, record autograd once.
//
//   meta    -> outputs are meta tensors with the inferred shapes and dtypes; nothing runs
//   global  -> the global executor (registered by global/; core does not include it)
//   traced  -> (graph mode) appends a node to the graph being built
//   local   -> allocates the outputs and runs the op's compute on the device's kernels
#pragma once
#include <vector>

#include "core/op_def.h"

namespace ofl::internal {

enum class TensorKind : uint8_t { kLocal = 0, kMeta = 1, kGlobal = 2, kTraced = 3 };
inline constexpr int kNumTensorKinds = 4;

// What runs a call whose inputs are of one kind. `out` holds the inferred output metas (logical
// shapes); the handler returns the outputs (without autograd history: the dispatcher records it).
class KindHandler {
 public:
  virtual ~KindHandler() = default;
  virtual std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in,
                                  const Attrs& attrs, const std::vector<TensorMeta>& out) = 0;
  // The shape ops see: a global tensor's logical shape.
  virtual const Shape& logical_shape(const Tensor& t) const { return t.shape(); }
};
void set_kind_handler(TensorKind kind, KindHandler* handler);
KindHandler* kind_handler(TensorKind kind);

// The kind of a call: traced over global over meta over local. While a trace is open on this
// thread, every call is traced (tensors from outside the trace become graph variables).
TensorKind kind_of(const std::vector<Tensor>& inputs);
// Set by graph/trace.cpp while a trace is open on this thread.
void set_tracing(bool on);
bool tracing();
// A tensor's meta as ops see it (logical shape for global tensors).
TensorMeta meta_of(const Tensor& t);

// flow.autocast on this thread: ops with an Autocast policy cast the floating inputs they take
// on `device` (see OpDef::autocast).
struct AutocastState {
  bool enabled = false;
  DeviceType device = DeviceType::kCUDA;
  DType dtype = DType::kBFloat16;  // the low precision
};
AutocastState& autocast_state();

std::vector<Tensor> dispatch(const OpDef& def, const std::vector<Tensor>& inputs,
                             const Attrs& attrs = {});
Tensor dispatch1(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs = {});
// By name, for callers below ops/ (autograd's gradient sums): the op must be registered.
Tensor call_op(const char* name, const std::vector<Tensor>& inputs, const Attrs& attrs = {});

// Runs one of def's public signatures with its parsed arguments: the signature's call, or else
// the op itself (tensor arguments as its inputs in order, the others as its attributes by name).
CallResult call_api(const OpDef& def, const Api& api, const CallArgs& args);

// Runs the op's infer alone: the output metas, or the op's error for bad inputs.
std::vector<TensorMeta> infer_metas(const OpDef& def, const std::vector<TensorMeta>& in,
                                    const Attrs& attrs);
// PyTorch's rules for writing into `self` in place, raised under op's name: not a leaf or a view
// that requires grad (while grad mode is on), and not through an expanded view (one element at
// several positions). The dispatcher checks them for every in-place op.
void check_writable(const char* op, const Tensor& self);

// Runs the op's compute on local tensors (no checks, no autograd): what the global executor
// runs on each rank's shards (with the peers of its streamed inputs, where they arrived split).
std::vector<Tensor> run_local(const OpDef& def, const std::vector<Tensor>& inputs,
                              const Attrs& attrs, const std::vector<TensorMeta>& out,
                              const std::vector<StreamedBlocks>* streamed = nullptr);

}  // namespace ofl::internal
