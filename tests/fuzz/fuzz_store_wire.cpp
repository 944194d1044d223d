// Fuzz target: the TCP store's wire protocol, as a peer on the network speaks it. One server for
// the whole run; each input is sent by a fresh connection that then closes its sending side and
// reads whatever the server answers. The server must survive every input (the next ones reach
// it) and never crash or grow without bound.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>

#include "core/comm/tcp_store.h"

namespace {

using namespace ofl::internal::comm;

TcpStoreServer& server() {
  static TcpStoreServer s = [] {
    TcpStoreServerOptions o;
    o.max_value_bytes = size_t(1) << 20;
    o.hello_timeout_ms = 1000;
    return TcpStoreServer("127.0.0.1", 0, o);
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(server().port()));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    for (size_t sent = 0; sent < size;) {
      const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += size_t(n);
    }
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 200) > 0 && ::recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }
  ::close(fd);
  return 0;
}
