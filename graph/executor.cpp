#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "boxing/fused_collectives.h"
#include "boxing/reshard.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "core/random.h"
#include "core/stream.h"
#include "global/shards.h"
#include "global/streamed.h"
#include "sbp/global_info.h"

namespace ofl::internal::graph {

std::string signature_str(const Graph& g) {
  std::string s;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    s += (i ? ", " : "") + value_str(g.values()[g.inputs()[i]]);
  return s;
}

namespace {

bool is_output(const Graph& g, int id) {
  return std::find(g.outputs().begin(), g.outputs().end(), id) != g.outputs().end();
}

}  // namespace

int64_t peak_bytes(const Graph& g) {
  const size_t n = g.nodes().size(), nv = g.values().size();
  const std::vector<int> owner = memory_owner(g);
  std::vector<bool> computed(nv, false);  // a node's output with memory of its own
  for (const Node& node : g.nodes())
    for (int id : node.outputs) computed[size_t(id)] = owner[size_t(id)] == id;
  // An owner's memory is freed after the last reader of any value over it.
  std::vector<size_t> end(nv, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int id : g.nodes()[i].inputs)
      if (id >= 0) end[owner[id]] = std::max(end[owner[id]], i);
    for (int id : g.nodes()[i].outputs) end[owner[id]] = std::max(end[owner[id]], i);
  }
  for (int id : g.outputs()) end[owner[id]] = n;
  int64_t live = 0, peak = 0;
  std::vector<std::vector<int>> dies(n + 1);
  for (size_t v = 0; v < nv; ++v)
    if (computed[v]) dies[end[v]].push_back(static_cast<int>(v));
  for (size_t i = 0; i < n; ++i) {
    for (int id : g.nodes()[i].outputs)
      if (computed[id]) live += bytes_per_rank(g.values()[id]);
    peak = std::max(peak, live);
    for (int v : dies[i]) live -= bytes_per_rank(g.values()[v]);
  }
  return peak;
}

namespace {

// `task` on its device's communication stream, so collectives overlap the kernels on the compute
// stream. When it starts, the communication stream waits for the work queued on the compute
// stream so far (the values it reads are written); when it ends, the compute stream waits for
// the work it queued (the kernels that unpack its results), ahead of the kernels that read them.
// Blocks the compute thread frees wait for its stream before the allocator reuses them.
std::function<std::vector<Tensor>()> on_comm_stream(DeviceRuntime& runtime, Stream compute,
                                                    std::function<std::vector<Tensor>()> task) {
  return [&runtime, compute, task = std::move(task)] {
    const int index = compute.device.index;
    const Stream comm{compute.device, runtime.comm_stream(index)};
    runtime.stream_wait(index, comm.handle, compute.handle);
    std::vector<Tensor> out;
    {
      StreamGuard guard(comm);
      out = task();
    }
    runtime.stream_wait(index, compute.handle, comm.handle);
    return out;
  };
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The collectives of one run, on their own thread in graph order (the same order on every
// rank, as a communicator requires), so that they overlap the compute between them. The compute
// thread waits only for the results it reads.
class CommThread {
 public:
  using Task = std::function<std::vector<Tensor>()>;
  ~CommThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Queues a task; returns its number. Its inputs are captured by the task.
  size_t post(Task task) {
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
    results_.emplace_back();
    cv_.notify_all();
    return posted_++;
  }
  // Task k's outputs, once it has run; rethrows the first error of any task.
  std::vector<Tensor>& wait(size_t k) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ > k || error_; });
    if (error_) std::rethrow_exception(error_);
    return results_[k];
  }
  void wait_all() {
    if (posted_) wait(posted_ - 1);
  }

