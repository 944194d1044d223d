// TcpStore: the client side. One connection, one request in flight (a mutex serialises
// threads); every socket wait is a poll() with a deadline, so a lost server raises, never hangs.
#include "core/comm/tcp_store.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "core/comm/tcp_store_wire.h"
#include "core/error.h"

namespace ofl::internal::comm {
namespace {

using Clock = std::chrono::steady_clock;
using namespace wire;

constexpr Millis kMaxWait{int64_t{10} * 365 * 24 * 3600 * 1000};
constexpr uint32_t kMaxReplyArgs = kMaxKeys + 8;
constexpr size_t kMinReplyArgBytes = size_t{1} << 20;

Millis clamp_wait(Millis t) {
  return std::clamp(t, Millis(0), kMaxWait);
}

std::string seconds(Millis t) {
  char buf[32];
  double s = t.count() / 1000.0;
  std::snprintf(buf, sizeof buf, s >= 0.1 || s == 0 ? "%.1f" : "%.3f", s);
  return buf;
}

std::string quoted(const std::string& key) {
  return key.size() <= 200 ? key : key.substr(0, 200) + "...";
}

std::string describe_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < 10; ++i) out += (i ? ", " : "") + quoted(keys[i]);
  if (keys.size() > 10) out += str_cat(" and ", keys.size() - 10, " more");
  return out;
}

enum class Io { kOk, kClosed, kTimeout, kError };

// Waits until fd is ready for `events` or the deadline passes; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the following send/recv report it
  }
}

// Every byte that moves pushes the deadline out to at least now + grace, so a slow but live
// transfer of a large value is not cut off.
Io send_all(int fd, const uint8_t* p, size_t n, Clock::time_point deadline, Millis grace,
            std::string& why) {
  while (n) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      deadline = std::max(deadline, Clock::now() + grace);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, deadline)) return Io::kTimeout;
    } else {
      why = std::strerror(errno);
      return errno == EPIPE || errno == ECONNRESET ? Io::kClosed : Io::kError;
    }
  }
  return Io::kOk;
}

Io recv_exact(int fd, uint8_t* p, size_t n, Clock::time_point& deadline, Millis grace,
              std::string& why) {
  while (n) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      deadline = std::max(deadline, Clock::now() + grace);
    } else if (r == 0) {
      why = "the store closed the connection";
      return Io::kClosed;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_fd(fd, POLLIN, deadline)) return Io::kTimeout;
    } else {
      why = std::strerror(errno);
      return errno == ECONNRESET ? Io::kClosed : Io::kError;
    }
  }
  return Io::kOk;
}

