// TcpStoreServer: one poll() loop on one thread. Requests are handled in arrival order per
// client; a get/wait on absent keys parks the client until the keys appear or its deadline.
// Under a flood of connections that never say hello, the oldest pending ones give way to new
// ones, so a rank can still get in, and nothing the loop does waits on stderr.
// Over 600 lines: one poll loop and the handlers that share its state.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/comm/tcp_store.h"
#include "core/comm/tcp_store_wire.h"
#include "core/error.h"

namespace ofl::internal::comm {
namespace {

using Clock = std::chrono::steady_clock;
using namespace wire;

constexpr size_t kReadChunk = size_t{64} << 10;
// Connections accepted per turn of the loop, so that a flood of them cannot starve the clients
// already connected.
constexpr int kAcceptsPerTurn = 64;
// Lines about connections that have not said hello are summarised at most this often.
constexpr auto kFloodLogEvery = std::chrono::seconds(5);
// Longest wait a client may ask for (keeps deadline arithmetic far from overflow).
constexpr int64_t kMaxWaitMs = int64_t{10} * 365 * 24 * 3600 * 1000;

enum class ArgKind { kKey, kValue, kInt };

enum class Parse { kIncomplete, kComplete, kInvalid };

struct Request {
  uint8_t op = 0;
  std::vector<std::pair<size_t, size_t>> args;  // (offset, length) into the input buffer
  size_t size = 0;
};

std::optional<ArgKind> arg_kind(uint8_t op, uint32_t nargs, uint32_t i, std::string& why) {
  auto want = [&](uint32_t n) {
    if (nargs == n) return true;
    why = str_cat(op_name(op), " request with ", nargs, " arguments (expected ", n, ")");
    return false;
  };
  switch (op) {
    case kHello:
      if (!want(2)) return std::nullopt;
      return i == 0 ? ArgKind::kInt : ArgKind::kKey;
    case kSet:
      if (!want(2)) return std::nullopt;
      return i == 0 ? ArgKind::kKey : ArgKind::kValue;
    case kGet:
    case kAdd:
      if (!want(2)) return std::nullopt;
      return i == 0 ? ArgKind::kKey : ArgKind::kInt;
    case kCompareSet:
      if (!want(3)) return std::nullopt;
      return i == 0 ? ArgKind::kKey : ArgKind::kValue;
    case kRemove:
      if (!want(1)) return std::nullopt;
      return ArgKind::kKey;
    case kWait:
    case kCheck:
      if ((op == kWait && nargs == 0) || nargs > kMaxKeys + 1) {
        why = str_cat(op_name(op), " request with ", nargs, " arguments");
        return std::nullopt;
      }
      return op == kWait && i == 0 ? ArgKind::kInt : ArgKind::kKey;
    default:
      why = str_cat("unknown opcode ", int(op));
      return std::nullopt;
  }
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::optional<int64_t> parse_int(const Bytes& v) {
  int64_t out = 0;
  const char* first = reinterpret_cast<const char*>(v.data());
  auto [end, ec] = std::from_chars(first, first + v.size(), out);
  if (ec != std::errc() || end != first + v.size() || v.empty()) return std::nullopt;
  return out;
}

}  // namespace

struct TcpStoreServer::Impl {
  struct Waiter {
    uint64_t seq;
    bool is_get;  // replies with the value of keys[0]
    std::vector<std::string> keys;
    size_t missing = 0;
    Clock::time_point deadline;
  };
  struct Client {
    uint64_t id;
    Fd fd;
    std::string peer;
    Bytes in;
    Bytes out;
    size_t out_pos = 0;
    bool hello = false;
    Clock::time_point hello_deadline;  // until hello: when the connection is dropped
    bool close_after_flush = false;
    bool dead = false;
    std::optional<Waiter> waiter;
    bool busy() const { return dead || close_after_flush || waiter || out_pos < out.size(); }
  };

  TcpStoreServerOptions opt;
  std::string host;
  int port = 0;
  std::string where;
  size_t max_request = 0;
  Fd listen_fd, wake_read, wake_write;
  std::thread thread;
  std::mutex stop_mu;

