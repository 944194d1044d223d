// Tracing (DESIGN.md, "Graph mode"): while a Trace is open on a thread, every op call goes
// through the dispatcher's traced kind and appends a node to the trace's graph instead of
// running, creation ops included (a randn in build() draws anew at every run). Tensors from
// outside (a module's parameters and buffers, Python scalars) are captured as graph variables,
// by reference: the graph reads their values when it runs.
#pragma once
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/ir.h"

namespace ofl::internal {

struct BoxingContext;

// What a traced tensor stands for: value `id` of the graph of `trace`.
struct TraceValue {
  const void* trace;
  int id;
};

}  // namespace ofl::internal

namespace ofl::internal::graph {

class Trace {
 public:
  Trace();  // opens: ops on this trace's tensors on this thread record into it
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // A traced placeholder with example's shape, dtype and device (and placement and SBP).
  Tensor input(const Tensor& example);
  // x laid out as (placement, nd_sbp): a boxing node. param_grad marks a parameter's gradient
  // taking the parameter's layout, which bucketing fuses. A local x may only become B: a
  // constant every rank computes alike.
  Tensor box(const char* op, const Tensor& x, const Placement& placement, const NdSbp& nd_sbp,
             bool param_grad = false);
  // A parameter's gradient taking the parameter's layout, or `nd_sbp` on its placement when
  // given (ZeRO-2: S(0) where the parameter is B), as a param_grad boxing node naming it.
  Tensor box_grad(const Tensor& param, const Tensor& grad,
                  const std::optional<NdSbp>& nd_sbp = std::nullopt);
  // The graph, returning `outputs` (traced tensors of this trace, or captured ones). Closes.
  Graph finish(const std::vector<Tensor>& outputs);
  // Ends recording on this thread (finish does it; idempotent).
  void close();

  // The micro-batch the ops traced from now on belong to (nn.Graph's gradient accumulation), -1
  // for none.
  void set_micro_batch(int micro) { micro_batch_ = micro; }
  // While set, global leaves' gradients accumulate as they come (a partial sum stays partial)
  // and take their leaves' layouts only when box_grad is called on the sum: one reduction per
  // step, not one per micro-batch.
  void set_defer_grad_reductions(bool on) { defer_grad_reductions_ = on; }
  bool defers_grad_reductions() const { return defer_grad_reductions_; }

  // Where each input is read, when that is somewhere else: the one placement that everything
  // computed from input i alone where it is given moves to (through boxing nodes; none of it among
  // `outputs`, the traced step's results), or none. nn.Graph traces a pipeline's step once
  // without micro-batches to learn this, then moves each input to its stage once per step rather
  // than once per micro-batch.
  std::vector<std::optional<Placement>> input_moves(const std::vector<Tensor>& outputs) const;

  // The context of the global tensors the trace has seen (null for a local trace).
  const std::shared_ptr<BoxingContext>& context() const { return ctx_; }

  // The trace open on this thread, or null.
  static Trace* current();

  // For the dispatcher's traced kind: the call as a node; returns its outputs.
  std::vector<Tensor> record(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                             const std::vector<TensorMeta>& out);

 private:
  int value_of(const char* op, const Tensor& t);
  // Global inputs on nested placements meet on the narrowest: one on a placement covering it that
  // needs no gradient (a pipeline's targets, given on every rank, read by the last stage) moves
  // onto it, keeping its layout (a boxing node; `ids` then names the moved value).
  void meet(const char* op, const std::vector<Tensor>& in, std::vector<int>& ids);
  // The placement of a call's global inputs (one for all), or none for a local call.
  std::optional<Placement> placement_of(const char* op, const std::vector<int>& inputs) const;
  // A traced tensor for value `id`: contiguous, or with the strides (and view flag) of `like`,
  // a view op's output computed on meta stand-ins of its inputs.
  Tensor traced(int id, bool is_view, const Tensor* like = nullptr);
  // Tags a new node with where it is traced: phase, repeated layer, pipeline stage, micro-batch.
  void place(Node& node) const;

  Graph graph_;
  std::shared_ptr<BoxingContext> ctx_;  // of the global tensors seen: what the traced ones carry
  std::unordered_map<const TensorImpl*, int> captured_;
  std::unordered_set<uint64_t> drawn_;  // the generator offsets random nodes reserved
  Trace* prev_ = nullptr;
  bool open_ = false;
  uint64_t generator_offset_;  // given back on close: tracing draws nothing
  // The default generator's offset after the last traced op: a random op drew from the default
  // generator (not a generator of its own) when its reservation starts there.
  uint64_t last_offset_;
  int micro_batch_ = -1;
  bool defer_grad_reductions_ = false;
};

}  // namespace ofl::internal::graph
