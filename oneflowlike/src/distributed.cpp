#include "oneflowlike/distributed.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "boxing/reshard.h"
#include "boxing/search.h"
#include "core/comm/device_communicator.h"
#include "core/comm/gloo/gloo_communicator.h"
#include "core/comm/tcp_store.h"
#include "oneflowlike/src/api_util.h"

namespace ofl {

using api::fail;
using api::guarded;

World::World(std::shared_ptr<internal::BoxingContext> impl) : impl_(std::move(impl)) {}

int World::rank() const {
  return impl_->world->rank();
}
int World::size() const {
  return impl_->world->size();
}

namespace {

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end) fail("init_distributed", name, "=", text, " is not an integer");
  return int(v);
}

// `host` as an IPv4 address (names such as localhost resolved), as the Python side does.
std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return host;
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

// The address this machine reaches `master` from (a connected UDP socket sends nothing).
std::string local_address(const std::string& master, int port) {
  if (const char* host = std::getenv("OFL_COMM_HOST"); host && *host) return host;
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return "127.0.0.1";
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(port ? port : 9));
  std::string out = "127.0.0.1";
  if (inet_pton(AF_INET, master.c_str(), &to.sin_addr) == 1 &&
      connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(s, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, text, sizeof text))
      out = text;
  }
  close(s);
  return out;
}

}  // namespace

World init_distributed(double timeout_seconds) {
  return guarded([&] {
    namespace comm = internal::comm;
    const int rank = env_int("RANK", 0), size = env_int("WORLD_SIZE", 1);
    if (size < 1 || rank < 0 || rank >= size)
      fail("init_distributed", "RANK=", rank, " is outside WORLD_SIZE=", size);
    auto ctx = std::make_shared<internal::BoxingContext>();
    ctx->cache = std::make_shared<internal::PlanCache>(internal::ClusterSpec::default_for(size));
    if (size == 1) {
      ctx->world = comm::make_local_communicator();
      return World(ctx);
    }
    const char* addr = std::getenv("MASTER_ADDR");
    const int port = env_int("MASTER_PORT", 0);
    if (!addr || !*addr || port <= 0)
      fail("init_distributed", "WORLD_SIZE=", size,
           " needs MASTER_ADDR and MASTER_PORT; start the program with python -m "
           "oneflowlike.distributed.launch");
    const std::string master = resolve(addr);
    const char* token = std::getenv("OFL_STORE_TOKEN");
    const auto timeout = comm::Millis(int64_t(timeout_seconds * 1000));
    auto store = comm::make_tcp_store(master, port, rank == 0, token ? token : "", timeout);
    const char* backend = std::getenv("OFL_COMM_BACKEND");
    ctx->world = comm::make_device_communicator(
        comm::make_gloo_communicator(store, rank, size, local_address(master, port), timeout),
        store, backend && *backend ? backend : "auto");
    return World(ctx);
  });
}

}  // namespace ofl
