// The inference server's HTTP connections, hardened (examples/cpp/inference_server.cpp): each
// request and each answer against a deadline of its own, bodies read only with a stated length
// and no coding, every error answered as JSON, and a thread for every connection held, up to a
// limit. httplib 0.11's own server times out each recv() alone, reads chunked or compressed
// bodies without a limit, and queues accepted connections without end for a fixed pool: 40
// clients sending their heads slowly kept 16 threads busy while normal requests waited behind
// them in the queue (seconds each, some past their clients' timeouts).
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
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

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

// A whole answer with `status` ("503 Service Unavailable") that closes the connection, written
// by the server itself (not through httplib).
inline std::string error_reply(const std::string& status, const std::string& reason) {
  const std::string body = error_body(reason);
  return "HTTP/1.1 " + status +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// What one connection may take from the server (see the top of inference_server.cpp).
struct ConnectionLimits {
  std::chrono::milliseconds read_timeout;   // a whole request, from its first byte
  std::chrono::milliseconds write_timeout;  // a whole response
  std::chrono::milliseconds keep_alive;     // idle before the next request
  size_t max_body_bytes;
  size_t max_head_bytes = 64 << 10;  // the request line and headers
  // The request line and headers, from the request's first byte (at most read_timeout): a head
  // comes in one packet or two, and one sent slowly is the way to hold a connection cheaply.
  std::chrono::milliseconds header_timeout{2000};
};

// The connections the server holds (at most `max`, each with a thread), and which of them are
// waiting for a request to arrive whole: the line, the headers and a body of a stated length,
// or the next request on a kept-alive connection. One arriving at the limit takes the place of
// the connection that has waited longest so, as the TCP store's hello limit does: slow or
// silent clients cannot keep out the ones that send their requests at once; only requests
// being answered hold their places.
class ConnectionTable {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    socket_t sock;
    bool waiting = true;  // for the request to arrive whole: may be cut off to make room
    bool cut = false;     // cut off (its thread is leaving): no longer counted
    Clock::time_point since = Clock::now();
  };
  using Slot = std::list<Entry>::iterator;

  explicit ConnectionTable(size_t max) : max_(max) {}

  // A place for `sock`, or none when every connection held is having a request answered (or
  // connections cut off and still leaving hold as many places again).
  std::optional<Slot> admit(socket_t sock) {
    std::lock_guard lock(mutex_);
    if (held_ >= max_) {
      auto oldest = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->waiting && !it->cut && (oldest == entries_.end() || it->since < oldest->since))
          oldest = it;
      if (oldest == entries_.end() || entries_.size() >= 2 * max_) return std::nullopt;
      // Its thread's poll() wakes to the end of the stream, and it leaves (release()).
      oldest->cut = true;
      --held_;
      ::shutdown(oldest->sock, SHUT_RDWR);
    }
    ++held_;
    return entries_.insert(entries_.end(), Entry{sock});
  }

  void set_waiting(Slot slot, bool waiting) {
    std::lock_guard lock(mutex_);
    slot->waiting = waiting;
    if (waiting) slot->since = Clock::now();
  }

  // Called before the socket is closed: no later cut can then shut down a reused descriptor.
  void release(Slot slot) {
    std::lock_guard lock(mutex_);
    if (!slot->cut) --held_;
    entries_.erase(slot);
  }

 private:
  const size_t max_;
  size_t held_ = 0;  // entries not cut
  std::mutex mutex_;
  std::list<Entry> entries_;
};

// Runs each job on a thread of its own: `ready` threads are started at once, and one more
// whenever a job comes with none idle (the ConnectionTable bounds how many jobs there are).
class ElasticPool {
 public:
  explicit ElasticPool(size_t ready) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < ready; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ElasticPool() { shutdown(); }

  // False when no thread could be started for the job (the system's limit).
  bool enqueue(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      if (idle_ <= jobs_.size()) {
        try {
          threads_.emplace_back([this] { work(); });
        } catch (const std::system_error&) {
          if (idle_ <= jobs_.size()) return false;
        }
      }
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return true;
  }

  // Runs the jobs queued, then joins every thread.
  void shutdown() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      threads.swap(threads_);
    }
    ready_.notify_all();
    for (std::thread& t : threads) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ++idle_;
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::list<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;  // threads waiting for a job
  bool stopping_ = false;
};

