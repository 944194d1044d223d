// Execution streams. CPU work runs inline (the null stream); a CUDA backend sets the current
// stream per device so kernels launch onto it without widening every kernel signature.
#pragma once
#include "core/device.h"

namespace ofl::internal {

struct Stream {
  Device device;
  void* handle = nullptr;  // cudaStream_t for CUDA; null = the device's default stream
  bool operator==(const Stream&) const = default;
};

// The stream kernels on `device` launch onto, for this thread.
Stream current_stream(Device device);
void set_current_stream(const Stream& stream);

// Makes `stream` current for its device until the guard goes out of scope.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) : prev_(current_stream(stream.device)) {
    set_current_stream(stream);
  }
  ~StreamGuard() { set_current_stream(prev_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream prev_;
};

}  // namespace ofl::internal
