// What the public API's sources (oneflowlike/src) share: the framework's errors rethrown as
// ofl::Error, and the conversions between public and internal dtypes and devices. Not installed.
#pragma once
#include <exception>
#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "oneflowlike/tensor.h"

namespace ofl::api {

// Runs f, turning every exception but ofl::Error into one with the same message: the API
// throws one type.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

template <class... Args>
[[noreturn]] void fail(const char* what, const Args&... args) {
  throw Error(internal::str_cat("[", what, "] ", args...));
}

inline internal::DType to_internal(DType t) {
  return static_cast<internal::DType>(t);
}
inline DType from_internal(internal::DType t) {
  return static_cast<DType>(t);
}
inline internal::Device to_internal(const Device& d) {
  return internal::Device::parse(d.str());
}
inline Device from_internal(const internal::Device& d) {
  return Device(d.str());
}

}  // namespace ofl::api
