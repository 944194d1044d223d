// The global executor's interface: the dispatcher's global kind (global/dispatch_handler.cpp)
// hands it a call as a GlobalOp: the op's definition (its SbpRule lists the signatures), the
// logical output shapes and a function that runs the op on local shards. The executor picks the
// cheapest signature, reshards the inputs, runs the local function and wraps the outputs; autograd
// is the dispatcher's.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/op_def.h"
#include "core/tensor.h"
#include "sbp/placement.h"

namespace ofl::internal {

struct ForcedCall;

struct GlobalOp {
  const OpDef* def;               // a registered op
  std::vector<Tensor> inputs;     // global tensors; wrapped numbers act as B; undefined = absent
  std::vector<Shape> out_shapes;  // logical
  // Runs the op on this rank's shards; `out_shapes` are the local output shapes expected.
  std::function<std::vector<Tensor>(const std::vector<Tensor>& locals,
                                    const std::vector<Shape>& out_shapes)>
      local;
  bool inplace = false;                // output 0 is input 0, modified in place in its own layout
  const Attrs* typed_attrs = nullptr;  // the attributes of a call from the dispatcher
  std::vector<DType> out_dtypes;       // from the dispatcher (for meta outputs off the placement)
};

std::vector<Tensor> run_global(const GlobalOp& op);
// The conformance checker's run of op (global/forced.h): only the dispatcher's forcing handler,
// installed while a ForcedCall is in scope, calls it.
std::vector<Tensor> run_global_forced(const GlobalOp& op, ForcedCall& forced);

bool any_global(std::initializer_list<Tensor> ts);
// Inside a local function the executor runs: where input `input`'s shard begins in its logical
// tensor, per axis (0 on axes it is not split on). For local functions that depend on the
// shard's position, such as a vocabulary-split embedding looking up only its own rows.
std::vector<int64_t> shard_offsets(size_t input);
// The same for output `output`'s shard (a class-split gradient written at its own classes).
std::vector<int64_t> shard_out_offsets(size_t output);
// The peers of the inputs that arrived as blocks for the compute to stream (global/streamed.h),
// one per input; null where none did.
const std::vector<StreamedBlocks>* shard_streamed();
// The logical shape: a global tensor's, else the tensor's own.
const Shape& logical_shape(const Tensor& t);
int64_t logical_dim(const Tensor& t);
// Every rank's shard shape of a global tensor, in the order of its placement's ranks (also for a
// meta tensor on a simulated placement, whose ranks this process does not have).
std::vector<Shape> local_shapes(const Tensor& t);
int64_t logical_numel(const Tensor& t);
// A local tensor that every rank holds identically (a constant the op built), as a B tensor
// on `like`'s placement, without communication.
Tensor broadcast_on(const Tensor& local, const Tensor& like);
// While tracing (graph mode), how a traced tensor is laid out anew: a boxing node in the graph
// (set by graph/, which sits above this layer).
using TracedBoxing = Tensor (*)(const char* op, const Tensor& x, const Placement& placement,
                                const NdSbp& nd_sbp);
void set_traced_boxing(TracedBoxing box);
// The whole logical value of a global tensor on every rank, as a local tensor (one collective).
Tensor full_value(const Tensor& t);

}  // namespace ofl::internal