  std::unordered_map<std::string, Bytes> data;
  std::map<uint64_t, Client> clients;
  // Absent keys -> the parked waiters (client id, waiter seq) that need them.
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> watchers;
  uint64_t next_id = 1, next_seq = 1;
  Clock::time_point listen_paused_until{};
  // Lines about unauthenticated connections held back since the last one printed.
  size_t flood_lines_held = 0;
  Clock::time_point flood_logged_at{};
  size_t log_lines_lost = 0;  // lines dropped because stderr was full

  void listen_on(const std::string& h, int p);
  void loop();
  void accept_all(Clock::time_point now);
  void read_from(Client& c);
  void serve_buffered(Client& c);
  Parse parse(const Client& c, Request& req, std::string& why) const;
  void handle(Client& c, const Request& req);
  void park(Client& c, std::vector<std::string> keys, bool is_get, int64_t timeout_ms);
  void unpark(Client& c);
  void notify(const std::string& key);
  void try_complete(Client& c);
  void expire(Clock::time_point now);
  void reply(Client& c, FrameWriter&& frame);
  void flush(Client& c);
  void drop(Client& c, const std::string& why);
  void send_frame_now(const Client& c, const Bytes& frame);
  void sweep();
  void log(const std::string& line);
  void log_about(const Client& c, const std::string& line);
};

// Never blocks: a job whose stderr is a pipe nobody drains must not stop the store. A line
// that does not fit at once is counted and reported with the next that does.
void TcpStoreServer::Impl::log(const std::string& line) {
  pollfd p{STDERR_FILENO, POLLOUT, 0};
  if (::poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)) {
    ++log_lines_lost;
    return;
  }
  std::string text = str_cat("[store] ", where, ": ", line);
  if (log_lines_lost)
    text += str_cat(" (", std::exchange(log_lines_lost, 0),
                    " earlier lines were lost: stderr was full)");
  // One write of at most PIPE_BUF bytes is atomic and fits once poll says the pipe has room.
  text.resize(std::min<size_t>(text.size(), PIPE_BUF - 1));
  text += '\n';
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

// Lines about ranks are all printed; those about connections before their hello (a flood, a
// port scanner) at most once per kFloodLogEvery, with a count of the ones held back.
void TcpStoreServer::Impl::log_about(const Client& c, const std::string& line) {
  if (c.hello) return log(line);
  Clock::time_point now = Clock::now();
  if (now - flood_logged_at < kFloodLogEvery) {
    ++flood_lines_held;
    return;
  }
  flood_logged_at = now;
  size_t held = std::exchange(flood_lines_held, 0);
  log(held ? str_cat(line, " (and ", held, " lines like it about connections before their hello ",
                     "since the last)")
           : line);
}

void TcpStoreServer::Impl::listen_on(const std::string& h, int p) {
  if (p < 0 || p > 65535) fail("store", "port ", p, " is out of range");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string service = std::to_string(p);
  if (int rc = ::getaddrinfo(h.c_str(), service.c_str(), &hints, &res); rc != 0)
    fail("store", "cannot resolve the store address '", h, "': ", ::gai_strerror(rc));
  std::string last = "no usable address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      last = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    listen_fd = std::move(fd);
    break;
  }
  ::freeaddrinfo(res);
  if (!listen_fd.valid()) fail("store", "cannot listen on ", join_host_port(h, p), ": ", last);
  host = h;
  where = join_host_port(h, port);
}

void TcpStoreServer::Impl::loop() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    Clock::time_point now = Clock::now();
    expire(now);
    // A reply or a finished wait may have freed a client that has requests buffered.
    for (auto& [id, c] : clients) serve_buffered(c);
    sweep();

