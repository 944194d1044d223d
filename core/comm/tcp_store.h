// The TCP rendezvous store: rank 0 hosts a TcpStoreServer at MASTER_ADDR:MASTER_PORT and every
// rank (rank 0 included) talks to it through a TcpStore client. Waits are parked on the server,
// which answers when the keys appear or the wait's deadline passes; nothing polls.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/store.h"

namespace ofl::internal::comm {

struct TcpStoreServerOptions {
  // When non-empty, a client must present this token before anything else (OFL_STORE_TOKEN).
  std::string token;
  // Larger keys or values close the sender's connection; the client checks them first.
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{64} << 20;
  // Before its hello a connection may hold at most this many bytes and must send the hello
  // within hello_timeout_ms; at most max_unauthenticated such connections are open at once (a
  // new one beyond it is closed). Memory and time are bounded before the token is checked.
  size_t max_hello_bytes = size_t{4} << 10;
  int64_t hello_timeout_ms = 10000;
  size_t max_unauthenticated = 256;
};

// Serves any number of clients from one background thread (a poll() loop). Binds only to the
// address given ("0.0.0.0" or "::" for every interface); port 0 picks a free port.
class TcpStoreServer {
 public:
  TcpStoreServer(const std::string& host, int port, TcpStoreServerOptions options = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  const std::string& host() const;
  int port() const;
  // Closes every client connection (their pending calls raise) and the listening socket.
  // Idempotent; the destructor calls it.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TcpStoreOptions {
  std::string token;
  // How long the constructor keeps retrying to connect (the server may start later); also the
  // store's timeout() for get() and wait().
  Millis timeout = default_timeout();
};

// A client of a TcpStoreServer. Safe to share between threads: requests are serialised, so a
// blocked get() or wait() holds up the other threads' calls on the same client.
class TcpStore : public Store {
 public:
  // `server`, when given, is kept alive as long as this client (rank 0 owns its server).
  TcpStore(std::string host, int port, TcpStoreOptions options = {},
           std::shared_ptr<TcpStoreServer> server = nullptr);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  using Store::wait;
  bool remove(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;

  const std::string& host() const { return host_; }
  int port() const { return port_; }

 private:
  struct Reply {
    uint8_t status = 0;
    std::vector<Bytes> args;
  };
  void connect_and_hello(const std::string& token, Millis timeout);
  void accept_hello(const Reply& r, const std::string& token);
  // Sends one request and reads its reply; `wait_ms` is how long the server may hold it.
  Reply call(const std::string& what, Bytes request, Millis wait_ms);
  Reply call_locked(const std::string& what, const Bytes& request, Millis wait_ms);
  [[noreturn]] void lost(const std::string& what, const std::string& why);
  void check_key(const std::string& key) const;
  void check_value(const std::string& key, const Bytes& value) const;
  void check_request_size(const std::string& what, size_t keys, size_t bytes) const;
  [[noreturn]] void raise_reply(const std::string& what, const Reply& r, Millis wait_ms) const;
  Millis io_grace() const;

  std::shared_ptr<TcpStoreServer> server_;  // declared first: outlives the connection
  std::string host_;
  int port_;
  std::string where_;  // "host:port" for messages
  std::mutex mu_;
  int fd_ = -1;
  size_t max_key_ = 0, max_value_ = 0, max_request_ = 0;  // announced by the server
};

// Rank 0 passes is_server = true: it starts the server (port 0 picks one: read it back through
// std::dynamic_pointer_cast<TcpStore>(store)->port()) and returns a client that owns it. Other
// ranks connect, retrying until `timeout`.
std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_server,
                                      const std::string& token = "",
                                      Millis timeout = default_timeout());

}  // namespace ofl::internal::comm
