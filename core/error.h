// Errors: user errors throw ofl::internal::Error with the op's name; internal invariants use
// OFL_CHECK.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ofl::internal {

// Thrown for bad user input; the message starts with "[op]".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Thrown for an out-of-range axis or index (maps to Python IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};
// Thrown for a wrong dtype (maps to Python TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};
// Thrown for a file or folder that is not there (maps to Python FileNotFoundError).
class NotFoundError : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

template <class E = Error, class... Args>
[[noreturn]] void fail(const char* op, const Args&... args) {
  throw E(str_cat("[", op, "] ", args...));
}

}  // namespace ofl::internal

// Internal invariant: a failure is a bug in oneflowlike, never the user's input.
#define OFL_CHECK(cond, ...)                                                                  \
  do {                                                                                        \
    if (!(cond))                                                                              \
      throw std::logic_error(::ofl::internal::str_cat("internal check failed: " #cond " at ", \
                                                      __FILE__, ":", __LINE__,                \
                                                      " " __VA_OPT__(, ) __VA_ARGS__));       \
  } while (0)
