// Helpers shared by the C++ tests.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "core/device.h"
#include "core/error.h"

namespace ofl::internal::testing {

// The device of shapes and dtypes without memory.
inline const Device kMeta{DeviceType::kMeta};

// The message of the E (by default any ofl::internal::Error) that f raises, or "" and a test
// failure when it returns: error_of([&] { ... }), error_of<TypeError>([&] { ... }).
template <class E = Error, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception of the awaited type";
  return "";
}

}  // namespace ofl::internal::testing
