// A refcounted block of device memory; views share it and its version counter.
#pragma once
#include <cstdint>
#include <functional>

#include "core/device.h"

namespace ofl::internal {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  // Wraps memory owned elsewhere (e.g. a numpy array); `release` runs when the storage dies.
  Storage(void* data, size_t nbytes, Device device, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  // Bumped by every in-place write; autograd compares it with the version it saved.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::function<void()> release_;
  uint64_t version_ = 0;
};

}  // namespace ofl::internal
