// Fuzz target: the inference server's request handling (examples/cpp/inference_server.cpp, its
// HTTP parsing, limits and JSON handlers), in this process so that its code is covered. The
// server serves the graph in $OFL_FUZZ_GRAPH (examples/cpp/save_gpt.py saves one) from a thread;
// each input is one connection's bytes, after which the connection's write side closes and the
// answer is read. A crash anywhere in the server ends the run as a finding.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#define main inference_server_main
#include "../../examples/cpp/inference_server.cpp"
#undef main

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  ::close(fd);
  return -1;
}

int server_port() {
  static const int port = [] {
    const char* graph = std::getenv("OFL_FUZZ_GRAPH");
    if (!graph) {
      std::fprintf(stderr,
                   "fuzz_server_request: set OFL_FUZZ_GRAPH to a graph save_gpt.py saved\n");
      std::exit(2);
    }
    const int p = free_port();
    // The server runs until the process ends, which then skips the destruction of statics
    // (_exit in an atexit handler): a request still running must not meet a destroyed allocator.
    std::thread([dir = std::string(graph), p] {
      const std::string port = std::to_string(p);
      // Short deadlines: an input that stalls is answered (or cut) quickly.
      const char* argv[] = {"inference_server",
                            dir.c_str(),
                            "--port",
                            port.c_str(),
                            "--threads",
                            "4",
                            "--read-timeout-ms",
                            "200",
                            "--write-timeout-ms",
                            "200",
                            "--max-body-bytes",
                            "65536",
                            "--max-batch",
                            "2"};
      if (inference_server_main(int(std::size(argv)), const_cast<char**>(argv)) != 0) std::abort();
    }).detach();
    std::atexit([] { ::_exit(0); });
    for (int i = 0; i < 600; ++i) {  // the graph loads, then the server listens
      if (const int fd = connect_to(p); fd >= 0) {
        ::close(fd);
        return p;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "fuzz_server_request: the server did not start\n");
    std::exit(2);
  }();
  return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = connect_to(server_port());
  if (fd < 0) return 0;
  for (size_t sent = 0; sent < size;) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += size_t(n);
  }
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 500) > 0 && ::recv(fd, buf, sizeof buf, 0) > 0) {
  }
  ::close(fd);
  return 0;
}
