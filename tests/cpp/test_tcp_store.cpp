// Tier (a): the TCP rendezvous store over loopback: semantics, waits and timeouts, tokens,
// malformed input, a lost server, and binding only to the address given.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/tcp_store.h"
#include "core/comm/tcp_store_wire.h"
#include "core/error.h"
#include "test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::comm;
using ofl::internal::testing::error_of;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<TcpStore> client(const TcpStoreServer& server, std::string token = "",
                                 Millis timeout = 2000ms) {
  TcpStoreOptions options;
  options.token = std::move(token);
  options.timeout = timeout;
  return std::make_unique<TcpStore>(server.host(), server.port(), options);
}

// A raw TCP connection to host:port, or an invalid fd with errno set.
wire::Fd raw_connect(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  wire::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fd.reset();
  return fd;
}

void send_raw(const wire::Fd& fd, const Bytes& bytes) {
  ASSERT_EQ(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// Whether the peer closes the connection within `within` (reading and discarding any reply).
bool closed_by_peer(const wire::Fd& fd, Millis within) {
  auto deadline = Clock::now() + within;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

Bytes hello_frame(const std::string& token = "") {
  return wire::FrameWriter(wire::kHello).arg_int(wire::kProtocolVersion).arg(token).take();
}

int free_port() {
  wire::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// A local IPv4 address other than loopback, if the machine has one.
std::optional<std::string> non_loopback_ipv4() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> out;
  for (ifaddrs* i = list; i && !out; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    out = ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

TEST(TcpStore, SetThenGetReturnsTheValue) {
  TcpStoreServer server("127.0.0.1", 0);
  EXPECT_GT(server.port(), 0);
  auto a = client(server);
  auto b = client(server);
  Bytes binary = {0, 1, 255, 0, 7};
  a->set("bin", binary);
  a->set("empty", {});
  a->set("k", to_bytes("first"));
  a->set("k", to_bytes("second"));
  EXPECT_EQ(b->get("bin"), binary);
  EXPECT_EQ(b->get("empty"), Bytes{});
  EXPECT_EQ(to_string(b->get("k")), "second");
}

TEST(TcpStore, LargeValueRoundTrips) {
  TcpStoreServer server("127.0.0.1", 0);
  auto a = client(server);
  Bytes big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + 7);
  a->set("big", big);
  EXPECT_EQ(client(server)->get("big"), big);
}

TEST(TcpStore, GetWaitsForALaterSetFromAnotherThread) {
  TcpStoreServer server("127.0.0.1", 0);
  auto reader = client(server);
  auto start = Clock::now();
  auto value = std::async(std::launch::async, [&] { return reader->get("later"); });
  std::this_thread::sleep_for(100ms);
  client(server)->set("later", to_bytes("here"));
  EXPECT_EQ(to_string(value.get()), "here");
  EXPECT_GE(Clock::now() - start, 100ms);
}

TEST(TcpStore, AddIsAtomicAcrossFourThreads) {
  TcpStoreServer server("127.0.0.1", 0);
  auto shared = client(server);  // threads 0 and 1 share one client, 2 and 3 have their own
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<TcpStore> own = t >= 2 ? client(server) : nullptr;
      TcpStore& s = own ? *own : *shared;
      for (int i = 0; i < 1000; ++i) s.add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared->add("counter", 0), 4000);
  EXPECT_EQ(to_string(shared->get("counter")), "4000");
}

TEST(TcpStore, AddStartsFromZeroAndRejectsNonIntegers) {
  TcpStoreServer server("127.0.0.1", 0);
  auto s = client(server);
  EXPECT_EQ(s->add("n", 5), 5);
  EXPECT_EQ(s->add("n", -7), -2);
  s->set("text", to_bytes("abc"));
  std::string msg = error_of([&] { s->add("text", 1); });
  EXPECT_NE(msg.find("[store] add: the value of key 'text' is not an integer"), std::string::npos)
      << msg;
  EXPECT_EQ(s->add("n", 2), 0);  // the connection survives an error reply
}

TEST(TcpStore, CompareSetSwapsOnlyWhenExpectedMatches) {
  TcpStoreServer server("127.0.0.1", 0);
  auto s = client(server);
  // An absent key matches only an empty expected.
  EXPECT_EQ(s->compare_set("k", to_bytes("x"), to_bytes("y")), Bytes{});
  EXPECT_FALSE(s->check({"k"}));
  EXPECT_EQ(to_string(s->compare_set("k", {}, to_bytes("a"))), "a");
  EXPECT_EQ(to_string(s->compare_set("k", to_bytes("zzz"), to_bytes("b"))), "a");
  EXPECT_EQ(to_string(s->compare_set("k", to_bytes("a"), to_bytes("b"))), "b");
  EXPECT_EQ(to_string(s->get("k")), "b");
}

TEST(TcpStore, WaitTimeoutNamesTheMissingKeys) {
  TcpStoreServer server("127.0.0.1", 0);
  auto s = client(server);
  s->set("rank/0/ready", to_bytes("1"));
  auto start = Clock::now();
  std::string msg = error_of([&] { s->wait({"rank/0/ready", "rank/3/ready"}, 200ms); });
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(msg, "[store] timed out after 0.2 s waiting for keys: rank/3/ready (store 127.0.0.1:" +
                     std::to_string(server.port()) + ")");
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 1500ms);
  s->set("after", {});  // still usable
}

TEST(TcpStore, GetTimesOutAfterTheStoreTimeoutNamingTheKey) {
  TcpStoreServer server("127.0.0.1", 0);
  auto s = client(server);
  s->set_timeout(200ms);
  std::string msg = error_of([&] { s->get("never"); });
  EXPECT_NE(msg.find("timed out after 0.2 s waiting for keys: never"), std::string::npos) << msg;
}

TEST(TcpStore, WaitReturnsOnceOtherClientsSetEveryKey) {
  TcpStoreServer server("127.0.0.1", 0);
  auto waiter = client(server);
  auto done = std::async(std::launch::async, [&] { waiter->wait({"a", "b", "c"}, 2000ms); });
  auto setter = client(server);
  for (const char* key : {"a", "b", "c"}) {
    EXPECT_EQ(done.wait_for(20ms), std::future_status::timeout) << "returned before " << key;
    setter->set(key, {});
  }
  done.get();
  waiter->wait({}, 0ms);  // no keys: nothing to wait for
}

TEST(TcpStore, WaitNeedsAKeyRemovedMidWaitToBeSetAgain) {
  TcpStoreServer server("127.0.0.1", 0);
  auto waiter = client(server);
  auto done = std::async(std::launch::async, [&] { waiter->wait({"a", "b"}, 2000ms); });
  auto other = client(server);
  std::this_thread::sleep_for(50ms);
  other->set("a", {});
  EXPECT_TRUE(other->remove("a"));
  other->set("b", {});
  EXPECT_EQ(done.wait_for(100ms), std::future_status::timeout);
  other->set("a", {});
  done.get();
}

TEST(TcpStore, RemoveAndCheck) {
  TcpStoreServer server("127.0.0.1", 0);
  auto s = client(server);
  EXPECT_TRUE(s->check({}));
  EXPECT_FALSE(s->check({"x"}));
  s->set("x", to_bytes("1"));
  s->set("y", to_bytes("2"));
  EXPECT_TRUE(s->check({"x", "y"}));
  EXPECT_TRUE(s->remove("x"));
  EXPECT_FALSE(s->remove("x"));
  EXPECT_FALSE(s->check({"x", "y"}));
  EXPECT_TRUE(s->check({"y"}));
}

TEST(TcpStore, PrefixStoreNamespacesKeysOverTcp) {
  TcpStoreServer server("127.0.0.1", 0);
  std::shared_ptr<Store> base = client(server);
  PrefixStore group("group[0,2]", base);
  group.set("k", to_bytes("v"));
  EXPECT_TRUE(base->check({"group[0,2]/k"}));
  EXPECT_EQ(to_string(group.get("k")), "v");
}

TEST(TcpStore, ClientConnectsBeforeTheServerStarts) {
  int port = free_port();
  auto connected = std::async(std::launch::async, [&] {
    TcpStoreOptions options;
    options.timeout = 3000ms;
    TcpStore s("127.0.0.1", port, options);
    return to_string(s.get("hello"));
  });
  std::this_thread::sleep_for(200ms);
  TcpStoreServer server("127.0.0.1", port);
  client(server)->set("hello", to_bytes("world"));
  EXPECT_EQ(connected.get(), "world");
}

TEST(TcpStore, ConnectGivesUpAfterTheTimeoutNamingTheAddress) {
  int port = free_port();
  auto start = Clock::now();
  std::string msg = error_of([&] {
    TcpStoreOptions options;
    options.timeout = 300ms;
    TcpStore s("127.0.0.1", port, options);
  });
  EXPECT_NE(msg.find("[store] could not reach the store at 127.0.0.1:" + std::to_string(port) +
                     " within 0.3 s"),
            std::string::npos)
      << msg;
  EXPECT_LT(Clock::now() - start, 1500ms);
}

TEST(TcpStore, ServesManyClientsAtOnce) {
  TcpStoreServer server("127.0.0.1", 0);
  constexpr int kClients = 32;
  std::vector<std::string> keys;
  for (int r = 0; r < kClients; ++r) keys.push_back("rank/" + std::to_string(r));
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < kClients; ++r) {
    results.push_back(std::async(std::launch::async, [&, r] {
      auto s = client(server, "", 5000ms);
      s->set(keys[r], to_bytes(std::to_string(r * r)));
      s->wait(keys, 5000ms);
      s->add("arrived", 1);
      return to_string(s->get(keys[(r + 1) % kClients]));
    }));
  }
  for (int r = 0; r < kClients; ++r) {
    int next = (r + 1) % kClients;
    EXPECT_EQ(results[r].get(), std::to_string(next * next));
  }
  EXPECT_EQ(client(server)->add("arrived", 0), kClients);
}

TEST(TcpStore, WrongOrMissingTokenIsRejectedWithAClearError) {
  TcpStoreServerOptions options;
  options.token = "s3cret";
  TcpStoreServer server("127.0.0.1", 0, options);
  std::string where = "127.0.0.1:" + std::to_string(server.port());
  EXPECT_EQ(error_of([&] { client(server, "wrong"); }),
            "[store] the store at " + where + " rejected this client's token");
  EXPECT_NE(error_of([&] {
              client(server, "");
            }).find("[store] the store at " + where + " rejected this client's token"),
            std::string::npos);
  // A raw client skipping hello is cut off too.
  wire::Fd raw = raw_connect("127.0.0.1", server.port());
  send_raw(raw, wire::FrameWriter(wire::kSet).arg("k").arg("v").take());
  EXPECT_TRUE(closed_by_peer(raw, 1000ms));
  EXPECT_FALSE(client(server, "s3cret")->check({"k"}));
}

TEST(TcpStore, RightTokenIsAccepted) {
  TcpStoreServerOptions options;
  options.token = "s3cret";
  TcpStoreServer server("127.0.0.1", 0, options);
  auto s = client(server, "s3cret");
  s->set("k", to_bytes("v"));
  EXPECT_EQ(to_string(client(server, "s3cret")->get("k")), "v");
}

TEST(TcpStore, GarbageAndOversizedMessagesOnlyCloseTheirOwnConnection) {
  TcpStoreServerOptions options;
  options.max_key_bytes = 64;
  options.max_value_bytes = 1024;
  TcpStoreServer server("127.0.0.1", 0, options);
  auto good = client(server);
  good->set("before", to_bytes("1"));

  // A half-sent request that never completes must not stall anyone.
  wire::Fd idle = raw_connect("127.0.0.1", server.port());
  send_raw(idle, {wire::kHello, 2, 0});

  wire::Fd garbage = raw_connect("127.0.0.1", server.port());
  Bytes noise(4096);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 7919 + 13);
  send_raw(garbage, noise);
  EXPECT_TRUE(closed_by_peer(garbage, 1000ms));

  // After a valid hello: a key length prefix of 4 GiB - 1, and a value above the limit.
  for (uint32_t len : {0xFFFFFFFFu, 1025u}) {
    wire::Fd raw = raw_connect("127.0.0.1", server.port());
    send_raw(raw, hello_frame());
    Bytes frame = {wire::kSet, 2, 0, 0, 0};
    if (len == 0xFFFFFFFFu) {
      frame.insert(frame.end(), {0xFF, 0xFF, 0xFF, 0xFF});
    } else {
      frame.insert(frame.end(), {1, 0, 0, 0, 'k'});
      frame.insert(frame.end(), {uint8_t(len), uint8_t(len >> 8), 0, 0});
    }
    send_raw(raw, frame);
    EXPECT_TRUE(closed_by_peer(raw, 1000ms)) << len;
  }
  // Too many arguments for the opcode, and an unknown opcode.
  for (Bytes frame : {Bytes{wire::kRemove, 9, 0, 0, 0}, Bytes{0x7F, 0, 0, 0, 0}}) {
    wire::Fd raw = raw_connect("127.0.0.1", server.port());
    send_raw(raw, hello_frame());
    send_raw(raw, frame);
    EXPECT_TRUE(closed_by_peer(raw, 1000ms));
  }

  // Our own client refuses oversized input before sending it and stays connected.
  std::string msg = error_of([&] { good->set("big", Bytes(2000)); });
  EXPECT_NE(msg.find("2000 bytes, above the limit of 1024 bytes"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { good->set(std::string(65, 'k'), {}); }).find("above the limit of 64"),
            std::string::npos);
  EXPECT_EQ(to_string(good->get("before")), "1");
  auto late = client(server);
  late->set("after", to_bytes("2"));
  EXPECT_EQ(to_string(good->get("after")), "2");
}

