#include "core/comm/device_communicator.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/comm/nccl/nccl_communicator.h"
#include "core/error.h"
#include "core/primitives.h"

namespace ofl::internal::comm {

const char* transport_name(DeviceTransport t) {
  return t == DeviceTransport::kNccl ? "nccl" : "gloo with host staging";
}

DeviceTransport choose_transport(const std::string& requested, bool nccl_built,
                                 const std::vector<std::string>& devices,
                                 const std::vector<int>& ranks) {
  if (requested != "auto" && requested != "nccl" && requested != "gloo")
    fail("init_process_group", "unknown device backend '", requested,
         "' (expected auto, nccl or gloo)");
  if (requested == "gloo") return DeviceTransport::kHostStaged;
  std::map<std::string, int> first_on;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto [at, fresh] = first_on.emplace(devices[i], ranks[i]);
    if (fresh) continue;
    if (requested == "auto") return DeviceTransport::kHostStaged;
    fail("nccl init", "ranks ", at->second, " and ", ranks[i], " share the GPU ", devices[i],
         ": NCCL needs one GPU per rank (use the gloo backend to share one)");
  }
  if (nccl_built) return DeviceTransport::kNccl;
  if (requested == "nccl")
    fail("nccl init", "this build has no NCCL; rebuild with ONEFLOWLIKE_BUILD_CUDA=ON or use gloo");
  return DeviceTransport::kHostStaged;
}

namespace {

bool on_host(const Tensor& t) {
  return !t.defined() || t.device().type == DeviceType::kCPU;
}

// t itself on the host, else a host copy of it.
Tensor to_host(const Tensor& t) {
  if (on_host(t)) return t;
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  copy_into(host, t);
  return host;
}

// An uninitialised host buffer for an output (t itself on the host).
Tensor host_buffer(const Tensor& t) {
  return on_host(t) ? t : Tensor::empty(t.shape(), t.dtype());
}

void copy_back(const Tensor& t, const Tensor& host) {
  if (!on_host(t)) copy_into(t, host);
}

// Device tensors through host copies: every collective runs on the host communicator.
class HostStagedCommunicator : public Communicator {
 public:
  explicit HostStagedCommunicator(std::shared_ptr<Communicator> host)
      : Communicator(host->rank(), host->ranks(), host->name()), host_(std::move(host)) {
    timeout_ = host_->timeout();
  }

  void all_reduce(Tensor& t, ReduceOp op) override {
    in_place(t, [&](Tensor& h) { host_->all_reduce(h, op); });
  }
  void all_gather(const Tensor& in, Tensor& out) override {
    out_of(out, [&](Tensor& h) { host_->all_gather(to_host(in), h); });
  }
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) override {
    out_of(out, [&](Tensor& h) { host_->all_gather_v(to_host(in), h, counts); });
  }
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
    out_of(out, [&](Tensor& h) { host_->reduce_scatter(to_host(in), h, op); });
  }
  void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                        ReduceOp op) override {
    out_of(out, [&](Tensor& h) { host_->reduce_scatter_v(to_host(in), h, counts, op); });
  }
  void all_to_all(const Tensor& in, Tensor& out) override {
    out_of(out, [&](Tensor& h) { host_->all_to_all(to_host(in), h); });
  }
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts, Tensor& out,
                    const std::vector<int64_t>& recv_counts) override {
    out_of(out, [&](Tensor& h) { host_->all_to_all_v(to_host(in), send_counts, h, recv_counts); });
  }
  void broadcast(Tensor& t, int root) override {
    in_place(t, [&](Tensor& h) { host_->broadcast(h, root); });
  }
  void reduce(Tensor& t, int root, ReduceOp op) override {
    in_place(t, [&](Tensor& h) { host_->reduce(h, root, op); });
  }
  void gather(const Tensor& in, Tensor& out, int root,
              const std::vector<int64_t>& counts) override {
    out_of(out, [&](Tensor& h) { host_->gather(to_host(in), h, root, counts); });
  }
  void scatter(const Tensor& in, Tensor& out, int root,
               const std::vector<int64_t>& counts) override {
    out_of(out, [&](Tensor& h) { host_->scatter(to_host(in), h, root, counts); });
  }
  void send(const Tensor& t, int dst, int tag) override { host_->send(to_host(t), dst, tag); }
  void recv(Tensor& t, int src, int tag) override {
    out_of(t, [&](Tensor& h) { host_->recv(h, src, tag); });
  }
  void barrier() override { host_->barrier(); }
  void set_timeout(Millis t) override {
    timeout_ = t;
    host_->set_timeout(t);
  }

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>& members, int,
                                           const std::string&) override {
    return std::make_shared<HostStagedCommunicator>(host_->group(members));
  }

 private:
  template <class F>
  void in_place(Tensor& t, F&& run) {
    Tensor h = to_host(t);
    run(h);
    copy_back(t, h);
  }
  template <class F>
  void out_of(Tensor& out, F&& run) {
    Tensor h = host_buffer(out);
    run(h);
    copy_back(out, h);
  }

  std::shared_ptr<Communicator> host_;
};

