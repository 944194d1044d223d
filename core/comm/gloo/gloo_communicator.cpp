// The Gloo communicator's life cycle: rendezvous through our Store, sub-groups, and turning
// Gloo failures into errors that name the group, the collective and the ranks that are missing.
#include "core/comm/gloo/gloo_communicator.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <sstream>

#include "core/comm/gloo/gloo_impl.h"
#include "core/error.h"

namespace ofl::internal::comm {
namespace gloo_detail {
namespace {

// Gloo's rendezvous::Store over ours; every wait is bounded by the communicator's timeout.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(std::shared_ptr<comm::Store> store, Millis timeout)
      : store_(std::move(store)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    store_->wait({key}, timeout_);
    Bytes b = store_->get(key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_->wait(keys, t);
  }

 private:
  std::shared_ptr<comm::Store> store_;
  Millis timeout_;
};

std::string seconds(Millis t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", t.count() / 1000.0);
  return buf;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  os << "]";
  return os.str();
}

bool mentions_timeout(const std::string& what) {
  std::string s = what;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s.find("timed out") != std::string::npos || s.find("timeout") != std::string::npos;
}

}  // namespace

namespace {

// Gloo's TCP transport writes with writev, which cannot ask for MSG_NOSIGNAL: a write to a peer
// that died raises SIGPIPE, whose default action ends the process before the write's EPIPE can
// be reported as a lost connection. A process that left SIGPIPE at its default (C++ programs;
// Python already ignores it) ignores it from its first communicator on.
void ignore_sigpipe_by_default() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      ::signal(SIGPIPE, SIG_IGN);
  });
}

}  // namespace

GlooCommunicator::GlooCommunicator(const char* op, std::shared_ptr<GlooWorld> world, int my_index,
                                   std::vector<int> ranks, std::string name, Millis timeout)
    : Communicator(my_index, std::move(ranks), std::move(name)), world_(std::move(world)) {
  set_timeout(timeout);
  ignore_sigpipe_by_default();
  check_calls_ = call_check_from_env();
  const char* direct = std::getenv("OFL_COMM_DIRECT_RANKS");
  direct_ranks_ = direct ? std::atoi(direct) : 8;
  // Each rank numbers its own communicators of one name; SPMD ranks create them in the same
  // order, so equal numbers meet and a re-created group never reads a stale address.
  const int64_t instance =
      world_->store->add(str_cat("gloo/", name_, "/instances/", ranks_[rank_]), 1);
  store_ = std::make_shared<PrefixStore>(str_cat("gloo/", name_, "/", instance), world_->store);
  auto rendezvous = std::make_shared<PrefixStore>("connect", store_);
  ctx_ = std::make_shared<gloo::rendezvous::Context>(rank_, size());
  ctx_->setTimeout(timeout);
  StoreAdapter adapter(rendezvous, timeout);
  try {
    ctx_->connectFullMesh(adapter, world_->device);
  } catch (const std::exception& e) {
    // connectFullMesh publishes each rank's addresses under its group index.
    std::vector<int> missing;
    try {
      for (int i = 0; i < size(); ++i)
        if (!rendezvous->check({std::to_string(i)})) missing.push_back(ranks_[i]);
    } catch (const std::exception&) {
    }
    if (!missing.empty())
      fail(op, "rendezvous of ", name_, " (", size(), " ranks) timed out after ", seconds(timeout),
           " s; ranks that did not arrive: ", rank_list(missing));
    fail(op, "connecting ", name_, " (", size(), " ranks) failed: ", e.what());
  }
}

GlooCommunicator::~GlooCommunicator() = default;

std::shared_ptr<Communicator> GlooCommunicator::make_group(const std::vector<int>& members,
                                                           int my_index, const std::string& name) {
  return std::make_shared<GlooCommunicator>("new_group", world_, my_index, members, name,
                                            timeout());
}

void GlooCommunicator::check_usable(const char* op) const {
  if (!broken_.empty())
    fail(op, "on ", name_, ": the communicator is unusable after an earlier failure (", broken_,
         "); create a new one");
}

void GlooCommunicator::check_cpu(const char* op, const Tensor& t) const {
  check_tensor(op, *this, t);
  if (t.device().type != DeviceType::kCPU)
    fail(op, "the Gloo backend needs CPU tensors, got ", t.str(), " on ", t.device().str(), " in ",
         name_);
}

void GlooCommunicator::check_same_dtype(const char* op, const Tensor& in, const Tensor& out) const {
  if (in.dtype() != out.dtype())
    fail(op, "input ", in.str(), " and output ", out.str(), " differ in dtype on ", name_);
}

std::unique_ptr<gloo::transport::UnboundBuffer> GlooCommunicator::buffer(const void* p,
                                                                         size_t nbytes) {
  // Gloo only reads from buffers it sends; the const_cast never leads to a write.
  return ctx_->createUnboundBuffer(const_cast<void*>(p), nbytes);
}

void GlooCommunicator::wait_recv(gloo::transport::UnboundBuffer& b, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  if (!b.waitRecv(std::max(left, Millis(1)))) throw gloo::IoException("receive aborted");
}

void GlooCommunicator::wait_send(gloo::transport::UnboundBuffer& b, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  if (!b.waitSend(std::max(left, Millis(1)))) throw gloo::IoException("send aborted");
}

