// Whether ops record autograd history on this thread (no_grad turns it off).
#pragma once

namespace ofl::internal::autograd {

bool grad_enabled();
void set_grad_enabled(bool enabled);

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};

// Whether the kind handler running now computes a call whose outputs record history: grad mode
// is off inside it (the ops it runs do not record again), this says the call itself does.
bool recording_call();
// Grad mode off for a recorded call's compute, recording_call() true (the dispatcher's).
class RecordedCallGuard : NoGradGuard {
 public:
  RecordedCallGuard();
  ~RecordedCallGuard();

 private:
  bool prev_;
};

}  // namespace ofl::internal::autograd