    fds.clear();
    ids.clear();
    fds.push_back({wake_read.get(), POLLIN, 0});
    bool listening = now >= listen_paused_until;
    fds.push_back({listening ? listen_fd.get() : -1, POLLIN, 0});
    Clock::time_point next = listening ? Clock::time_point::max() : listen_paused_until;
    for (auto& [id, c] : clients) {
      short events = POLLIN;
      if (c.out_pos < c.out.size()) events |= POLLOUT;
      fds.push_back({c.fd.get(), events, 0});
      ids.push_back(id);
      if (c.waiter) next = std::min(next, c.waiter->deadline);
      if (!c.hello) next = std::min(next, c.hello_deadline);
    }
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      log(str_cat("poll failed, the store stops serving: ", std::strerror(errno)));
      break;
    }
    if (fds[0].revents) break;  // stop()
    if (fds[1].revents & POLLIN) accept_all(Clock::now());
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Client& c = clients.at(ids[i - 2]);
      if (fds[i].revents & POLLOUT) flush(c);
      if (!c.dead && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) read_from(c);
      if (fds[i].revents & POLLNVAL) c.dead = true;
    }
    sweep();
  }
  clients.clear();
  watchers.clear();
}

void TcpStoreServer::Impl::accept_all(Clock::time_point now) {
  size_t unauthenticated = 0;
  for (const auto& [id, c] : clients) unauthenticated += !c.hello && !c.dead;
  auto oldest_pending = clients.begin();
  for (int turn = 0; turn < kAcceptsPerTurn; ++turn) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(listen_fd.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: stop accepting for a moment rather than spin.
      log(str_cat("cannot accept a client: ", std::strerror(errno)));
      listen_paused_until = now + std::chrono::milliseconds(100);
      return;
    }
    // At the limit, the connection that has waited longest for its hello gives way: a flood
    // then cannot keep a rank out, which says hello as soon as it connects.
    if (unauthenticated >= opt.max_unauthenticated) {
      while (oldest_pending->second.hello || oldest_pending->second.dead) ++oldest_pending;
      Client& old = oldest_pending->second;
      log_about(old, str_cat("closing the connection from ", old.peer, ": ", unauthenticated,
                             " connections have not said hello yet (the limit)"));
      send_frame_now(old, FrameWriter(kBusy).arg("too many connections before their hello").take());
      old.dead = true;
      --unauthenticated;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t id = next_id++;
    Client& c = clients[id];
    c.id = id;
    c.fd = Fd(fd);
    c.peer = sockaddr_to_string(reinterpret_cast<sockaddr*>(&ss), len);
    c.hello_deadline = now + std::chrono::milliseconds(opt.hello_timeout_ms);
    ++unauthenticated;
  }
}

void TcpStoreServer::Impl::read_from(Client& c) {
  // Received into one buffer of the loop's, so that a connection's memory is what it sent.
  static thread_local std::vector<uint8_t> chunk(kReadChunk);
  while (!c.dead) {
    ssize_t n = ::recv(c.fd.get(), chunk.data(), chunk.size(), 0);
    if (n > 0) c.in.insert(c.in.end(), chunk.begin(), chunk.begin() + n);
    if (n == 0) {
      c.dead = true;  // the client hung up
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.dead = true;
      return;
    }
    serve_buffered(c);
    // Only a client that sends ahead of its replies gets here with a full request buffered.
    const size_t limit = c.hello ? max_request : opt.max_hello_bytes;
    if (!c.dead && c.in.size() > limit)
      drop(c, str_cat("sent more than ", limit, " bytes ahead of its replies",
                      c.hello ? "" : " before its hello"));
  }
}