// "host/bus id" of the GPU `device` is.
std::string gpu_name(Device device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  DeviceRuntime* runtime = runtime_for(device.type);
  if (!runtime)
    fail("communicate", "this build has no ", device_type_name(device.type), " runtime");
  return str_cat(host, "/", runtime->bus_id(device.index));
}

// The members' GPU names, gathered over `host` as fixed-width byte strings.
std::vector<std::string> exchange_gpu_names(Communicator& host, const std::string& mine) {
  constexpr int64_t kWidth = 320;
  Tensor in = Tensor::empty({kWidth}, DType::kUInt8),
         out = Tensor::empty({kWidth * host.size()}, DType::kUInt8);
  auto* bytes = static_cast<char*>(in.raw_data());
  std::fill(bytes, bytes + kWidth, '\0');
  std::copy_n(mine.data(), std::min<int64_t>(int64_t(mine.size()), kWidth - 1), bytes);
  host.all_gather(in, out);
  std::vector<std::string> names;
  const auto* all = static_cast<const char*>(out.raw_data());
  for (int r = 0; r < host.size(); ++r) names.emplace_back(all + r * kWidth);
  return names;
}

// CPU calls to the host backend; device calls to the transport chosen at the first of them.
class DeviceCommunicator : public Communicator {
 public:
  DeviceCommunicator(std::shared_ptr<Communicator> host, std::shared_ptr<Store> store,
                     std::string prefix, std::string requested)
      : Communicator(host->rank(), host->ranks(), host->name()),
        host_(std::move(host)),
        store_(std::move(store)),
        prefix_(std::move(prefix)),
        requested_(std::move(requested)) {
    timeout_ = host_->timeout();
  }

