// The NCCL communicator with ranks as threads of one process, rank r on cuda:r, running the
// shared checks of collective_checks.h on CUDA tensors. Compiled only in CUDA builds; every test
// skips with its reason where the machine has too few GPUs (a world of one needs one GPU, the
// multi-rank cases two or more: NCCL cannot put two ranks on one device).
#ifdef ONEFLOWLIKE_WITH_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>

#include "collective_checks.h"
#include "core/comm/nccl/nccl_api.h"
#include "core/comm/nccl/nccl_communicator.h"
#include "core/stream.h"
#include "test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::comm;
using namespace ofl::internal::comm::checks;
using ofl::internal::comm::testing::kAllDTypes;
using ofl::internal::testing::error_of;

namespace {

int gpu_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define NEED_GPUS(n)                                                                        \
  do {                                                                                      \
    if (gpu_count() < (n))                                                                  \
      GTEST_SKIP() << "needs " << (n) << " CUDA devices, this machine has " << gpu_count(); \
  } while (0)

// The multi-rank tests use every GPU up to four.
int multi() {
  return std::min(gpu_count(), 4);
}

Tensor to_gpu(const Tensor& cpu, int device) {
  Tensor t = Tensor::empty(cpu.shape(), cpu.dtype(), Device{DeviceType::kCUDA, device});
  size_t bytes = cpu.numel() * itemsize(cpu.dtype());
  if (bytes) {
    EXPECT_EQ(cudaMemcpy(t.raw_data(), cpu.raw_data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  return t;
}

Tensor to_cpu(const Tensor& t) {
  Tensor cpu = Tensor::empty(t.shape(), t.dtype());
  size_t bytes = t.numel() * itemsize(t.dtype());
  if (bytes) {
    EXPECT_EQ(cudaMemcpy(cpu.raw_data(), t.raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return cpu;
}

// Rank r's tensors on cuda:r, staged through the CPU.
const Backend kCuda = {[](int rank) { return Device{DeviceType::kCUDA, rank}; }, to_gpu, to_cpu};

Tensor make(DType dt, const std::vector<double>& v, int device) {
  return kCuda.make(dt, v, device);
}

Tensor empty(int64_t n, DType dt, int device) {
  return kCuda.empty(n, dt, device);
}

std::vector<double> values(const Tensor& t) {
  return kCuda.values(t);
}

// Calls body(rank, communicator) on n threads, rank r on cuda:r; exceptions fail the test.
void run_ranks(int n, const std::function<void(int, Communicator&)>& body,
               Millis timeout = Millis(60000)) {
  auto store = std::make_shared<MemoryStore>();
  store->set_timeout(timeout);
  comm::testing::run_ranks_with(
      n,
      [&](int r) {
        cudaSetDevice(r);  // the test's own copies run on this rank's GPU, not behind cuda:0's
        return make_nccl_communicator(store, r, n, r, timeout);
      },
      body);
}

}  // namespace

// ---- a world of one rank (one GPU) ----

// NCCL is loaded by name on first use, not linked (nccl_api.h): here, without a GPU too, the
// library loads and has every function the backend calls, of a version at least the headers'.
TEST(NcclLibrary, LoadsOnFirstUseWithEveryFunctionTheBackendCalls) {
  const nccl_detail::NcclApi& api = nccl_detail::nccl_lib();
#define OFL_EXPECT_LOADED(name) EXPECT_NE(api.name, nullptr) << "nccl" #name;
  OFL_NCCL_FUNCTIONS(OFL_EXPECT_LOADED)
#undef OFL_EXPECT_LOADED
  EXPECT_STREQ(api.GetErrorString(ncclSuccess), "no error");  // a call into it
  EXPECT_EQ(&nccl_detail::nccl_lib(), &api);                  // loaded once
}

TEST(Nccl, WorldOfOneRankRunsEveryCollectiveOnItsGpu) {
  NEED_GPUS(1);
  run_ranks(1, [&](int, Communicator& c) {
    EXPECT_EQ(c.size(), 1);
    EXPECT_EQ(c.name(), "world");
    for (DType dt : kAllDTypes)
      for (ReduceOp op :
           {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
        if (op == ReduceOp::kAvg && dt == DType::kBool) continue;
        Tensor t = make(dt, inputs(op, dt, 0, 5), 0);
        c.all_reduce(t, op);
        EXPECT_EQ(values(t), inputs(op, dt, 0, 5)) << dtype_name(dt) << " " << reduce_op_name(op);
      }
    Tensor t = make(DType::kFloat32, {1, 2}, 0);
    Tensor out = empty(2, DType::kFloat32, 0);
    c.all_gather(t, out);
    c.all_gather_v(t, out, {2});
    c.reduce_scatter(t, out, ReduceOp::kSum);
    c.reduce_scatter_v(t, out, {2}, ReduceOp::kSum);
    c.all_to_all(t, out);
    c.all_to_all_v(t, {2}, out, {2});
    c.gather(t, out, 0, {2});
    c.gather(t, out, 0);
    c.scatter(t, out, 0);
    c.scatter(t, out, 0, {2});
    c.broadcast(t, 0);
    c.reduce(t, 0, ReduceOp::kMax);
    c.barrier();
    EXPECT_EQ(values(out), (std::vector<double>{1, 2}));
    Tensor none = empty(0, DType::kFloat32, 0);
    c.all_reduce(none, ReduceOp::kSum);
  });
}

TEST(Nccl, RunsOnTheCurrentStreamAndWaitsForIt) {
  NEED_GPUS(1);
  run_ranks(1, [&](int, Communicator& c) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    {
      StreamGuard guard(Stream{Device{DeviceType::kCUDA, 0}, s});
      Tensor t = make(DType::kFloat32, std::vector<double>(1000, 3.0), 0);
      c.all_reduce(t, ReduceOp::kSum);
      EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
      EXPECT_EQ(values(t), std::vector<double>(1000, 3.0));
    }
    cudaStreamDestroy(s);
  });
}

TEST(Nccl, SubGroupOfOneIsCachedAndWorks) {
  NEED_GPUS(1);
  run_ranks(1, [&](int, Communicator& c) {
    auto g = c.group({0});
    EXPECT_EQ(g, c.group({0}));
    Tensor t = make(DType::kFloat32, {4}, 0);
    g->all_reduce(t, ReduceOp::kSum);
    EXPECT_EQ(values(t), (std::vector<double>{4}));
  });
}

TEST(Nccl, BadArgumentsRaiseNamingTheCollectiveAndGroup) {
  NEED_GPUS(1);
  run_ranks(1, [&](int, Communicator& c) {
    Tensor cpu = Tensor::empty({3}, DType::kFloat32);
    std::string msg = error_of([&] { c.all_reduce(cpu, ReduceOp::kSum); });
    EXPECT_NE(msg.find("[all_reduce] tensor (3,) float32 is on cpu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("world serves cuda:0"), std::string::npos) << msg;

    Tensor t = empty(4, DType::kFloat32, 0);
    Tensor strided = Tensor::view_of(t.storage(), {2, 2}, {1, 2}, 0, DType::kFloat32);
    msg = error_of([&] { c.broadcast(strided, 0); });
    EXPECT_NE(msg.find("[broadcast] needs a contiguous tensor"), std::string::npos) << msg;
    msg = error_of([&] { c.send(t, 0); });
    EXPECT_NE(msg.find("[send] rank 0 cannot send to itself"), std::string::npos) << msg;
    msg = error_of([&] { c.broadcast(t, 1); });
    EXPECT_NE(msg.find("[broadcast] root 1 is out of range"), std::string::npos) << msg;
    Tensor small = empty(3, DType::kFloat32, 0);
    msg = error_of([&] { c.all_gather(t, small); });
    EXPECT_NE(msg.find("[all_gather] output (3,) float32 must hold 1 x 4"), std::string::npos)
        << msg;
    msg = error_of([&] { c.all_gather_v(t, t, {3}); });
    EXPECT_NE(msg.find("[all_gather_v] counts sum to 3"), std::string::npos) << msg;
    Tensor ints = empty(4, DType::kInt32, 0);
    msg = error_of([&] { c.all_to_all(t, ints); });
    EXPECT_NE(msg.find("differ in dtype"), std::string::npos) << msg;
    Tensor flags = make(DType::kBool, {1, 0}, 0);
    msg = error_of([&] { c.all_reduce(flags, ReduceOp::kAvg); });
    EXPECT_NE(msg.find("[all_reduce] avg of a bool tensor is undefined"), std::string::npos) << msg;
  });
}

TEST(Nccl, AMissingDeviceRaisesAtCreation) {
  NEED_GPUS(1);
  auto store = std::make_shared<MemoryStore>();
  std::string msg = error_of([&] { make_nccl_communicator(store, 0, 1, gpu_count()); });
  EXPECT_NE(msg.find("[nccl init] cuda:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
}

TEST(Nccl, WithoutAGpuCreationRaisesInsteadOfCrashing) {
  if (gpu_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  auto store = std::make_shared<MemoryStore>();
  std::string msg = error_of([&] { make_nccl_communicator(store, 0, 1, 0); });
  EXPECT_NE(msg.find("[nccl init]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("world"), std::string::npos) << msg;
}

// ---- several GPUs: rank r on cuda:r ----

TEST(Nccl, AllReduceAppliesEveryOpToEveryDtype) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    check_all_reduce_every_op(kCuda, c);
    check_all_reduce_avg(kCuda, c);
  });
}

TEST(Nccl, AllGatherAndAllGatherVPlaceBlocksInRankOrder) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    check_all_gather(kCuda, c);
    check_all_gather_v(kCuda, c, {DType::kBool, DType::kInt8, DType::kInt64, DType::kBFloat16});
  });
}

TEST(Nccl, ReduceScatterAndReduceScatterVReduceEachRanksBlock) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    check_reduce_scatter(kCuda, c);
    check_reduce_scatter_v(kCuda, c);
  });
}

TEST(Nccl, AllToAllAndAllToAllVRouteBlocksIncludingInPlace) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    check_all_to_all(kCuda, c, {DType::kBool, DType::kInt8, DType::kInt32, DType::kFloat16});
    check_all_to_all_v(kCuda, c);
  });
}

TEST(Nccl, BroadcastAndReduceFromEveryRoot) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    for (int root = 0; root < c.size(); ++root) {
      check_broadcast(kCuda, c, root, {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16});
      check_reduce(kCuda, c, root);
    }
  });
}

