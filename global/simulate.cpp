#include "global/simulate.h"

#include "boxing/reshard.h"
#include "global/forced.h"

namespace ofl {

namespace {

// Any collective is a bug in the checker: its inputs are already where the op needs them.
class SimulatedWorld : public comm::Communicator {
  using ReduceOp = comm::ReduceOp;

 public:
  SimulatedWorld(int rank, int n) : Communicator(rank, all(n), "simulated") {}
  void all_reduce(Tensor&, ReduceOp) override { no(); }
  void all_gather(const Tensor&, Tensor&) override { no(); }
  void all_gather_v(const Tensor&, Tensor&, const std::vector<int64_t>&) override { no(); }
  void reduce_scatter(const Tensor&, Tensor&, ReduceOp) override { no(); }
  void reduce_scatter_v(const Tensor&, Tensor&, const std::vector<int64_t>&, ReduceOp) override {
    no();
  }
  void all_to_all(const Tensor&, Tensor&) override { no(); }
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor&,
                    const std::vector<int64_t>&) override {
    no();
  }
  void broadcast(Tensor&, int) override { no(); }
  void reduce(Tensor&, int, ReduceOp) override { no(); }
  void gather(const Tensor&, Tensor&, int, const std::vector<int64_t>&) override { no(); }
  void scatter(const Tensor&, Tensor&, int, const std::vector<int64_t>&) override { no(); }
  void send(const Tensor&, int, int) override { no(); }
  void recv(Tensor&, int, int) override { no(); }
  void barrier() override { no(); }

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>&, int,
                                           const std::string&) override {
    no();
  }

 private:
  static std::vector<int> all(int n) {
    std::vector<int> r(n);
    for (int i = 0; i < n; ++i) r[i] = i;
    return r;
  }
  [[noreturn]] static void no() { fail("simulated world", "a simulated rank cannot communicate"); }
};

struct Stop {};  // ends `call` once its first global op has been seen

thread_local ForcedCall* current = nullptr;

}  // namespace

ForcedCall* forced_call() {
  return current;
}
ForcedScope::ForcedScope(ForcedCall* f) : prev_(current) {
  current = f;
}
ForcedScope::~ForcedScope() {
  current = prev_;
}

Tensor simulated_global(const Tensor& piece, const Shape& shape, const Sbp& sbp, int rank, int n) {
  auto ctx = std::make_shared<BoxingContext>();
  ctx->world = std::make_shared<SimulatedWorld>(rank, n);
  return as_tensor({piece, shape, Placement::all(DeviceType::kCPU, n), NdSbp({sbp})}, ctx);
}

namespace {
// Runs `call` with `forced` in scope, up to (and not past) its first global op.
void run_until_first_op(ForcedCall& forced, const std::function<void()>& call) {
  ForcedScope scope(&forced);
  try {
    call();
  } catch (...) {  // Stop, possibly translated by bindings on its way out
    if (!forced.seen) throw;
  }
  if (!forced.seen) fail("sbp conformance", "the call ran no global op");
}
}  // namespace

Declared declared_signatures(const std::function<void()>& call) {
  ForcedCall forced;
  forced.probe = true;
  run_until_first_op(forced, call);
  return {forced.op, forced.declared};
}

std::vector<Tensor> run_first_op_as_laid_out(const std::function<void()>& call, const Sbp& out) {
  ForcedCall forced;
  forced.out_sbps = {out};
  run_until_first_op(forced, call);
  return forced.outputs;
}

[[noreturn]] void stop_forced_call() {
  throw Stop{};
}

}  // namespace ofl
