// The device communicator: CPU tensors take the host backend (Gloo); device tensors take NCCL
// where every member has its own GPU, else Gloo through host copies. The shared checks of
// collective_checks.h run through it on CPU tensors here, and on CUDA tensors of ranks sharing
// one GPU (the host-staged fallback) where a GPU is visible.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "collective_checks.h"
#include "core/comm/device_communicator.h"
#include "core/comm/nccl/nccl_communicator.h"
#include "core/primitives.h"
#include "test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::comm;
using namespace ofl::internal::comm::checks;
using ofl::internal::comm::testing::kAllDTypes;
using ofl::internal::testing::error_of;

namespace {

// n ranks as threads, each with a device communicator over Gloo, meeting through one store.
void run_device_ranks(int n, const std::function<void(int, Communicator&)>& body,
                      const std::string& requested = "auto") {
  auto store = std::make_shared<MemoryStore>();
  comm::testing::run_ranks_with(
      n,
      [&](int r) {
        return make_device_communicator(
            make_gloo_communicator(store, r, n, "127.0.0.1", Millis(20000)), store, requested);
      },
      body);
}

// Every shared check, on b's tensors.
void check_every_collective(const Backend& b, Communicator& c) {
  check_all_reduce_every_op(b, c);
  check_all_reduce_avg(b, c);
  check_all_gather(b, c);
  check_all_gather_v(b, c, {DType::kBool, DType::kInt8, DType::kInt64, DType::kBFloat16});
  check_reduce_scatter(b, c);
  check_reduce_scatter_v(b, c);
  check_all_to_all(b, c, {DType::kBool, DType::kInt32, DType::kFloat16});
  check_all_to_all_v(b, c);
  for (int root = 0; root < c.size(); ++root) {
    check_broadcast(b, c, root, {DType::kBool, DType::kFloat32});
    check_reduce(b, c, root);
    check_gather(b, c, root, {DType::kInt64, DType::kFloat16});
    check_scatter(b, c, root, {DType::kInt64, DType::kFloat16}, {1, 0, 3, 2});
  }
}

int cuda_count() {
  DeviceRuntime* r = runtime_for(DeviceType::kCUDA);
  return r ? r->device_count() : 0;
}

Tensor to_cuda0(const Tensor& cpu, int) {
  Tensor t = Tensor::empty(cpu.shape(), cpu.dtype(), Device{DeviceType::kCUDA, 0});
  copy_into(t, cpu);
  return t;
}

Tensor to_cpu(const Tensor& t) {
  Tensor cpu = Tensor::empty(t.shape(), t.dtype());
  copy_into(cpu, t);
  return cpu;
}

// Every rank's tensors on cuda:0: NCCL cannot serve them, so they are staged through the host.
const Backend kSharedGpu = {[](int) { return Device{DeviceType::kCUDA, 0}; }, to_cuda0, to_cpu};

}  // namespace

TEST(DeviceComm, NcclServesOnlyWhenEveryMemberHasItsOwnGpu) {
  const std::vector<int> ranks = {0, 1, 2};
  const std::vector<std::string> own = {"h/0", "h/1", "g/0"}, shared = {"h/0", "h/1", "h/0"};
  EXPECT_EQ(choose_transport("auto", true, own, ranks), DeviceTransport::kNccl);
  EXPECT_EQ(choose_transport("nccl", true, own, ranks), DeviceTransport::kNccl);
  EXPECT_EQ(choose_transport("auto", true, shared, ranks), DeviceTransport::kHostStaged);
  EXPECT_EQ(choose_transport("gloo", true, own, ranks), DeviceTransport::kHostStaged);
  EXPECT_EQ(choose_transport("auto", false, own, ranks), DeviceTransport::kHostStaged);
}

TEST(DeviceComm, AskingForNcclWhereItCannotServeRaisesNamingWhy) {
  const std::vector<int> ranks = {4, 5, 6};
  const std::string shared = error_of([&] {
    choose_transport("nccl", true, {"h/0", "h/1", "h/0"}, ranks);
  });
  EXPECT_NE(shared.find("ranks 4 and 6 share the GPU h/0"), std::string::npos) << shared;
  const std::string unbuilt = error_of([&] { choose_transport("nccl", false, {"h/0"}, {0}); });
  EXPECT_NE(unbuilt.find("no NCCL"), std::string::npos) << unbuilt;
  const std::string unknown = error_of([&] { choose_transport("mpi", true, {"h/0"}, {0}); });
  EXPECT_NE(unknown.find("unknown device backend 'mpi'"), std::string::npos) << unknown;
}