TEST(Nccl, GatherAndScatterEqualAndUnevenBlocks) {
  NEED_GPUS(2);
  run_ranks(multi(), [&](int, Communicator& c) {
    const std::vector<DType> dts = {DType::kBool, DType::kUInt8, DType::kInt32, DType::kFloat64};
    for (int root = 0; root < c.size(); ++root) {
      check_gather(kCuda, c, root, dts);
      check_scatter(kCuda, c, root, dts, {1, 3, 0, 2});
    }
  });
}

TEST(Nccl, SendRecvArriveInOrderPerPeer) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    // NCCL has no tags: consecutive messages on one pair arrive in the order sent.
    if (rank == 0) {
      c.send(make(DType::kBool, {1, 0}, rank), 1, 1);
      c.send(make(DType::kInt8, {-5}, rank), 1, 2);
      c.send(empty(0, DType::kFloat32, rank), 1, 3);
    } else if (rank == 1) {
      Tensor a = empty(2, DType::kBool, rank), b = empty(1, DType::kInt8, rank);
      Tensor none = empty(0, DType::kFloat32, rank);
      c.recv(a, 0, 1);
      c.recv(b, 0, 2);
      c.recv(none, 0, 3);
      EXPECT_EQ(values(a), (std::vector<double>{1, 0}));
      EXPECT_EQ(values(b), (std::vector<double>{-5}));
    }
    // A ring: rank 0 sends first, the others receive first, so nobody waits on a cycle.
    Tensor out = make(DType::kFloat64, {double(rank)}, rank), in = empty(1, DType::kFloat64, rank);
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    if (rank == 0) {
      c.send(out, next);
      c.recv(in, prev);
    } else {
      c.recv(in, prev);
      c.send(out, next);
    }
    EXPECT_EQ(values(in), (std::vector<double>{double(prev)}));
  });
}