 private:
  void loop() {
    for (;;) {
      Task task;
      size_t k;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        k = done_;
      }
      std::vector<Tensor> out;
      std::exception_ptr error;
      if (!error_) try {
          autograd::NoGradGuard no_grad;
          out = task();
        } catch (...) {
          error = std::current_exception();
        }
      {
        std::lock_guard lock(mu_);
        results_[k] = std::move(out);
        if (error && !error_) error_ = error;
        ++done_;
      }
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::deque<std::vector<Tensor>> results_;  // deque: references stay valid as it grows
  size_t posted_ = 0, done_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

// One run of a graph on this rank.
class Run {
 public:
  Run(const Graph& g, std::vector<NodeSpan>* spans)
      : g_(g), values_(g.values().size()), pending_(values_.size()), spans_(spans) {}

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) {
    bind(inputs);
    // Each value is dropped after its last reader, so that memory is freed as in eager mode.
    const size_t n = g_.nodes().size();
    std::vector<size_t> last_read(values_.size(), n);
    for (size_t i = 0; i < n; ++i)
      for (int id : g_.nodes()[i].inputs)
        if (id >= 0) last_read[id] = i;
    for (int id : g_.outputs()) last_read[id] = n;
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = g_.nodes()[i];
      ran_here_ = true;
      if (node.kind == NodeKind::kOp)
        compute(node);
      else
        communicate(node, i);
      if (spans_ && ran_here_ && node.kind == NodeKind::kOp) {
        std::lock_guard lock(spans_mu_);
        spans_->push_back({i, false, inputs_ready_, now()});
      }
      for (int id : node.inputs)
        if (id >= 0 && last_read[id] == i) values_[id] = Tensor();
      for (int id : node.outputs)
        if (last_read[id] == n && !is_output(g_, id)) values_[id] = Tensor();
    }
    std::vector<Tensor> result;
    for (int id : g_.outputs()) result.push_back(value(id));
    comm_.wait_all();
    return result;
  }

 private:
  void bind(const std::vector<Tensor>& inputs) {
    if (inputs.size() != g_.inputs().size())
      fail("graph", "expects ", g_.inputs().size(), " inputs (", signature_str(g_), "), got ",
           inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value& want = g_.values()[g_.inputs()[i]];
      const Tensor& t = inputs[i];
      bool ok = t.defined() && t.dtype() == want.dtype && t.device() == want.device &&
                t.is_global() == want.is_global();
      if (ok && t.is_global()) {
        const GlobalInfo& info = *t.impl()->global;
        ok = info.shape == want.shape && info.placement == *want.placement &&
             info.nd_sbp == want.nd_sbp;
        if (!ctx_) ctx_ = info.ctx;
      } else if (ok) {
        ok = t.shape() == want.shape;
      }
      if (!ok)
        fail("graph", "input ", i, " is ", t.defined() ? describe(t) : "None", ", expected ",
             value_str(want), " (the graph's inputs: ", signature_str(g_), ")");
      values_[g_.inputs()[i]] = t;
    }
    for (const Variable& v : g_.variables()) {
      values_[v.value] = v.tensor;
      if (!ctx_ && v.tensor.is_global()) ctx_ = v.tensor.impl()->global->ctx;
    }
  }

  static std::string describe(const Tensor& t) {
    if (!t.is_global()) return t.str();
    const GlobalInfo& g = *t.impl()->global;
    return shape_str(g.shape) + " " + dtype_name(t.dtype()) + " " + t.device().str() + " " +
           g.nd_sbp.str() + " on " + g.placement.str();
  }

  int rank() const { return ctx_->world->ranks()[size_t(ctx_->world->rank())]; }

  // The value, waiting for the collective computing it if need be.
  const Tensor& value(int id) {
    if (pending_[id].task >= 0) {
      values_[id] = std::move(comm_.wait(size_t(pending_[id].task))[pending_[id].slot]);
      pending_[id].task = -1;
    }
    return values_[id];
  }