TEST(TcpStore, ConnectionsBeforeTheirHelloAreBoundedInBytesTimeAndNumber) {
  TcpStoreServerOptions options;
  options.max_hello_bytes = 256;
  options.hello_timeout_ms = 300;
  options.max_unauthenticated = 4;
  TcpStoreServer server("127.0.0.1", 0, options);
  // A silent connection is dropped at its hello deadline.
  wire::Fd silent = raw_connect("127.0.0.1", server.port());
  EXPECT_TRUE(closed_by_peer(silent, 2000ms));
  // One that trickles a hello bigger than the pre-hello budget is dropped once over it.
  wire::Fd big = raw_connect("127.0.0.1", server.port());
  Bytes frame = {wire::kHello, 2, 0, 0, 0, 8, 0, 0, 0};
  frame.insert(frame.end(), 8, 0);
  frame.insert(frame.end(), {0x00, 0x10, 0, 0});  // a 4 KiB token follows
  frame.insert(frame.end(), 1024, 'x');
  send_raw(big, frame);
  EXPECT_TRUE(closed_by_peer(big, 1000ms));
  // Beyond max_unauthenticated pending connections, the oldest pending one gives way to each
  // new one; the rest still go when their deadline passes, and an honest client then gets in.
  std::vector<wire::Fd> pending;
  for (int i = 0; i < 4; ++i) {
    pending.push_back(raw_connect("127.0.0.1", server.port()));
    std::this_thread::sleep_for(10ms);  // accepted in this order
  }
  wire::Fd newest = raw_connect("127.0.0.1", server.port());
  EXPECT_TRUE(closed_by_peer(pending[0], 250ms));
  for (size_t i = 1; i < pending.size(); ++i) EXPECT_TRUE(closed_by_peer(pending[i], 2000ms));
  EXPECT_TRUE(closed_by_peer(newest, 2000ms));
  auto honest = client(server);
  honest->set("k", to_bytes("v"));
  EXPECT_EQ(to_string(honest->get("k")), "v");
}