// One connection attempt over every address the host resolves to; -1 with `why` on failure.
int connect_once(const std::string& host, int port, Clock::time_point deadline, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    why = str_cat("cannot resolve '", host, "': ", ::gai_strerror(rc));
    return -1;
  }
  int out = -1;
  for (addrinfo* ai = res; ai && out < 0; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      if (!wait_fd(fd.get(), POLLOUT, deadline)) {
        why = "connect timed out";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err) {
        why = std::strerror(err);
        continue;
      }
    }
    // With no listener, a loopback connect can land on its own ephemeral port (TCP
    // simultaneous open) and "succeed"; treat that as refused.
    sockaddr_storage self{}, peer{};
    socklen_t self_len = sizeof self, peer_len = sizeof peer;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&self), &self_len);
    ::getpeername(fd.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (self_len == peer_len && std::memcmp(&self, &peer, self_len) == 0) {
      why = std::strerror(ECONNREFUSED);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    out = fd.release();
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

TcpStore::TcpStore(std::string host, int port, TcpStoreOptions options,
                   std::shared_ptr<TcpStoreServer> server)
    : server_(std::move(server)),
      host_(std::move(host)),
      port_(port),
      where_(join_host_port(host_, port_)) {
  if (port_ <= 0 || port_ > 65535) fail("store", "port ", port_, " of the store is out of range");
  set_timeout(options.timeout);
  connect_and_hello(options.token, options.timeout);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpStore::connect_and_hello(const std::string& token, Millis timeout) {
  if (token.size() > (size_t{64} << 10)) fail("store", "the store token is over 64 KiB");
  std::lock_guard lock(mu_);
  auto deadline = Clock::now() + clamp_wait(timeout);
  std::string why;
  Millis backoff(10);
  // Until the deadline, a store that is not up yet, or that closes the connection before the
  // hello's answer (busy with a flood of connections), is tried again.
  for (;;) {
    fd_ = connect_once(host_, port_, deadline, why);
    if (fd_ >= 0) {
      std::optional<Reply> r;
      try {
        r = call_locked("hello", FrameWriter(kHello).arg_int(kProtocolVersion).arg(token).take(),
                        Millis(0));
      } catch (const std::exception& e) {
        if (fd_ >= 0) throw;  // not a lost connection
        why = e.what();
      }
      if (r && r->status != kBusy) return accept_hello(*r, token);
      if (r)
        why = str_cat("the store was busy: ",
                      r->args.size() == 1 ? to_string(r->args[0]) : std::string("no reason"));
      if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    }
    auto now = Clock::now();
    if (now >= deadline)
      fail("store", "could not reach the store at ", where_, " within ", seconds(timeout),
           " s: ", why);
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, Millis(250));
  }
}

void TcpStore::accept_hello(const Reply& r, const std::string& token) {
  if (r.status == kRejected) {
    ::close(std::exchange(fd_, -1));
    fail("store", "the store at ", where_, " rejected this client's token",
         token.empty() ? " (none was given; the launcher sets OFL_STORE_TOKEN)" : "");
  }
  if (r.status != kOk || r.args.size() != 3 || r.args[0].size() != kIntBytes ||
      r.args[1].size() != kIntBytes || r.args[2].size() != kIntBytes) {
    ::close(std::exchange(fd_, -1));
    raise_reply("hello", r, Millis(0));
  }
  max_key_ = static_cast<size_t>(get_i64(r.args[0].data()));
  max_value_ = static_cast<size_t>(get_i64(r.args[1].data()));
  max_request_ = static_cast<size_t>(get_i64(r.args[2].data()));
}

Millis TcpStore::io_grace() const {
  return std::clamp(timeout(), Millis(1000), kMaxWait);
}

TcpStore::Reply TcpStore::call(const std::string& what, Bytes request, Millis wait_ms) {
  std::lock_guard lock(mu_);
  return call_locked(what, request, wait_ms);
}

TcpStore::Reply TcpStore::call_locked(const std::string& what, const Bytes& request,
                                      Millis wait_ms) {
  if (fd_ < 0)
    fail("store", "cannot send ", what, ": the connection to the store at ", where_,
         " was closed after an earlier error");
  std::string why;
  Millis grace = io_grace();
  Io io = send_all(fd_, request.data(), request.size(), Clock::now() + grace, grace, why);
  if (io == Io::kTimeout) lost(what, str_cat("sending stalled for ", seconds(grace), " s"));
  if (io != Io::kOk) lost(what, why);

  // The server may hold a get/wait for wait_ms before it answers.
  Clock::time_point deadline = Clock::now() + clamp_wait(wait_ms) + grace;
  size_t arg_limit = std::max({max_key_, max_value_, kMinReplyArgBytes});
  auto read = [&](uint8_t* p, size_t n) {
    Io io = recv_exact(fd_, p, n, deadline, grace, why);
    if (io == Io::kTimeout)
      lost(what, str_cat("no reply within ", seconds(clamp_wait(wait_ms) + grace), " s"));
    if (io != Io::kOk) lost(what, why);
  };
  uint8_t header[kHeaderBytes];
  read(header, kHeaderBytes);
  Reply r;
  r.status = header[0];
  uint32_t nargs = get_u32(header + 1);
  if (nargs > kMaxReplyArgs) lost(what, str_cat("malformed reply with ", nargs, " arguments"));
  r.args.resize(nargs);
  for (auto& arg : r.args) {
    uint8_t len_bytes[kArgHeaderBytes];
    read(len_bytes, kArgHeaderBytes);
    uint32_t len = get_u32(len_bytes);
    if (len > arg_limit) lost(what, str_cat("malformed reply with a ", len, "-byte argument"));
    arg.resize(len);
    read(arg.data(), len);
  }
  return r;
}

void TcpStore::lost(const std::string& what, const std::string& why) {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));  // the stream is out of step now
  fail("store", "lost the connection to the store at ", where_, " during ", what, ": ", why);
}

void TcpStore::raise_reply(const std::string& what, const Reply& r, Millis wait_ms) const {
  auto text = [](const Bytes& b) { return to_string(b); };
  if (r.status == kTimeout) {
    std::vector<std::string> keys;
    for (const auto& a : r.args) keys.push_back(text(a));
    fail("store", "timed out after ", seconds(wait_ms),
         " s waiting for keys: ", describe_keys(keys), " (store ", where_, ")");
  }
  if (r.status == kError && r.args.size() == 1)
    fail("store", text(r.args[0]), " (store ", where_, ")");
  fail("store", "unexpected reply (status ", int(r.status), ", ", r.args.size(),
       " arguments) from the store at ", where_, " to ", what);
}