  void compute(const Node& n) {
    Attrs seeded;
    const Attrs* attrs = &n.attrs;
    if (n.random_counters) {
      // Fresh counters for each run, as the eager calls would draw (on every rank alike, those
      // outside the op's placement too); a replay takes its first's.
      Generator& gen = default_generator();
      const int64_t traced = n.attrs.get<int64_t>("offset");
      auto [it, fresh] = draws_.try_emplace(traced, 0);
      if (!n.replays_draws || fresh) it->second = int64_t(gen.advance(n.random_counters));
      seeded = n.attrs;
      seeded.set("seed", static_cast<int64_t>(gen.seed()));
      seeded.set("offset", it->second);
      attrs = &seeded;
    }
    if (const Placement* p = elsewhere(n)) {  // without waiting for its inputs
      std::vector<Tensor> out = outside(n, *p);
      for (size_t j = 0; j < n.outputs.size(); ++j) values_[n.outputs[j]] = std::move(out[j]);
      return;
    }
    in_.clear();
    for (int id : n.inputs) in_.push_back(id < 0 ? Tensor() : value(id));
    // A write in place waits for the collectives still reading that memory.
    if (writes_in_place(n)) {
      const void* written = in_[0].storage().get();
      for (const auto& [task, storage] : comm_reads_)
        if (storage == written) comm_.wait(task);
    }
    if (spans_) inputs_ready_ = now();  // a span is work, not the wait for a collective
    std::vector<Tensor> out =
        n.sig.in.empty() ? dispatch(*n.op, in_, *attrs) : on_shards(n, *attrs);
    for (size_t j = 0; j < n.outputs.size(); ++j) values_[n.outputs[j]] = std::move(out[j]);
    in_.clear();
  }