// Points stderr at a pipe that nobody reads, full, for the object's life: a job whose output
// is piped into a stalled reader.
class StderrIntoAFullPipe {
 public:
  StderrIntoAFullPipe() {
    int fds[2];
    OFL_CHECK(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0, "pipe");
    read_end_.reset(fds[0]);
    wire::Fd write_end(fds[1]);
    std::vector<char> junk(4096, 'x');
    while (::write(write_end.get(), junk.data(), junk.size()) > 0) {
    }
    std::fflush(stderr);
    saved_.reset(::dup(STDERR_FILENO));
    ::dup2(write_end.get(), STDERR_FILENO);
    // Blocking again, as an inherited stderr is.
    ::fcntl(STDERR_FILENO, F_SETFL, ::fcntl(STDERR_FILENO, F_GETFL) & ~O_NONBLOCK);
  }
  ~StderrIntoAFullPipe() { ::dup2(saved_.get(), STDERR_FILENO); }

 private:
  wire::Fd read_end_, saved_;
};

TEST(TcpStore, RanksGetInDuringAndAfterAFloodOfAThousandConnections) {
  TcpStoreServerOptions options;
  options.max_unauthenticated = 64;
  TcpStoreServer server("127.0.0.1", 0, options);
  auto rank = client(server, "", 5000ms);
  rlimit files{};  // a thousand descriptors here and the server's, under a 1024 soft limit
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 4096 && files.rlim_max >= 4096) {
    files.rlim_cur = 4096;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  StderrIntoAFullPipe stalled_log;
  // A thousand connections that never say hello, held open.
  std::vector<wire::Fd> flood;
  for (int i = 0; i < 1000; ++i) {
    flood.push_back(raw_connect("127.0.0.1", server.port()));
    ASSERT_TRUE(flood.back().valid()) << "connection " << i << ": " << std::strerror(errno);
  }
  // The rank already connected is served, and a new one gets in.
  auto t0 = Clock::now();
  rank->set("during", to_bytes("1"));
  auto newcomer = client(server, "", 5000ms);
  EXPECT_EQ(to_string(newcomer->get("during")), "1");
  EXPECT_LT(Clock::now() - t0, 2000ms);
  // Once the flood has gone, at once.
  flood.clear();
  t0 = Clock::now();
  auto after = client(server, "", 5000ms);
  after->set("after", to_bytes("2"));
  EXPECT_EQ(to_string(rank->get("after")), "2");
  EXPECT_LT(Clock::now() - t0, 1000ms);
}