// Connections the server has no room for: each is answered at once (the caller sends the answer
// and hands the socket over), then what its client sends is read and dropped until it closes or
// a second passes. A socket closed with data unread resets the connection, and a client still
// sending its request would get the reset, not the answer. One thread for all of them.
class Refuser {
 public:
  using Clock = std::chrono::steady_clock;
  Refuser() : thread_([this] { run(); }) {}
  ~Refuser() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    thread_.join();
  }

  void refuse(socket_t sock, const std::string& reply) {
    (void)!::send(sock, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(sock, SHUT_WR);
    std::lock_guard lock(mutex_);
    if (stopping_ || lingering_.size() >= kMax) {
      ::close(sock);
      return;
    }
    lingering_.push_back({sock, Clock::now() + kLinger});
  }

 private:
  static constexpr size_t kMax = 1024;
  static constexpr std::chrono::milliseconds kLinger{1000}, kSlice{50};
  struct Lingering {
    socket_t sock;
    Clock::time_point until;
  };

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        const Clock::time_point now = Clock::now();
        for (auto it = lingering_.begin(); it != lingering_.end();) {
          const auto at = std::find_if(fds.begin(), fds.end(),
                                       [&](const pollfd& p) { return p.fd == it->sock; });
          bool closed = stopping_ || it->until <= now;
          if (!closed && at != fds.end() && at->revents) {
            char drop[4096];
            ssize_t n;
            while ((n = ::recv(it->sock, drop, sizeof drop, MSG_DONTWAIT)) > 0) {
            }
            closed = n == 0 || !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
          }
          if (closed) {
            ::close(it->sock);
            it = lingering_.erase(it);
          } else {
            ++it;
          }
        }
        if (stopping_) return;
        fds.clear();
        for (const Lingering& l : lingering_) fds.push_back({l.sock, POLLIN, 0});
      }
      // New sockets wait at most a slice to be polled: their answer is sent already.
      if (fds.empty())
        std::this_thread::sleep_for(kSlice);
      else
        (void)::poll(fds.data(), fds.size(), int(kSlice.count()));
    }
  }

  std::mutex mutex_;
  std::list<Lingering> lingering_;
  bool stopping_ = false;
  std::thread thread_;
};

// httplib's task queue, made by each listen(): its accept loop calls enqueue() with a job that
// serves the accepted socket (process_and_close_socket), and shutdown() when it stops. The job
// runs at once on the accept thread, where GuardedServer admits the connection or refuses it
// (without waiting) and hands it to the pool.
class AcceptQueue final : public httplib::TaskQueue {
 public:
  explicit AcceptQueue(size_t ready) : pool(ready) {}
  void enqueue(std::function<void()> fn) override {
    accepting = this;
    fn();
    accepting = nullptr;
  }
  void shutdown() override { pool.shutdown(); }

  ElasticPool pool;
  Refuser refuser;
  static thread_local AcceptQueue* accepting;  // the queue whose accept thread this is
};

inline thread_local AcceptQueue* AcceptQueue::accepting = nullptr;