  // An op on global values: its inputs are in its signature's layouts (insert_boxing); its
  // compute runs on this rank's shards.
  std::vector<Tensor> on_shards(const Node& n, const Attrs& attrs) {
    const Placement* p = placement_of(n);
    const auto coords = p->coords_of(rank());
    OFL_CHECK(coords, "on_shards: rank ", rank(), " is outside ", p->str());
    std::vector<Tensor> locals;
    std::vector<Shape> in_shapes;
    std::vector<StreamedBlocks> streamed;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Tensor& t = in_[i];
      const bool global = t.defined() && t.is_global();
      locals.push_back(global ? as_global(t, "graph").local : t);
      in_shapes.push_back(n.inputs[i] >= 0 ? g_.values()[n.inputs[i]].shape : Shape());
      if (!global || t.impl()->global->nd_sbp == n.sig.in[i]) continue;
      const GlobalInfo& gi = *t.impl()->global;
      const auto axes = streamed_axes(*n.op, i, gi.nd_sbp, n.sig.in[i]);
      OFL_CHECK(!axes.empty(), n.op->name, ": input ", i, " is ", gi.nd_sbp.str(), ", not ",
                n.sig.in[i].str(), " as its signature wants");
      streamed.resize(n.inputs.size());
      streamed[i] =
          streamed_blocks(gi.shape, gi.nd_sbp, axes, n.op->streamed_dim, *p, *coords, *ctx_);
    }
    std::vector<TensorMeta> metas;
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const Value& v = g_.values()[n.outputs[j]];
      metas.push_back({local_shape(v.shape, n.sig.out[j], *p, *coords), v.dtype, v.device});
    }
    auto offset_of = [&](size_t i) -> std::vector<int64_t> {
      const int id = n.inputs[i];
      if (id < 0) return {};
      const Value& v = g_.values()[id];
      if (!v.is_global()) return std::vector<int64_t>(v.shape.size(), 0);
      return local_starts(v.shape, n.sig.in[i], *p, *coords);
    };
    auto out_offset_of = [&](size_t j) {
      return local_starts(g_.values()[n.outputs[j]].shape, n.sig.out[j], *p, *coords);
    };
    // A streaming compute talks to its peers itself: the collectives before it finish first.
    if (!streamed.empty()) comm_.wait_all();
    std::vector<Tensor> outs = run_shards(*n.op, locals, attrs, metas, in_shapes, offset_of,
                                          out_offset_of, streamed.empty() ? nullptr : &streamed);
    for (size_t j = 0; j < outs.size(); ++j) {
      const Value& v = g_.values()[n.outputs[j]];
      outs[j] = n.op->inplace && j == 0
                    ? in_[0]
                    : as_tensor({std::move(outs[j]), v.shape, *p, n.sig.out[j]}, ctx_);
    }
    return outs;
  }

  // A global op's placement: its global inputs'.
  const Placement* placement_of(const Node& n) const {
    const Placement* p = nullptr;
    for (int id : n.inputs)
      if (id >= 0 && g_.values()[id].is_global()) p = &*g_.values()[id].placement;
    return p;
  }

  // The placement of a global op this rank is outside of (another pipeline stage's), or null.
  const Placement* elsewhere(const Node& n) const {
    if (n.sig.in.empty()) return nullptr;
    const Placement* p = placement_of(n);
    return p && !p->contains(rank()) ? p : nullptr;
  }

  // An op on another pipeline stage's placement: empty shards here, as in eager mode.
  std::vector<Tensor> outside(const Node& n, const Placement& p) {
    ran_here_ = false;
    std::vector<Tensor> outs;
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const Value& v = g_.values()[n.outputs[j]];
      outs.push_back(n.op->inplace && j == 0 ? value(n.inputs[0])
                                             : as_tensor({outside_shard(v.shape, v.dtype, v.device),
                                                          v.shape, p, n.sig.out[j]},
                                                         ctx_));
    }
    return outs;
  }

  // A boxing node, or a fused reduction or gather: queued on the communication thread.
  void communicate(const Node& n, size_t index) {
    const Value& to = g_.values()[n.outputs[0]];
    if (!g_.values()[n.inputs[0]].is_global()) {  // a constant every rank holds: no collective
      values_[n.outputs[0]] =
          as_tensor({value(n.inputs[0]), to.shape, *to.placement, to.nd_sbp}, ctx_);
      return;
    }
    std::vector<GlobalTensor> xs;
    std::vector<NdSbp> targets;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      xs.push_back(as_global(value(n.inputs[i]), "graph"));
      targets.push_back(g_.values()[n.outputs[i]].nd_sbp);
    }
    std::shared_ptr<BoxingContext> ctx = ctx_;
    CommThread::Task task;
    if (n.kind == NodeKind::kBoxing)
      task = [xs, p = *to.placement, sbp = to.nd_sbp, ctx] {
        return std::vector<Tensor>{as_tensor(reshard(xs[0], p, sbp, *ctx), ctx)};
      };
    else
      task = [xs, targets, axes = n.axes, ctx, gather = n.kind == NodeKind::kGather] {
        std::vector<Tensor> outs = gather ? gather_fused(xs, targets, axes, *ctx)
                                          : reduce_fused(xs, targets, axes, *ctx, kGradBucketBytes);
        for (size_t j = 0; j < outs.size(); ++j)
          outs[j] = as_tensor({outs[j], xs[j].shape, xs[j].placement, targets[j]}, ctx);
        return outs;
      };
    if (spans_) {
      bool here = false;  // this rank sends or receives
      for (int id : n.inputs) here |= g_.values()[id].placement->contains(rank());
      for (int id : n.outputs) here |= g_.values()[id].placement->contains(rank());
      if (here)
        task = [task = std::move(task), index, this] {
          const double start = now();
          std::vector<Tensor> out = task();
          std::lock_guard lock(spans_mu_);
          spans_->push_back({index, true, start, now()});
          return out;
        };
    }
    const Device device = xs[0].local.device();
    if (DeviceRuntime* runtime = runtime_for(device.type))
      task = on_comm_stream(*runtime, current_stream(device), std::move(task));
    const size_t k = comm_.post(std::move(task));
    for (const GlobalTensor& x : xs) comm_reads_.emplace_back(k, x.local.storage().get());
    for (size_t j = 0; j < n.outputs.size(); ++j) pending_[n.outputs[j]] = {int(k), j};
  }

  struct Pending {
    int task = -1;
    size_t slot = 0;
  };
  const Graph& g_;
  std::vector<Tensor> values_;
  std::vector<Pending> pending_;
  std::vector<Tensor> in_;
  std::shared_ptr<BoxingContext> ctx_;
  std::vector<std::pair<size_t, const void*>> comm_reads_;  // (task, storage it reads)
  std::unordered_map<int64_t, int64_t> draws_;  // a random node's traced offset -> this run's
  std::vector<NodeSpan>* spans_;
  std::mutex spans_mu_;
  bool ran_here_ = true;  // the node being run had work on this rank
  double inputs_ready_ = 0;
  // Last: destroyed first, joining its thread (whose tasks record spans under spans_mu_) before
  // the members it uses go.
  CommThread comm_;
};

}  // namespace

std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs,
                        std::vector<NodeSpan>* spans) {
  return Run(g, spans)(inputs);
}

}  // namespace ofl::internal::graph