TEST(TcpStore, StoppingTheServerMakesABlockedGetRaise) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
  auto s = client(*server, "", 10000ms);
  auto start = Clock::now();
  auto blocked = std::async(std::launch::async, [&] { return error_of([&] { s->get("never"); }); });
  std::this_thread::sleep_for(100ms);
  server->stop();
  std::string msg = blocked.get();
  EXPECT_LT(Clock::now() - start, 2000ms);
  EXPECT_NE(msg.find("[store] lost the connection to the store at 127.0.0.1:"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("get('never')"), std::string::npos) << msg;
  // Later calls raise at once instead of writing to a dead socket (no SIGPIPE either).
  EXPECT_NE(error_of([&] { s->set("k", {}); }).find("closed after an earlier error"),
            std::string::npos);
}

TEST(TcpStore, CallsAfterTheServerIsGoneRaiseWithoutSigpipe) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
  auto s = client(*server);
  s->set("k", {});
  server.reset();
  // The first send may still succeed into the socket buffer; the reply never comes.
  std::string msg = error_of([&] { s->set("k", Bytes(1 << 20)); });
  EXPECT_NE(msg.find("lost the connection"), std::string::npos) << msg;
}

TEST(TcpStore, ServerBindsOnlyToTheGivenAddress) {
  auto other = non_loopback_ipv4();
  if (!other) GTEST_SKIP() << "this machine has only loopback";
  TcpStoreServer loopback("127.0.0.1", 0);
  EXPECT_FALSE(raw_connect(*other, loopback.port()).valid())
      << "a server on 127.0.0.1 answered on " << *other;
  EXPECT_TRUE(raw_connect("127.0.0.1", loopback.port()).valid());

  TcpStoreServer outward(*other, 0);
  EXPECT_FALSE(raw_connect("127.0.0.1", outward.port()).valid());
  auto s = client(outward);
  s->set("k", to_bytes("v"));
  EXPECT_EQ(to_string(s->get("k")), "v");
}