// A connection's socket, read and written against a deadline for the whole request and one for
// the whole response: httplib 0.11's own stream times out each recv() alone. A request late or
// with an oversized head is answered here (408 / 431), and the stream refuses all I/O after.
class DeadlineStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  DeadlineStream(socket_t sock, const ConnectionLimits& limits, ConnectionTable* table = nullptr,
                 std::optional<ConnectionTable::Slot> slot = std::nullopt)
      : sock_(sock), limits_(limits), table_(table), slot_(slot) {}

  // Waits up to the keep-alive time for a request to start, in short slices so that a stopping
  // server (`listening` closed) is noticed; then the request's clock starts.
  bool next_request(const std::atomic<socket_t>& listening) {
    mark_waiting(true);
    const Clock::time_point idle_until = Clock::now() + limits_.keep_alive;
    while (begin_ == end_ && listening != INVALID_SOCKET) {
      const auto slice = std::min<Clock::duration>(idle_until - Clock::now(), kSlice);
      if (slice <= Clock::duration::zero()) return false;
      if (wait(POLLIN, Clock::now() + slice)) break;
    }
    if (listening == INVALID_SOCKET) return false;
    read_deadline_ = Clock::now() + limits_.read_timeout;
    head_deadline_ = std::min(read_deadline_, Clock::now() + limits_.header_timeout);
    write_deadline_.reset();
    head_left_ = limits_.max_head_bytes;
    in_head_ = true;
    return true;
  }
  // The head is read; `body_bytes` more make the request whole (then it is being answered).
  void end_head(size_t body_bytes) {
    in_head_ = false;
    body_left_ = body_bytes;
    if (body_left_ == 0) mark_waiting(false);
  }
  bool refused() const { return refused_; }
  // A streamed answer gives each event the write timeout anew: a long generation is many writes.
  void restart_write_clock() { write_deadline_.reset(); }
  // The stream of the connection this thread serves: httplib hands a content provider only a
  // DataSink, and restart_write_clock is the stream's.
  static thread_local DeadlineStream* serving;

  bool is_readable() const override { return begin_ < end_ || wait(POLLIN, deadline()); }
  bool is_writable() const override {
    return !refused_ &&
           wait(POLLOUT, write_deadline_.value_or(Clock::now() + limits_.write_timeout));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (refused_) return -1;
    if (begin_ == end_) {
      ssize_t n;
      do {
        if (!wait(POLLIN, deadline())) return refuse("408 Request Timeout", late());
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
    } else if (body_left_ > 0) {
      body_left_ -= std::min(body_left_, size);
      if (body_left_ == 0) mark_waiting(false);
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

  // The head's deadline while it is read, then the whole request's.
  Clock::time_point deadline() const { return in_head_ ? head_deadline_ : read_deadline_; }
  std::string late() const {
    if (in_head_ && limits_.header_timeout < limits_.read_timeout)
      return "the request line and headers did not arrive within " +
             std::to_string(limits_.header_timeout.count()) + " ms of the first byte";
    return "the request did not arrive whole within " +
           std::to_string(limits_.read_timeout.count()) + " ms of its first byte";
  }

  void mark_waiting(bool waiting) {
    if (table_ && slot_ && waiting != waiting_) table_->set_waiting(*slot_, waiting);
    waiting_ = waiting;
  }

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
    const std::string reply = error_reply(status, reason);
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
  ConnectionTable* table_;
  std::optional<ConnectionTable::Slot> slot_;
  std::array<char, 16384> buffer_;
  size_t begin_ = 0, end_ = 0;  // what buffer_ holds that was not read yet
  Clock::time_point read_deadline_, head_deadline_;
  std::optional<Clock::time_point> write_deadline_;  // set by the response's first write
  size_t head_left_ = 0, body_left_ = 0;
  bool in_head_ = false, refused_ = false;
  bool waiting_ = false;  // as the table has it
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

// httplib's server with each connection served through a DeadlineStream on a thread of its own
// (`threads` started at once, up to `max_connections` held: see ConnectionTable), bodies read
// only when unreadable_body allows, and every error answered as JSON.
class GuardedServer : public httplib::Server {
 public:
  GuardedServer(const ConnectionLimits& limits, size_t threads, size_t max_connections)
      : limits_(limits), connections_(max_connections) {
    new_task_queue = [threads] { return new AcceptQueue(threads); };
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
    // The body httplib will read: one of a stated length (413 over the limit: read and dropped).
    const bool unreadable = unreadable_body(req).has_value();
    stream.end_head(unreadable ? 0
                               : size_t(std::strtoull(
                                     req.get_header_value("Content-Length").c_str(), nullptr, 10)));
    // One "Range: bytes=0-0,0-0,..." line would ask for thousands of copies of the answer.
    req.ranges.clear();
    // Every route reads the body as JSON whatever its declared type; httplib would parse a form
    // (refusing one over 8 KiB, as curl -d and urllib send) or a multipart body instead.
    req.headers.erase("Content-Type");
    if (unreadable) {  // answered by the pre-routing handler, the body left unread
      req.headers.erase("Connection");
      req.set_header("Connection", "close");
      close = true;
    }
  }

  // On the accept thread (AcceptQueue): admits the connection, handing it to a thread of its
  // own, or answers 503 at once when every place is taken by a request being answered.
  bool process_and_close_socket(socket_t sock) override {
    AcceptQueue* queue = AcceptQueue::accepting;
    if (!queue) return serve(sock, std::nullopt);
    std::optional<ConnectionTable::Slot> slot = connections_.admit(sock);
    if (slot && queue->pool.enqueue([this, sock, slot] { serve(sock, slot); })) return true;
    if (slot) connections_.release(*slot);
    queue->refuser.refuse(sock, error_reply("503 Service Unavailable",
                                            "the server is answering as many requests "
                                            "as it holds connections for "
                                            "(--max-connections)"));
    return false;
  }

  bool serve(socket_t sock, std::optional<ConnectionTable::Slot> slot) {
    DeadlineStream stream(sock, limits_, &connections_, slot);
    DeadlineStream::serving = &stream;
    bool ok = false;
    for (size_t left = keep_alive_max_count_; left > 0 && stream.next_request(svr_sock_); --left) {
      bool closed = false;
      ok = process_request(stream, /*close_connection=*/left == 1, closed,
                           [&](httplib::Request& req) { after_head(req, stream, closed); });
      if (!ok || closed || stream.refused()) break;
    }
    DeadlineStream::serving = nullptr;
    if (slot) connections_.release(*slot);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  ConnectionLimits limits_;
  ConnectionTable connections_;
};

}  // namespace ofl_examples