Parse TcpStoreServer::Impl::parse(const Client& c, Request& req, std::string& why) const {
  const uint8_t* p = c.in.data();
  size_t n = c.in.size();
  if (n < kHeaderBytes) return Parse::kIncomplete;
  req.op = p[0];
  uint32_t nargs = get_u32(p + 1);
  req.args.clear();
  if (!arg_kind(req.op, nargs, 0, why)) return Parse::kInvalid;
  size_t pos = kHeaderBytes;
  for (uint32_t i = 0; i < nargs; ++i) {
    ArgKind kind = *arg_kind(req.op, nargs, i, why);
    if (n - pos < kArgHeaderBytes) return Parse::kIncomplete;
    size_t len = get_u32(p + pos);
    pos += kArgHeaderBytes;
    const char* what = kind == ArgKind::kKey ? "key" : kind == ArgKind::kValue ? "value" : "int";
    size_t limit = kind == ArgKind::kKey     ? opt.max_key_bytes
                   : kind == ArgKind::kValue ? opt.max_value_bytes
                                             : kIntBytes;
    if (len > limit || (kind == ArgKind::kInt && len != kIntBytes)) {
      why = str_cat(op_name(req.op), " request with a ", len, "-byte ", what, " (limit ", limit,
                    " bytes)");
      return Parse::kInvalid;
    }
    if (pos + len > max_request) {
      why = str_cat(op_name(req.op), " request larger than ", max_request, " bytes");
      return Parse::kInvalid;
    }
    if (n - pos < len) return Parse::kIncomplete;
    req.args.emplace_back(pos, len);
    pos += len;
  }
  req.size = pos;
  return Parse::kComplete;
}

void TcpStoreServer::Impl::serve_buffered(Client& c) {
  Request req;
  size_t consumed = 0;
  while (!c.busy()) {
    std::string why;
    // Parse in place after the consumed prefix by shifting it out first.
    if (consumed) {
      c.in.erase(c.in.begin(), c.in.begin() + consumed);
      consumed = 0;
    }
    Parse r = parse(c, req, why);
    if (r == Parse::kIncomplete) break;
    if (r == Parse::kInvalid) {
      drop(c, why);
      break;
    }
    try {
      handle(c, req);
    } catch (const std::exception& e) {  // e.g. out of memory: lose this client, not the store
      drop(c, str_cat("failed to serve ", op_name(req.op), ": ", e.what()));
    }
    consumed = req.size;
  }
  if (consumed && !c.dead) c.in.erase(c.in.begin(), c.in.begin() + consumed);
}