TEST(TcpStore, ServerOnEveryInterfaceIsReachableThroughLoopback) {
  std::shared_ptr<Store> store = make_tcp_store("0.0.0.0", 0, true, "", 2000ms);
  auto s = std::dynamic_pointer_cast<TcpStore>(store);
  ASSERT_TRUE(s);
  s->set("k", to_bytes("v"));
  EXPECT_TRUE(raw_connect("127.0.0.1", s->port()).valid());
  EXPECT_EQ(to_string(s->get("k")), "v");
}

TEST(TcpStore, MakeTcpStoreKeepsRankZerosServerAliveWithItsClient) {
  auto rank0 =
      std::dynamic_pointer_cast<TcpStore>(make_tcp_store("127.0.0.1", 0, true, "tok", 2000ms));
  ASSERT_TRUE(rank0);
  std::shared_ptr<Store> rank1 = make_tcp_store("127.0.0.1", rank0->port(), false, "tok", 2000ms);
  rank1->set("from1", to_bytes("x"));
  EXPECT_EQ(to_string(rank0->get("from1")), "x");
  EXPECT_EQ(rank0->timeout(), 2000ms);
  int port = rank0->port();
  rank0.reset();  // the server goes with rank 0's client
  EXPECT_FALSE(raw_connect("127.0.0.1", port).valid());
  EXPECT_NE(error_of([&] { rank1->check({"from1"}); }).find("lost the connection"),
            std::string::npos);
}