void GlooCommunicator::collective(const CallSignature& call, const std::function<void()>& body) {
  const char* op = call.op;
  check_usable(op);
  const uint64_t seq = ++seq_;
  ctx_->setTimeout(timeout());
  try {
    if (check_calls_ == CallCheck::kAll ||
        (check_calls_ == CallCheck::kUnplanned && !PlannedCollectives::active()))
      check_same_call(call);
    body();
  } catch (const gloo::Exception& e) {  // IoException included: timeouts and lost peers
    collective_failed(op, seq, e.what());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // gloo::EnforceNotMet and the like: state unknown
    broken_ = e.what();
    fail(op, "on ", name_, ": Gloo rejected the call (", e.what(), ")");
  }
}

void GlooCommunicator::point_to_point(const char* op, int peer, int tag,
                                      const std::function<void()>& body) {
  check_usable(op);
  ctx_->setTimeout(timeout());
  try {
    body();
  } catch (const gloo::Exception& e) {
    broken_ = e.what();
    close_connections();
    std::string who = str_cat("rank ", peer);
    if (ranks_[peer] != peer) who += str_cat(" (global rank ", ranks_[peer], ")");
    if (mentions_timeout(e.what()))
      fail(op, "on ", name_, ": ", who, " did not ", std::string(op) == "send" ? "receive" : "send",
           " tag ", tag, " within ", seconds(timeout()), " s");
    fail(op, "on ", name_, ": lost connection to ", who, " (", e.what(), ")");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // gloo::EnforceNotMet and the like: state unknown
    broken_ = e.what();
    fail(op, "on ", name_, ": Gloo rejected the call (", e.what(), ")");
  }
}

void GlooCommunicator::close_connections() noexcept {
  try {
    ctx_->closeConnections();
  } catch (const std::exception&) {  // already closed by the failure itself
  }
}

void GlooCommunicator::collective_failed(const char* op, uint64_t seq, const std::string& what) {
  const bool timed_out = mentions_timeout(what);
  broken_ = what;
  // Peers blocked on this rank see the failure now instead of at their own timeout.
  close_connections();
  // Every rank that fails publishes how far it got; a rank with no key or an older number never
  // arrived at this collective. Healthy ranks usually publish within the grace period.
  auto key = [](int i) { return str_cat("progress/", i); };
  std::vector<std::string> keys;
  for (int i = 0; i < size(); ++i) keys.push_back(key(i));
  bool any_timed_out = timed_out;
  std::vector<int> missing;
  try {
    store_->set(key(rank_), to_bytes(str_cat(seq, timed_out ? " timeout" : " closed")));
    try {
      store_->wait(keys, std::min(Millis(2000), timeout()));
    } catch (const Error&) {  // some rank never reported; the checks below find which
    }
    for (int i = 0; i < size(); ++i) {
      if (i == rank_) continue;
      if (!store_->check({key(i)})) {
        missing.push_back(ranks_[i]);
        continue;
      }
      std::istringstream in(to_string(store_->get(key(i))));
      uint64_t their_seq = 0;
      std::string kind;
      in >> their_seq >> kind;
      if (their_seq < seq) missing.push_back(ranks_[i]);
      if (their_seq == seq && kind == "timeout") any_timed_out = true;
    }
  } catch (const std::exception& e) {
    fail(op, "on ", name_, " (", size(), " ranks) ", timed_out ? "timed out" : "lost a peer", " (",
         what, "); the store could not tell which ranks did not arrive: ", e.what());
  }
  // A rank whose peer timed out sees only a closed connection; the peer's report says why.
  if (any_timed_out) {
    if (missing.empty())
      fail(op, "on ", name_, " (", size(), " ranks) timed out after ", seconds(timeout()),
           " s; every rank arrived (", what, ")");
    fail(op, "on ", name_, " (", size(), " ranks) timed out after ", seconds(timeout()),
         " s; ranks that did not arrive: ", rank_list(missing));
  }
  if (missing.empty()) fail(op, "on ", name_, ": lost connection to a peer (", what, ")");
  fail(op, "on ", name_, ": lost connection to a peer (", what,
       "); ranks that did not arrive: ", rank_list(missing));
}

}  // namespace gloo_detail

std::shared_ptr<Communicator> make_gloo_communicator(std::shared_ptr<Store> store, int rank,
                                                     int size, const std::string& host,
                                                     Millis timeout) {
  const char* op = "make_gloo_communicator";
  if (!store) fail(op, "needs a store");
  if (size < 1) fail(op, "world size must be at least 1, got ", size);
  if (rank < 0 || rank >= size) fail(op, "rank ", rank, " is out of range for world size ", size);
  if (timeout.count() <= 0) fail(op, "timeout must be positive, got ", timeout.count(), " ms");
  auto world = std::make_shared<gloo_detail::GlooWorld>();
  world->store = std::move(store);
  gloo::transport::tcp::attr attr;
  attr.hostname = host;
  try {
    world->device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    fail(op, "cannot listen on host '", host, "': ", e.what());
  }
  std::vector<int> ranks(size);
  std::iota(ranks.begin(), ranks.end(), 0);
  return std::make_shared<gloo_detail::GlooCommunicator>(op, std::move(world), rank,
                                                         std::move(ranks), "world", timeout);
}

}  // namespace ofl::internal::comm