void TcpStore::check_key(const std::string& key) const {
  if (key.size() > max_key_)
    fail("store", "key '", quoted(key), "' is ", key.size(), " bytes, above the limit of ",
         max_key_, " bytes of the store at ", where_);
}

void TcpStore::check_value(const std::string& key, const Bytes& value) const {
  check_key(key);
  if (value.size() > max_value_)
    fail("store", "the value for key '", quoted(key), "' is ", value.size(),
         " bytes, above the limit of ", max_value_, " bytes of the store at ", where_);
}

void TcpStore::check_request_size(const std::string& what, size_t keys, size_t bytes) const {
  if (keys > kMaxKeys)
    fail("store", what, " names ", keys, " keys, above the limit of ", kMaxKeys, " per request");
  if (bytes > max_request_)
    fail("store", what, " is a ", bytes, "-byte request, above the limit of ", max_request_,
         " bytes of the store at ", where_);
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  check_value(key, value);
  std::string what = str_cat("set('", quoted(key), "')");
  Reply r = call(what, FrameWriter(kSet).arg(key).arg(value).take(), Millis(0));
  if (r.status != kOk || !r.args.empty()) raise_reply(what, r, Millis(0));
}

Bytes TcpStore::get(const std::string& key) {
  check_key(key);
  Millis t = clamp_wait(timeout());
  std::string what = str_cat("get('", quoted(key), "')");
  Reply r = call(what, FrameWriter(kGet).arg(key).arg_int(t.count()).take(), t);
  if (r.status != kOk || r.args.size() != 1) raise_reply(what, r, t);
  return std::move(r.args[0]);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  check_key(key);
  std::string what = str_cat("add('", quoted(key), "')");
  Reply r = call(what, FrameWriter(kAdd).arg(key).arg_int(delta).take(), Millis(0));
  if (r.status != kOk || r.args.size() != 1 || r.args[0].size() != kIntBytes)
    raise_reply(what, r, Millis(0));
  return get_i64(r.args[0].data());
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  check_value(key, expected);
  check_value(key, desired);
  std::string what = str_cat("compare_set('", quoted(key), "')");
  Reply r =
      call(what, FrameWriter(kCompareSet).arg(key).arg(expected).arg(desired).take(), Millis(0));
  if (r.status != kOk || r.args.size() != 1) raise_reply(what, r, Millis(0));
  return std::move(r.args[0]);
}

void TcpStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  Millis t = clamp_wait(timeout);
  std::string what = str_cat("wait(", describe_keys(keys), ")");
  FrameWriter frame(kWait);
  frame.arg_int(t.count());
  for (const auto& key : keys) {
    check_key(key);
    frame.arg(key);
  }
  Bytes request = frame.take();
  check_request_size(what, keys.size(), request.size());
  Reply r = call(what, std::move(request), t);
  if (r.status != kOk || !r.args.empty()) raise_reply(what, r, t);
}

bool TcpStore::remove(const std::string& key) {
  check_key(key);
  std::string what = str_cat("remove('", quoted(key), "')");
  Reply r = call(what, FrameWriter(kRemove).arg(key).take(), Millis(0));
  if (r.status != kOk || r.args.size() != 1 || r.args[0].size() != kIntBytes)
    raise_reply(what, r, Millis(0));
  return get_i64(r.args[0].data()) != 0;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  std::string what = str_cat("check(", describe_keys(keys), ")");
  FrameWriter frame(kCheck);
  for (const auto& key : keys) {
    check_key(key);
    frame.arg(key);
  }
  Bytes request = frame.take();
  check_request_size(what, keys.size(), request.size());
  Reply r = call(what, std::move(request), Millis(0));
  if (r.status != kOk || r.args.size() != 1 || r.args[0].size() != kIntBytes)
    raise_reply(what, r, Millis(0));
  return get_i64(r.args[0].data()) != 0;
}

std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_server,
                                      const std::string& token, Millis timeout) {
  std::shared_ptr<TcpStoreServer> server;
  std::string connect_to = host;
  if (is_server) {
    TcpStoreServerOptions options;
    options.token = token;
    server = std::make_shared<TcpStoreServer>(host, port, std::move(options));
    port = server->port();
    // A server on every interface is reached locally through loopback.
    if (host == "0.0.0.0") connect_to = "127.0.0.1";
    if (host == "::") connect_to = "::1";
  }
  TcpStoreOptions options;
  options.token = token;
  options.timeout = timeout;
  return std::make_shared<TcpStore>(connect_to, port, std::move(options), std::move(server));
}

}  // namespace ofl::internal::comm
