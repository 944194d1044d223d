// An op's whole definition (DESIGN.md, "One op, one definition, one dispatcher"): typed
// attributes, `infer` (every argument check, once), the SBP rule, the backward as calls to other
// ops, the cost, and the compute that runs kernels from the device tables. The dispatcher
// (core/dispatcher.h), the global executor, graph mode and the planner ask ops about themselves
// only through this registry.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/op_cost.h"
#include "core/op_schema.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace ofl::internal {

namespace comm {
class Communicator;
}

// --- typed attributes ---

enum class AttrType : uint8_t { kBool, kInt, kFloat, kString, kDType, kInts };
using AttrValue = std::variant<bool, int64_t, double, std::string, DType, std::vector<int64_t>>;
const char* attr_type_name(AttrType t);

struct AttrDef {
  const char* name;
  AttrType type;
};

// The attribute values of one call, by name. The dispatcher checks them against the op's schema.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const char*, AttrValue>> items) : items_(items) {}

  template <class T>
  const T& get(std::string_view name) const {
    const AttrValue& v = value(name);
    const T* p = std::get_if<T>(&v);
    OFL_CHECK(p, "attribute ", name, " has another type");
    return *p;
  }
  // Int attribute `name` as an axis of a tensor of `ndim` dimensions (normalize_axis: negative
  // ones count from the end; a 0-d tensor takes 0 and -1); raises op's IndexError otherwise.
  int64_t axis(std::string_view name, int64_t ndim, const char* op) const {
    return normalize_axis(get<int64_t>(name), ndim, op);
  }
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttrValue* find(std::string_view name) const;  // null when absent
  const AttrValue& value(std::string_view name) const;
  void set(const char* name, AttrValue v);
  const std::vector<std::pair<const char*, AttrValue>>& items() const { return items_; }
  std::string str() const;  // "axis=1, keepdim=true"

 private:
  std::vector<std::pair<const char*, AttrValue>> items_;
};

// --- what ops see of tensors without their data ---

struct TensorMeta {
  Shape shape;  // logical (a global tensor's whole shape)
  DType dtype = DType::kFloat32;
  Device device;
  bool defined = true;   // false: an absent optional input
  bool wrapped = false;  // a Python scalar (does not drive type promotion)
  std::string str() const;
};