void TcpStoreServer::Impl::handle(Client& c, const Request& req) {
  auto bytes = [&](size_t i) {
    auto [off, len] = req.args[i];
    return Bytes(c.in.begin() + off, c.in.begin() + off + len);
  };
  auto str = [&](size_t i) {
    auto [off, len] = req.args[i];
    return std::string(reinterpret_cast<const char*>(c.in.data()) + off, len);
  };
  auto integer = [&](size_t i) { return get_i64(c.in.data() + req.args[i].first); };

  if (!c.hello) {
    if (req.op != kHello) return drop(c, str_cat("sent ", op_name(req.op), " before hello"));
    c.close_after_flush = true;  // unless accepted below
    if (integer(0) != kProtocolVersion) {
      log_about(c, str_cat("rejected ", c.peer, ": protocol version ", integer(0), ", expected ",
                           kProtocolVersion));
      return reply(c, std::move(FrameWriter(kError).arg(
                          str_cat("the store speaks protocol version ", kProtocolVersion,
                                  ", this client ", integer(0)))));
    }
    if (!opt.token.empty() && !same_token(opt.token, str(1))) {
      log_about(
          c, str_cat("rejected ", c.peer, ": ", req.args[1].second ? "wrong token" : "no token"));
      return reply(c, std::move(FrameWriter(kRejected).arg("wrong or missing token")));
    }
    c.hello = true;
    c.close_after_flush = false;
    return reply(c, std::move(FrameWriter(kOk)
                                  .arg_int(static_cast<int64_t>(opt.max_key_bytes))
                                  .arg_int(static_cast<int64_t>(opt.max_value_bytes))
                                  .arg_int(static_cast<int64_t>(max_request))));
  }
  switch (req.op) {
    case kHello:
      return drop(c, "sent a second hello");
    case kSet: {
      std::string key = str(0);
      data[key] = bytes(1);
      reply(c, FrameWriter(kOk));
      return notify(key);
    }
    case kGet: {
      std::string key = str(0);
      auto it = data.find(key);
      if (it != data.end()) return reply(c, std::move(FrameWriter(kOk).arg(it->second)));
      return park(c, {key}, true, integer(1));
    }
    case kAdd: {
      std::string key = str(0);
      int64_t delta = integer(1), value = 0;
      auto it = data.find(key);
      if (it != data.end()) {
        auto old = parse_int(it->second);
        if (!old)
          return reply(c, std::move(FrameWriter(kError).arg(
                              str_cat("add: the value of key '", key, "' is not an integer"))));
        if (__builtin_add_overflow(*old, delta, &value))
          return reply(
              c, std::move(FrameWriter(kError).arg(
                     str_cat("add: ", *old, " + ", delta, " overflows int64 at key '", key, "'"))));
      } else {
        value = delta;
      }
      data[key] = to_bytes(std::to_string(value));
      reply(c, std::move(FrameWriter(kOk).arg_int(value)));
      return notify(key);
    }
    case kCompareSet: {
      std::string key = str(0);
      Bytes expected = bytes(1);
      auto it = data.find(key);
      if (it == data.end() ? expected.empty() : it->second == expected) {
        Bytes& slot = data[key];
        slot = bytes(2);
        reply(c, std::move(FrameWriter(kOk).arg(slot)));
        return notify(key);
      }
      return reply(c, std::move(FrameWriter(kOk).arg(it == data.end() ? Bytes{} : it->second)));
    }
    case kWait: {
      std::vector<std::string> keys;
      for (size_t i = 1; i < req.args.size(); ++i) keys.push_back(str(i));
      return park(c, std::move(keys), false, integer(0));
    }
    case kRemove:
      return reply(c, std::move(FrameWriter(kOk).arg_int(data.erase(str(0)) ? 1 : 0)));
    case kCheck: {
      bool all = true;
      for (size_t i = 0; i < req.args.size() && all; ++i) all = data.count(str(i)) > 0;
      return reply(c, std::move(FrameWriter(kOk).arg_int(all ? 1 : 0)));
    }
    default:
      OFL_CHECK(false, "opcode ", int(req.op), " passed parse");
  }
}

void TcpStoreServer::Impl::park(Client& c, std::vector<std::string> keys, bool is_get,
                                int64_t timeout_ms) {
  if (!is_get) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
  Waiter w;
  w.seq = next_seq++;
  w.is_get = is_get;
  w.keys = std::move(keys);
  w.deadline =
      Clock::now() + std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms, 0, kMaxWaitMs));
  c.waiter = std::move(w);
  try_complete(c);
}

void TcpStoreServer::Impl::try_complete(Client& c) {
  Waiter& w = *c.waiter;
  w.missing = 0;
  for (const auto& key : w.keys) {
    if (data.count(key)) continue;
    watchers[key].emplace_back(c.id, w.seq);
    ++w.missing;
  }
  if (w.missing) return;
  bool is_get = w.is_get;
  std::string key = w.keys.empty() ? "" : w.keys[0];
  c.waiter.reset();
  if (is_get) return reply(c, std::move(FrameWriter(kOk).arg(data.at(key))));
  reply(c, FrameWriter(kOk));
}

void TcpStoreServer::Impl::notify(const std::string& key) {
  auto it = watchers.find(key);
  if (it == watchers.end()) return;
  auto parked = std::move(it->second);
  watchers.erase(it);
  for (auto [id, seq] : parked) {
    auto c = clients.find(id);
    if (c == clients.end() || c->second.dead || !c->second.waiter || c->second.waiter->seq != seq)
      continue;
    // A key counted present may have been removed since: try_complete re-checks every key.
    if (--c->second.waiter->missing == 0) try_complete(c->second);
  }
}

void TcpStoreServer::Impl::unpark(Client& c) {
  if (!c.waiter) return;
  for (const auto& key : c.waiter->keys) {
    auto it = watchers.find(key);
    if (it == watchers.end()) continue;
    std::erase(it->second, std::make_pair(c.id, c.waiter->seq));
    if (it->second.empty()) watchers.erase(it);
  }
  c.waiter.reset();
}

