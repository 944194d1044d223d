#include "core/stream.h"

#include <array>
#include <unordered_map>

namespace ofl::internal {

namespace {
// Per thread, per (device type, index): the current stream handle.
thread_local std::array<std::unordered_map<int, void*>, kNumDeviceTypes> tls_streams;
}  // namespace

Stream current_stream(Device device) {
  auto& table = tls_streams[static_cast<int>(device.type)];
  auto it = table.find(device.index);
  return {device, it == table.end() ? nullptr : it->second};
}

void set_current_stream(const Stream& stream) {
  tls_streams[static_cast<int>(stream.device.type)][stream.device.index] = stream.handle;
}

}  // namespace ofl::internal