using CostFn = OpCost (*)(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

// The 1-d SBP signatures an op accepts (sbp/signature.h); opaque to core.
struct SbpRule;

struct InferArgs {
  const char* op;
  const std::vector<TensorMeta>& in;
  const Attrs& attrs;
};
// An input a global op's compute takes block by block (OpDef::streamed) instead of whole: this
// rank holds one block along the streamed dim, the group's members hold the others, in the
// order of `starts` (where each member's block begins) and `lengths`.
struct StreamedBlocks {
  std::shared_ptr<comm::Communicator> group;  // null: the input arrived whole
  std::vector<int64_t> starts, lengths;
};

// Reads the inputs (local tensors on the op's device) and writes the outputs the dispatcher
// allocated from `infer`'s metas. `streamed` (one per input) is set only on the shards of a
// global op whose streamed inputs arrived split.
struct ComputeArgs {
  const std::vector<Tensor>& in;
  const std::vector<Tensor>& out;
  const Attrs& attrs;
  const std::vector<StreamedBlocks>* streamed = nullptr;
};
// The inputs and outputs the op saved (undefined where it saves none), their metas, one gradient
// per output (zeros where none flowed) and which inputs need one. Returns one per input.
struct BackwardArgs {
  const std::vector<Tensor>& in;
  const std::vector<Tensor>& out;
  const std::vector<TensorMeta>& in_meta;
  const std::vector<Tensor>& grads;
  const std::vector<bool>& needs;
  const Attrs& attrs;
};

// For view ops: the outputs as views of the inputs' storage (or, for reshape, a copy where no
// view exists), with the shapes `out` gives (a shard's shapes on global tensors).
struct ViewArgs {
  const std::vector<Tensor>& in;
  const std::vector<TensorMeta>& out;
  const Attrs& attrs;
};

// One rank's shards of a global call: the inputs' logical shapes, the local output shapes, and
// where each input's and output's shard begins in its logical tensor (per axis; zeros unless
// split).
struct ShardArgs {
  const std::vector<Shape>& in_shapes;
  const std::vector<Shape>& local_out;
  const std::vector<std::vector<int64_t>>& in_offsets;
  const std::vector<std::vector<int64_t>>& out_offsets;
};

// An elementwise op as one step of a fused program (graph/passes/fuse_elementwise.cpp, run by
// ops/fused.h's `_fused_elementwise`): its family and its code in that family (opaque here: the
// ops' enums), with the scalar parameters its attributes give.
struct ElementwiseStep {  // trivial: a fused program holds 32 of them inline, uninitialised
  enum Family : uint8_t { kUnary, kBinary, kWhere };
  Family family;
  int32_t code;
  double a, b;
};

enum SaveFlags : uint8_t { kSaveNone = 0, kSaveInputs = 1, kSaveOutputs = 2 };

// What an op does under autocast (flow.autocast), as PyTorch's op lists: its floating inputs on
// the autocast device go to the low-precision dtype (matmuls, convolutions) or up to float32
// (numerically sensitive ops: softmax, norms, losses, exp and log); others run as given.
enum class Autocast : uint8_t { kAsGiven, kLowPrecision, kFloat32 };

struct OpDef {
  std::string name;
  int num_inputs = 1;  // tensor inputs, weights and indices included; -1: a list of tensors
  uint32_t optional_inputs = 0;  // bit i: input i may be absent (a bias, a norm's weight)
  bool differentiable = true;
  CostFn cost = nullptr;
  const SbpRule* sbp = nullptr;  // null: only the all-broadcast signature

  // Set for ops the dispatcher runs. Composites (linear, mean, cross_entropy, ...) leave them
  // unset: registered for their name and cost, they run as calls of dispatched ops.
  std::vector<AttrDef> attrs;
  std::function<std::vector<TensorMeta>(const InferArgs&)> infer;
  std::function<void(const ComputeArgs&)> compute;
  std::function<std::vector<Tensor>(const ViewArgs&)> view;  // instead of compute
  // A view op: whether a call with these attributes from shape `in` to shape `out` gives its
  // input as it is (a slice of everything, a reshape to its own shape), which graph mode drops.
  std::function<bool(const Attrs&, const Shape& in, const Shape& out)> identity;
  std::function<std::vector<Tensor>(const BackwardArgs&)> backward;
  uint8_t saves = kSaveNone;  // an in-place op's saved input 0 is its value before the call
  bool inplace = false;       // output 0 is input 0, written in place
  // Takes or gives complex64 tensors (layout ops, copies, view_as_real); for every other op the
  // dispatcher raises "[op] is not supported for complex64 tensors" before any kernel runs.
  bool complex = false;
  Autocast autocast = Autocast::kAsGiven;
  // Attributes that depend on where a shard sits in its logical tensors (a vocabulary-split
  // table's first row, say), rewritten for one rank's shards. Null: the attributes hold for
  // shards as they are.
  std::function<Attrs(const Attrs&, const ShardArgs&)> shard_attrs;
  // Inputs (bit i: input i) that a signature wants broadcast but the compute can take as blocks
  // passed around their group (ring attention's keys and values): where such an input arrives
  // split along `streamed_dim` on the mesh axes that want it broadcast, the executors skip its
  // gather and pass its peers instead (ComputeArgs::streamed).
  uint32_t streamed_inputs = 0;
  int streamed_dim = 0;
  // The share of its shapes' cost that a shard's compute does, where the shard's place decides
  // it (causal attention: rows late in the sequence see more keys than early ones). Null: all.
  std::function<double(const Attrs&, const ShardArgs&)> shard_work;
  // For an elementwise op whose output computes in its inputs' floating dtype: the step it is in a
  // fused program, for these attributes (false where it cannot be one). Null: never fused.
  std::function<bool(const Attrs&, ElementwiseStep&)> elementwise;
  // The op's public signatures (core/op_schema.h), which Python binds as functions and Tensor
  // methods, and a one-line description for help(); ops without one are internal.
  std::vector<Api> api;
  const char* doc = nullptr;

  bool dispatched() const { return infer && (compute || view); }
};

// Registers ops at load time; a second registration of the same name is a bug.
bool register_ops(std::vector<OpDef> defs);
const std::deque<OpDef>& registered_ops();
const OpDef* find_op(std::string_view name);
// The registered op `name` (an internal error if there is none); for front ends to cache.
const OpDef& op_def(std::string_view name);

#define OFL_CONCAT_INNER(a, b) a##b
#define OFL_CONCAT(a, b) OFL_CONCAT_INNER(a, b)
// OFL_REGISTER_OPS({{.name = "add", .num_inputs = 2, .cost = elementwise_cost}, ...});
#define OFL_REGISTER_OPS(...)                                   \
  static const bool OFL_CONCAT(ofl_ops_registered_, __LINE__) = \
      ::ofl::internal::register_ops(__VA_ARGS__)

}  // namespace ofl::internal
