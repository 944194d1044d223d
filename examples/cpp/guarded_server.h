// The inference server's HTTP connections, hardened (examples/cpp/inference_server.cpp): each
// request and each answer against a deadline of its own, bodies read only with a stated length
// and no coding, and every error answered as JSON. httplib 0.11's own server times out each
// recv() alone and reads chunked or compressed bodies without a limit.
#pragma once

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace ofl_examples {

using Json = nlohmann::json;

// A reply as text. Messages may quote what a client sent (a path of invalid UTF-8, say): such
// bytes are replaced, where a plain dump() throws and the exception ended the server (found by
// tests/fuzz/fuzz_server_request).
inline std::string text_of(const Json& reply) {
  return reply.dump(-1, ' ', false, Json::error_handler_t::replace);
}

inline std::string error_body(const std::string& reason) {
  return text_of(Json{{"error", reason}});
}

// What one connection may take from the server (see the top of inference_server.cpp).
struct ConnectionLimits {
  std::chrono::milliseconds read_timeout;   // a whole request, from its first byte
  std::chrono::milliseconds write_timeout;  // a whole response
  std::chrono::milliseconds keep_alive;     // idle before the next request
  size_t max_body_bytes;
  size_t max_head_bytes = 64 << 10;  // the request line and headers
};

// A connection's socket, read and written against a deadline for the whole request and one for
// the whole response: httplib 0.11's own stream times out each recv() alone. A request late or
// with an oversized head is answered here (408 / 431), and the stream refuses all I/O after.
class DeadlineStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  DeadlineStream(socket_t sock, const ConnectionLimits& limits) : sock_(sock), limits_(limits) {}

  // Waits up to the keep-alive time for a request to start, in short slices so that a stopping
  // server (`listening` closed) is noticed; then the request's clock starts.
  bool next_request(const std::atomic<socket_t>& listening) {
    const Clock::time_point idle_until = Clock::now() + limits_.keep_alive;
    while (begin_ == end_ && listening != INVALID_SOCKET) {
      const auto slice = std::min<Clock::duration>(idle_until - Clock::now(), kSlice);
      if (slice <= Clock::duration::zero()) return false;
      if (wait(POLLIN, Clock::now() + slice)) break;
    }
    if (listening == INVALID_SOCKET) return false;
    read_deadline_ = Clock::now() + limits_.read_timeout;
    write_deadline_.reset();
    head_left_ = limits_.max_head_bytes;
    in_head_ = true;
    return true;
  }
  void end_head() { in_head_ = false; }
  bool refused() const { return refused_; }
  // A streamed answer gives each event the write timeout anew: a long generation is many writes.
  void restart_write_clock() { write_deadline_.reset(); }
  // The stream of the connection this thread serves: httplib hands a content provider only a
  // DataSink, and restart_write_clock is the stream's.
  static thread_local DeadlineStream* serving;

  bool is_readable() const override { return begin_ < end_ || wait(POLLIN, read_deadline_); }
  bool is_writable() const override {
    return !refused_ &&
           wait(POLLOUT, write_deadline_.value_or(Clock::now() + limits_.write_timeout));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (refused_) return -1;
    if (begin_ == end_) {
      ssize_t n;
      do {
        if (!wait(POLLIN, read_deadline_))
          return refuse("408 Request Timeout", "the request did not arrive whole within " +
                                                   std::to_string(limits_.read_timeout.count()) +
                                                   " ms of its first byte");
        n = ::recv(sock_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
      } while (n < 0 && again());
      if (n <= 0) return n;
      begin_ = 0;
      end_ = size_t(n);
    }
    size = std::min(size, end_ - begin_);
    if (in_head_) {
      if (size > head_left_)
        return refuse("431 Request Header Fields Too Large",
                      "the request line and headers are over " +
                          std::to_string(limits_.max_head_bytes) + " bytes");
      head_left_ -= size;
    }
    std::memcpy(ptr, buffer_.data() + begin_, size);
    begin_ += size;
    return ssize_t(size);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (refused_) return -1;
    if (!write_deadline_) write_deadline_ = Clock::now() + limits_.write_timeout;
    ssize_t n;
    do {
      if (!wait(POLLOUT, *write_deadline_)) return -1;
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && again());
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  static constexpr std::chrono::milliseconds kSlice{100};

  static bool again() { return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK; }

  // Whether the socket is ready for `events` (or failed: the next call says how) by `deadline`.
  bool wait(short events, Clock::time_point deadline) const {
    for (;;) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd fd{sock_, events, 0};
      const int n = ::poll(&fd, 1, int(std::min<int64_t>(left, 1 << 30)));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  }

  // Answers the request with `status` itself, as far as the socket takes it at once (the client
  // may not be reading), and refuses the stream's I/O from now on.
  ssize_t refuse(const std::string& status, const std::string& reason) {
    const std::string body = error_body(reason);
    const std::string reply =
        "HTTP/1.1 " + status +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n\r\n" + body;
    (void)!::send(sock_, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    refused_ = true;
    return -1;
  }

  template <class Query>
  void address(Query query, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    std::array<char, NI_MAXHOST> host{};
    std::array<char, NI_MAXSERV> serv{};
    if (query(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host.data(), host.size(),
                      serv.data(), serv.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      return;
    ip = host.data();
    port = std::atoi(serv.data());
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  std::array<char, 16384> buffer_;
  size_t begin_ = 0, end_ = 0;  // what buffer_ holds that was not read yet
  Clock::time_point read_deadline_;
  std::optional<Clock::time_point> write_deadline_;  // set by the response's first write
  size_t head_left_ = 0;
  bool in_head_ = false, refused_ = false;
};

inline thread_local DeadlineStream* DeadlineStream::serving = nullptr;

// Why httplib must not read the request's body, if so: httplib 0.11 reads a chunked body, one
// without a length and a compressed one's expansion with no limit, so only a body of a stated
// Content-Length (over the limit: 413 without keeping it) and no coding is read.
inline std::optional<std::pair<int, std::string>> unreadable_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding"))
    return {{411, "send the body with a Content-Length, not a Transfer-Encoding"}};
  const std::string coding = req.get_header_value("Content-Encoding");
  if (!coding.empty() && coding != "identity")
    return {{415, "a Content-Encoding of the body is not accepted: send it uncompressed"}};
  const bool has_body =
      req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "PRI";
  if (has_body && !req.has_header("Content-Length"))
    return {{411, "a " + req.method + " needs a Content-Length"}};
  return std::nullopt;
}

// httplib's server with each connection served through a DeadlineStream, bodies read only when
// unreadable_body allows, and every error answered as JSON.
class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& limits) : limits_(limits) {
    set_payload_max_length(limits.max_body_bytes);
    // Only for the Keep-Alive header: the keep-alive wait is DeadlineStream::next_request's.
    set_keep_alive_timeout(std::chrono::ceil<std::chrono::seconds>(limits.keep_alive).count());
    set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      const auto refusal = unreadable_body(req);
      if (!refusal) return HandlerResponse::Unhandled;
      res.status = refusal->first;
      res.set_content(error_body(refusal->second), "application/json");
      return HandlerResponse::Handled;
    });
    // httplib's own errors (413, 404, ...) come with no body; a route's come with their reason.
    // (Wrapped: a bare lambda would fit both overloads.)
    set_error_handler(
        HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return HandlerResponse::Unhandled;
          res.set_content(error_body(reason(req, res.status)), "application/json");
          return HandlerResponse::Handled;
        }));
  }

  // httplib 0.11, as Debian builds it, listens with a backlog of 5: under 64 clients connecting
  // at once, SYNs were dropped and retried a second later. Listening again sets a new one.
  bool set_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }

 private:
  std::string reason(const httplib::Request& req, int status) const {
    switch (status) {
      case 404:
        return "no route for " + req.method + " " + req.path;
      case 413:
        return "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes";
      case 414:
        return "the request line is too long";
      case 500:
        return "the server failed";
      default:
        return "the request is malformed (status " + std::to_string(status) + ")";
    }
  }

  // Called once a request's head is read, before its body: drops what no route uses, and has a
  // body that will not be read close the connection after the answer.
  static void after_head(httplib::Request& req, DeadlineStream& stream, bool& close) {
    stream.end_head();
    // One "Range: bytes=0-0,0-0,..." line would ask for thousands of copies of the answer.
    req.ranges.clear();
    // Every route reads the body as JSON whatever its declared type; httplib would parse a form
    // (refusing one over 8 KiB, as curl -d and urllib send) or a multipart body instead.
    req.headers.erase("Content-Type");
    if (unreadable_body(req)) {  // answered by the pre-routing handler, the body left unread
      req.headers.erase("Connection");
      req.set_header("Connection", "close");
      close = true;
    }
  }

  bool process_and_close_socket(socket_t sock) override {
    DeadlineStream stream(sock, limits_);
    DeadlineStream::serving = &stream;
    bool ok = false;
    for (size_t left = keep_alive_max_count_; left > 0 && stream.next_request(svr_sock_); --left) {
      bool closed = false;
      ok = process_request(stream, /*close_connection=*/left == 1, closed,
                           [&](httplib::Request& req) { after_head(req, stream, closed); });
      if (!ok || closed || stream.refused()) break;
    }
    DeadlineStream::serving = nullptr;
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  ConnectionLimits limits_;
};

}  // namespace ofl_examples
