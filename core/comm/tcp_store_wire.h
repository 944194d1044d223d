// Internal to the TCP store: the wire format shared by TcpStore (client) and TcpStoreServer.
//
// Every message, either way, is one frame:  u8 code | u32 nargs | nargs x (u32 len | len bytes),
// integers little-endian. Integer arguments are 8-byte two's-complement little-endian values.
// Requests (code = Op):
//   kHello       version, token                  -> kOk(max_key, max_value, max_request)
//                                                   | kRejected(reason) | kError(reason)
//                                                   | kBusy(reason): connect again later
//   kSet         key, value                      -> kOk()
//   kGet         key, timeout_ms                 -> kOk(value) | kTimeout(missing key)
//   kAdd         key, delta                      -> kOk(new value) | kError(reason)
//   kCompareSet  key, expected, desired          -> kOk(value afterwards)
//   kWait        timeout_ms, key...              -> kOk() | kTimeout(missing keys...)
//   kRemove      key                             -> kOk(existed: 0/1)
//   kCheck       key...                          -> kOk(all exist: 0/1)
// The first request on a connection must be kHello; a malformed frame closes the connection.
#pragma once
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/comm/store.h"
#include "core/error.h"

namespace ofl::internal::comm::wire {

constexpr int64_t kProtocolVersion = 1;
constexpr size_t kHeaderBytes = 5;
constexpr size_t kArgHeaderBytes = 4;
constexpr size_t kIntBytes = 8;
// Most keys one wait/check may name.
constexpr uint32_t kMaxKeys = uint32_t{1} << 20;

enum Op : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  kCompareSet = 5,
  kWait = 6,
  kRemove = 7,
  kCheck = 8,
};

enum Status : uint8_t {
  kOk = 0,
  kError = 1,
  kTimeout = 2,
  kRejected = 3,
  // Sent to a connection closed before its hello because newer ones needed its place: the
  // client connects again.
  kBusy = 4,
};

inline const char* op_name(uint8_t op) {
  switch (op) {
    case kHello:
      return "hello";
    case kSet:
      return "set";
    case kGet:
      return "get";
    case kAdd:
      return "add";
    case kCompareSet:
      return "compare_set";
    case kWait:
      return "wait";
    case kRemove:
      return "remove";
    case kCheck:
      return "check";
    default:
      return "unknown";
  }
}

inline void put_u32(Bytes& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline int64_t get_i64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return static_cast<int64_t>(v);
}

// Builds one frame; arguments are appended in order.
class FrameWriter {
 public:
  explicit FrameWriter(uint8_t code) {
    buf_.push_back(code);
    put_u32(buf_, 0);
  }
  FrameWriter& arg(const uint8_t* p, size_t n) {
    OFL_CHECK(n <= UINT32_MAX, "argument of ", n, " bytes");
    put_u32(buf_, static_cast<uint32_t>(n));
    buf_.insert(buf_.end(), p, p + n);
    ++nargs_;
    for (int i = 0; i < 4; ++i) buf_[1 + i] = static_cast<uint8_t>(nargs_ >> (8 * i));
    return *this;
  }
  FrameWriter& arg(std::string_view s) {
    return arg(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  FrameWriter& arg(const Bytes& b) { return arg(b.data(), b.size()); }
  FrameWriter& arg_int(int64_t v) {
    uint8_t le[kIntBytes];
    for (size_t i = 0; i < kIntBytes; ++i) le[i] = static_cast<uint8_t>(uint64_t(v) >> (8 * i));
    return arg(le, kIntBytes);
  }
  Bytes take() { return std::move(buf_); }

 private:
  Bytes buf_;
  uint32_t nargs_ = 0;
};

// A file descriptor closed on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// "host:port", with IPv6 literals bracketed.
inline std::string join_host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

inline std::string sockaddr_to_string(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return join_host_port(host, std::atoi(serv));
}

}  // namespace ofl::internal::comm::wire