TEST(DeviceComm, CpuTensorsRunEveryCollectiveThroughTheHostBackend) {
  run_device_ranks(3, [](int, Communicator& c) { check_every_collective(kCpu, c); });
}

TEST(DeviceComm, SubGroupsRouteLikeTheWorld) {
  run_device_ranks(4, [](int rank, Communicator& c) {
    if (rank == 1) return;
    auto g = c.group({0, 2, 3});
    EXPECT_EQ(g->name(), "group[0,2,3]");
    check_all_reduce_every_op(kCpu, *g);
    check_all_gather_v(kCpu, *g, {DType::kInt64});
  });
}

TEST(DeviceComm, StagedCommunicatorPassesCpuTensorsStraightThrough) {
  auto store = std::make_shared<MemoryStore>();
  comm::testing::run_ranks_with(
      2,
      [&](int r) {
        return make_host_staged_communicator(
            make_gloo_communicator(store, r, 2, "127.0.0.1", Millis(20000)));
      },
      [](int, Communicator& c) { check_every_collective(kCpu, c); });
}

TEST(DeviceComm, RanksSharingAGpuRunEveryCollectiveThroughHostStaging) {
  if (cuda_count() == 0) GTEST_SKIP() << "needs a CUDA device, this machine has none";
  run_device_ranks(3, [](int, Communicator& c) { check_every_collective(kSharedGpu, c); });
}

TEST(DeviceComm, RanksSharingAGpuRefuseNcclNamingTheRanks) {
  if (cuda_count() == 0) GTEST_SKIP() << "needs a CUDA device, this machine has none";
  run_device_ranks(
      2,
      [](int rank, Communicator& c) {
        Tensor t = kSharedGpu.make(DType::kFloat32, {1, 2}, rank);
        const std::string e = error_of([&] { c.all_reduce(t, ReduceOp::kSum); });
        EXPECT_NE(e.find("ranks 0 and 1 share the GPU"), std::string::npos) << e;
      },
      "nccl");
}

TEST(DeviceComm, ACollectiveMixingDevicesRaisesNamingThem) {
  run_device_ranks(2, [](int, Communicator& c) {
    Tensor cpu = Tensor::empty({4}, DType::kFloat32);
    Tensor meta = Tensor::empty({8}, DType::kFloat32, Device{DeviceType::kMeta, 0});
    const std::string e = error_of([&] { c.all_gather(cpu, meta); });
    EXPECT_NE(e.find("mixes a cpu and a meta tensor"), std::string::npos) << e;
  });
}

TEST(DeviceComm, ATimeoutSetOnTheWorldReachesTheHostBackend) {
  run_device_ranks(2, [](int rank, Communicator& c) {
    c.set_timeout(Millis(300));
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    const auto start = std::chrono::steady_clock::now();
    const std::string e = error_of([&] { c.barrier(); });
    if (rank == 0) {  // rank 1 is late: rank 0 gives up after 300 ms, not the default minutes
      EXPECT_FALSE(e.empty());
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
    }
  });
}

TEST(DeviceComm, PointToPointOnAGpuInvolvesOnlyThePair) {
  if (cuda_count() == 0) GTEST_SKIP() << "needs a CUDA device, this machine has none";
  for (int n : {2, 3})  // in a world of two, the world is the pair
    run_device_ranks(n, [](int rank, Communicator& c) {
      if (rank == 2) return;  // takes no part: choosing the pair's transport must not wait
      Tensor t = kSharedGpu.make(DType::kFloat32, {rank == 0 ? 5.0 : 0.0}, rank);
      if (rank == 0) c.send(t, 1);
      if (rank == 1) {
        c.recv(t, 0);
        EXPECT_EQ(kSharedGpu.values(t), (std::vector<double>{5.0}));
      }
    });
}