TEST(Nccl, BarrierReturnsOnlyAfterEveryRankArrives) {
  NEED_GPUS(2);
  using Clock = std::chrono::steady_clock;
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    c.barrier();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * rank));
    c.barrier();
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(100 * (n - 1) - 10));
  });
}

TEST(Nccl, SubGroupIsCollectiveOverItsMembersOnly) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    if (rank != 0 && rank != n - 1) return;
    auto g = c.group({n - 1, 0});
    EXPECT_EQ(g, c.group({n - 1, 0}));
    EXPECT_EQ(g->size(), 2);
    EXPECT_EQ(g->rank(), rank == 0 ? 1 : 0);
    Tensor t = make(DType::kFloat32, {double(rank)}, rank);
    g->all_reduce(t, ReduceOp::kSum);
    EXPECT_EQ(values(t), (std::vector<double>{double(n - 1)}));
  });
}

TEST(Nccl, ARankThatNeverArrivesTimesOutNamingItAndAbortsTheCommunicator) {
  NEED_GPUS(2);
  int n = multi();
  std::vector<std::string> msgs(n);
  const auto t0 = std::chrono::steady_clock::now();
  run_ranks(
      n,
      [&](int rank, Communicator& c) {
        if (rank == n - 1) return;  // never reaches the all_reduce
        Tensor t = make(DType::kFloat32, {1}, rank);
        msgs[rank] = error_of([&] { c.all_reduce(t, ReduceOp::kSum); });
        std::string again = error_of([&] { c.barrier(); });
        EXPECT_NE(again.find("[barrier] the NCCL communicator for world was aborted"),
                  std::string::npos)
            << again;
      },
      Millis(2000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  for (int r = 0; r < n - 1; ++r) {
    EXPECT_NE(msgs[r].find("[all_reduce] timed out after 2 s on world"), std::string::npos)
        << msgs[r];
    EXPECT_NE(msgs[r].find(str_cat("ranks [", n - 1, "] did not arrive at all_reduce")),
              std::string::npos)
        << msgs[r];
  }
}

#endif  // ONEFLOWLIKE_WITH_CUDA