  void all_reduce(Tensor& t, ReduceOp op) override { pick(t).all_reduce(t, op); }
  void all_gather(const Tensor& in, Tensor& out) override { pick(in, out).all_gather(in, out); }
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) override {
    pick(in, out).all_gather_v(in, out, counts);
  }
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
    pick(in, out).reduce_scatter(in, out, op);
  }
  void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                        ReduceOp op) override {
    pick(in, out).reduce_scatter_v(in, out, counts, op);
  }
  void all_to_all(const Tensor& in, Tensor& out) override { pick(in, out).all_to_all(in, out); }
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts, Tensor& out,
                    const std::vector<int64_t>& recv_counts) override {
    pick(in, out).all_to_all_v(in, send_counts, out, recv_counts);
  }
  void broadcast(Tensor& t, int root) override { pick(t).broadcast(t, root); }
  void reduce(Tensor& t, int root, ReduceOp op) override { pick(t).reduce(t, root, op); }
  void gather(const Tensor& in, Tensor& out, int root,
              const std::vector<int64_t>& counts) override {
    pick(in, out).gather(in, out, root, counts);
  }
  void scatter(const Tensor& in, Tensor& out, int root,
               const std::vector<int64_t>& counts) override {
    pick(in, out).scatter(in, out, root, counts);
  }
  // Device tensors go point to point through the pair's own group (or this group when it is the
  // pair), so that choosing its transport involves only the two ranks that take part.
  void send(const Tensor& t, int dst, int tag) override {
    if (on_host(t)) return host_->send(t, dst, tag);
    check_peer("send", *this, dst, "destination");
    if (size() == 2 && dst != rank()) return pick(t).send(t, dst, tag);
    pair_with(dst).send(t, dst < rank() ? 0 : 1, tag);
  }
  void recv(Tensor& t, int src, int tag) override {
    if (on_host(t)) return host_->recv(t, src, tag);
    check_peer("recv", *this, src, "source");
    if (size() == 2 && src != rank()) return pick(t).recv(t, src, tag);
    pair_with(src).recv(t, src < rank() ? 0 : 1, tag);
  }
  void barrier() override { host_->barrier(); }
  void set_timeout(Millis t) override {
    timeout_ = t;
    host_->set_timeout(t);
    std::lock_guard<std::mutex> lock(mu_);
    if (device_) device_->set_timeout(t);
  }

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>& members, int,
                                           const std::string& name) override {
    return std::make_shared<DeviceCommunicator>(host_->group(members), store_, prefix_ + "/" + name,
                                                requested_);
  }

 private:
  // The group of this rank and `peer` alone (in a larger group).
  Communicator& pair_with(int peer) {
    if (peer == rank())
      fail("send", "rank ", ranks()[size_t(peer)], " sends to itself in ", name());
    const int lo = std::min(peer, rank()), hi = std::max(peer, rank());
    return *group({ranks()[size_t(lo)], ranks()[size_t(hi)]});
  }

  // Every member passes tensors on one device type (outputs where inputs are), so all pick alike.
  Communicator& pick(const Tensor& a, const Tensor& b = Tensor()) {
    if (a.defined() && b.defined() && a.device().type != b.device().type)
      fail("communicate", "a collective over ", name(), " mixes a ", a.device().str(), " and a ",
           b.device().str(), " tensor");
    const Tensor& on_device = !on_host(a) ? a : b;
    if (on_host(on_device)) return *host_;
    std::lock_guard<std::mutex> lock(mu_);
    if (!device_) device_ = make_transport(on_device.device());
    return *device_;
  }

  std::shared_ptr<Communicator> make_transport(Device device) {
    const std::vector<std::string> gpus = exchange_gpu_names(*host_, gpu_name(device));
    const DeviceTransport t = choose_transport(requested_, nccl_built(), gpus, ranks());
    if (t == DeviceTransport::kHostStaged) return make_host_staged_communicator(host_);
    return make_nccl_group(store_, prefix_, rank(), ranks(), name(), device.index, timeout());
  }

  std::shared_ptr<Communicator> host_;
  std::shared_ptr<Store> store_;
  std::string prefix_, requested_;
  std::mutex mu_;
  std::shared_ptr<Communicator> device_;
};

}  // namespace

std::shared_ptr<Communicator> make_host_staged_communicator(std::shared_ptr<Communicator> host) {
  return std::make_shared<HostStagedCommunicator>(std::move(host));
}

std::shared_ptr<Communicator> make_device_communicator(std::shared_ptr<Communicator> host,
                                                       std::shared_ptr<Store> store,
                                                       std::string requested) {
  // Each world on one store gets its own keys; every rank counts its own worlds.
  const int64_t generation = store->add(str_cat("device_comm/worlds/", host->rank()), 1);
  return std::make_shared<DeviceCommunicator>(std::move(host), std::move(store),
                                              str_cat("device_comm/world", generation),
                                              std::move(requested));
}

}  // namespace ofl::internal::comm
