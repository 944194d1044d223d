#include "global/simulate.h"

#include "boxing/reshard.h"
#include "core/comm/refusing.h"
#include "global/forced.h"

namespace ofl::internal {

namespace {

std::vector<int> all_ranks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

// Any collective is a bug in the checker: its inputs are already where the op needs them.
std::shared_ptr<comm::Communicator> simulated_world(int rank, int n) {
  return std::make_shared<comm::RefusingCommunicator>(
      rank, all_ranks(n), "simulated", "simulated world", "a simulated rank cannot communicate");
}

struct Stop {};  // ends `call` once its first global op has been seen

thread_local ForcedCall* current = nullptr;

}  // namespace

ForcedCall* forced_call() {
  return current;
}
ForcedScope::ForcedScope(ForcedCall* f)
    : prev_(current), prev_handler_(kind_handler(TensorKind::kGlobal)) {
  current = f;
  set_kind_handler(TensorKind::kGlobal, &forcing_global_handler());
}
ForcedScope::~ForcedScope() {
  current = prev_;
  set_kind_handler(TensorKind::kGlobal, prev_handler_);
}

Tensor simulated_global(const Tensor& piece, const Shape& shape, const Sbp& sbp, int rank, int n) {
  auto ctx = std::make_shared<BoxingContext>();
  ctx->world = simulated_world(rank, n);
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

}  // namespace ofl::internal