void TcpStoreServer::Impl::expire(Clock::time_point now) {
  for (auto& [id, c] : clients)
    if (!c.hello && !c.dead && c.hello_deadline <= now)
      drop(c, str_cat("sent no hello within ", opt.hello_timeout_ms, " ms"));
  for (auto& [id, c] : clients) {
    if (!c.waiter || c.dead || c.waiter->deadline > now) continue;
    FrameWriter frame(kTimeout);
    for (const auto& key : c.waiter->keys)
      if (!data.count(key)) frame.arg(key);
    unpark(c);
    reply(c, std::move(frame));
  }
}

void TcpStoreServer::Impl::reply(Client& c, FrameWriter&& frame) {
  Bytes b = frame.take();
  if (c.out_pos == c.out.size()) {
    c.out = std::move(b);
    c.out_pos = 0;
  } else {
    c.out.insert(c.out.end(), b.begin(), b.end());
  }
  flush(c);
}

void TcpStoreServer::Impl::flush(Client& c) {
  while (!c.dead && c.out_pos < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.dead = true;  // the client went away
      return;
    }
    c.out_pos += static_cast<size_t>(n);
  }
  if (c.out_pos == c.out.size()) {
    c.out.clear();
    c.out_pos = 0;
    if (c.close_after_flush) c.dead = true;
  }
}

void TcpStoreServer::Impl::drop(Client& c, const std::string& why) {
  log_about(c, str_cat("closing the connection from ", c.peer, ": ", why));
  send_frame_now(
      c, FrameWriter(kError).arg(str_cat("the store closed this connection: ", why)).take());
  c.dead = true;
}

// Best effort, before closing: tells a well-meaning client why, if nothing else is queued.
void TcpStoreServer::Impl::send_frame_now(const Client& c, const Bytes& frame) {
  if (c.out_pos != c.out.size()) return;
  (void)::send(c.fd.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void TcpStoreServer::Impl::sweep() {
  for (auto it = clients.begin(); it != clients.end();) {
    if (it->second.dead) {
      unpark(it->second);
      it = clients.erase(it);
    } else {
      ++it;
    }
  }
}

TcpStoreServer::TcpStoreServer(const std::string& host, int port, TcpStoreServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.opt = std::move(options);
  if (s.opt.max_key_bytes == 0 || s.opt.max_key_bytes > UINT32_MAX ||
      s.opt.max_value_bytes > UINT32_MAX)
    fail("store", "max_key_bytes must be in [1, 4 GiB) and max_value_bytes below 4 GiB, got ",
         s.opt.max_key_bytes, " and ", s.opt.max_value_bytes);
  if (s.opt.max_unauthenticated == 0)
    fail("store", "max_unauthenticated must be at least 1: ranks connect before their hello");
  // The largest request: compare_set carries a key and two values; waits carry many keys.
  s.max_request = 2 * s.opt.max_value_bytes + s.opt.max_key_bytes + (size_t{64} << 10);
  s.listen_on(host, port);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
    fail("store", "cannot create the wake-up pipe: ", std::strerror(errno));
  s.wake_read.reset(pipe_fds[0]);
  s.wake_write.reset(pipe_fds[1]);
  s.thread = std::thread([&s] {
    try {
      s.loop();
    } catch (const std::exception& e) {
      s.log(str_cat("the store stopped serving: ", e.what()));
      s.clients.clear();
      s.listen_fd.reset();
    }
  });
}

TcpStoreServer::~TcpStoreServer() {
  stop();
}

const std::string& TcpStoreServer::host() const {
  return impl_->host;
}
int TcpStoreServer::port() const {
  return impl_->port;
}

void TcpStoreServer::stop() {
  std::lock_guard lock(impl_->stop_mu);
  if (!impl_->thread.joinable()) return;
  char byte = 1;
  while (::write(impl_->wake_write.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
  impl_->listen_fd.reset();
}

}  // namespace ofl::internal::comm
