// The executor's hook for the conformance checker (global/simulate.h): while a ForcedCall is in
// scope on this thread, the first global op reports its signatures (probe) or runs on its
// inputs as they are laid out, records its local outputs, and ends the call.
#pragma once
#include <string>
#include <vector>

#include "core/dispatcher.h"
#include "core/tensor.h"
#include "sbp/signature.h"

namespace ofl::internal {

struct ForcedCall {
  bool probe = false;
  std::vector<Sbp> out_sbps;  // when running: the layout assumed for every output
  bool seen = false;
  std::string op;
  std::vector<SbpSignature> declared;
  std::vector<Tensor> outputs;
};

ForcedCall* forced_call();
// Puts f in scope on this thread, and the dispatcher's forcing global handler in place of the
// executor's own (global/dispatch_handler.cpp), so that run_global itself has no hook.
class ForcedScope {
 public:
  explicit ForcedScope(ForcedCall* f);
  ~ForcedScope();

 private:
  ForcedCall* prev_;
  KindHandler* prev_handler_;
};
KindHandler& forcing_global_handler();
[[noreturn]] void stop_forced_call();

}  // namespace ofl::internal
