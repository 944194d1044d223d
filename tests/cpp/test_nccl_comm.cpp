// The NCCL communicator with ranks as threads of one process, rank r on cuda:r, running the
// checks of test_gloo_comm.cpp on CUDA tensors. Compiled only in CUDA builds; every test skips
// with its reason where the machine has too few GPUs (a world of one needs one GPU, the
// multi-rank cases two or more: NCCL cannot put two ranks on one device).
#ifdef ONEFLOWLIKE_WITH_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>

#include "core/comm/nccl/nccl_communicator.h"
#include "core/stream.h"
#include "gloo_test_util.h"  // make / values / kAllDTypes: CPU tensor helpers shared with Gloo

using namespace ofl;
using namespace ofl::comm;
using ofl::comm::testing::error_of;
using ofl::comm::testing::kAllDTypes;

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

Tensor make(DType dt, const std::vector<double>& v, int device) {
  return to_gpu(comm::testing::make(dt, v), device);
}

Tensor empty(int64_t n, DType dt, int device) {
  return Tensor::empty({n}, dt, Device{DeviceType::kCUDA, device});
}

std::vector<double> values(const Tensor& t) {
  Tensor cpu = Tensor::empty(t.shape(), t.dtype());
  size_t bytes = t.numel() * itemsize(t.dtype());
  if (bytes) {
    EXPECT_EQ(cudaMemcpy(cpu.raw_data(), t.raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return comm::testing::values(cpu);
}

// Calls body(rank, communicator) on n threads, rank r on cuda:r. Communicators live until every
// thread is done; exceptions fail the test.
void run_ranks(int n, const std::function<void(int, Communicator&)>& body,
               Millis timeout = Millis(60000)) {
  auto store = std::make_shared<MemoryStore>();
  store->set_timeout(timeout);
  std::vector<std::shared_ptr<Communicator>> comms(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        comms[r] = make_nccl_communicator(store, r, n, r, timeout);
        body(r, *comms[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    if (!errors[r].empty())
      ADD_FAILURE() << "rank " << r << " of " << n << " raised: " << errors[r];
}

// The inputs and expectations of test_gloo_comm.cpp: small values every dtype holds exactly.
double value(ReduceOp op, DType dt, int rank, int64_t i) {
  if (dt == DType::kBool) return (rank + i) % 3 == 0;
  if (op == ReduceOp::kProduct) return 1 + (rank + i) % 2;
  return (rank + 1) + i % 3;
}

std::vector<double> inputs(ReduceOp op, DType dt, int rank, int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = value(op, dt, rank, i);
  return v;
}

// The reduction over ranks of value(op, dt, r, i), with bool sum = or and product = and.
double expected(ReduceOp op, DType dt, int size, int64_t i) {
  double acc = value(op, dt, 0, i);
  for (int r = 1; r < size; ++r) {
    double x = value(op, dt, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc = dt == DType::kBool ? (acc || x) : acc + x;
        break;
      case ReduceOp::kProduct:
        acc = dt == DType::kBool ? (acc && x) : acc * x;
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, x);
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, x);
        break;
    }
  }
  return op == ReduceOp::kAvg ? acc / size : acc;
}

const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMax,
                                    ReduceOp::kMin};
const std::vector<DType> kFloating = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                      DType::kFloat64};

std::vector<int64_t> offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), off.begin() + 1);
  return off;
}

}  // namespace

// ---- a world of one rank (one GPU) ----

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
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (DType dt : kAllDTypes)
      for (ReduceOp op : kOps) {
        Tensor t = make(dt, inputs(op, dt, rank, 7), rank);
        c.all_reduce(t, op);
        auto got = values(t);
        for (int64_t i = 0; i < 7; ++i)
          EXPECT_EQ(got[i], expected(op, dt, n, i))
              << dtype_name(dt) << " " << reduce_op_name(op) << " n=" << n << " i=" << i;
      }
    for (DType dt : kFloating) {
      Tensor t = make(dt, inputs(ReduceOp::kAvg, dt, rank, 5), rank);
      c.all_reduce(t, ReduceOp::kAvg);
      auto got = values(t);
      for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], expected(ReduceOp::kAvg, dt, n, i));
    }
  });
}

TEST(Nccl, AllGatherAndAllGatherVPlaceBlocksInRankOrder) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (DType dt : kAllDTypes) {
      Tensor out = empty(2 * n, dt, rank);
      c.all_gather(make(dt, {double(rank % 2), 1.0}, rank), out);
      auto got = values(out);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(got[2 * r], r % 2) << dtype_name(dt);
        EXPECT_EQ(got[2 * r + 1], 1.0);
      }
    }
    std::vector<int64_t> counts = {3, 0, 1, 2};
    counts.resize(n);
    auto off = offsets(counts);
    for (DType dt : {DType::kBool, DType::kInt8, DType::kInt64, DType::kBFloat16}) {
      std::vector<double> mine(counts[rank]);
      for (int64_t i = 0; i < counts[rank]; ++i) mine[i] = dt == DType::kBool ? 1 : rank + i;
      Tensor out = empty(off[n], dt, rank);
      c.all_gather_v(make(dt, mine, rank), out, counts);
      auto got = values(out);
      for (int r = 0; r < n; ++r)
        for (int64_t i = 0; i < counts[r]; ++i)
          EXPECT_EQ(got[off[r] + i], dt == DType::kBool ? 1 : r + i) << dtype_name(dt);
    }
  });
}

TEST(Nccl, ReduceScatterAndReduceScatterVReduceEachRanksBlock) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (DType dt : kAllDTypes)
      for (ReduceOp op : kOps) {
        const int64_t block = 3;
        Tensor out = empty(block, dt, rank);
        c.reduce_scatter(make(dt, inputs(op, dt, rank, block * n), rank), out, op);
        auto got = values(out);
        for (int64_t i = 0; i < block; ++i)
          EXPECT_EQ(got[i], expected(op, dt, n, rank * block + i))
              << dtype_name(dt) << " " << reduce_op_name(op);
      }
    std::vector<int64_t> counts = {2, 0, 5, 1};
    counts.resize(n);
    auto off = offsets(counts);
    for (DType dt : {DType::kUInt8, DType::kInt32, DType::kFloat16, DType::kFloat32})
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg}) {
        if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
        Tensor out = empty(counts[rank], dt, rank);
        c.reduce_scatter_v(make(dt, inputs(op, dt, rank, off[n]), rank), out, counts, op);
        auto got = values(out);
        for (int64_t i = 0; i < counts[rank]; ++i)
          EXPECT_EQ(got[i], expected(op, dt, n, off[rank] + i)) << dtype_name(dt);
      }
  });
}

TEST(Nccl, AllToAllAndAllToAllVRouteBlocksIncludingInPlace) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (DType dt : {DType::kBool, DType::kInt8, DType::kInt32, DType::kFloat16}) {
      std::vector<double> mine(2 * n);
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < 2; ++k)
          mine[2 * j + k] = dt == DType::kBool ? (rank + j + k) % 2 : 10 * rank + j + k;
      Tensor out = empty(2 * n, dt, rank);
      c.all_to_all(make(dt, mine, rank), out);
      auto got = values(out);
      for (int r = 0; r < n; ++r)
        for (int k = 0; k < 2; ++k)
          EXPECT_EQ(got[2 * r + k], dt == DType::kBool ? (r + rank + k) % 2 : 10 * r + rank + k);
      Tensor inplace = make(dt, mine, rank);
      c.all_to_all(inplace, inplace);
      EXPECT_EQ(values(inplace), got);
    }
    auto count = [](int i, int j) -> int64_t { return (i + j) % 3; };
    for (DType dt : {DType::kUInt8, DType::kInt64, DType::kBFloat16, DType::kFloat32}) {
      std::vector<int64_t> send(n), recv(n);
      std::vector<double> mine;
      for (int j = 0; j < n; ++j) {
        send[j] = count(rank, j);
        recv[j] = count(j, rank);
        for (int64_t k = 0; k < send[j]; ++k) mine.push_back(10 * rank + j);
      }
      Tensor out = empty(std::accumulate(recv.begin(), recv.end(), int64_t{0}), dt, rank);
      c.all_to_all_v(make(dt, mine, rank), send, out, recv);
      auto got = values(out);
      size_t at = 0;
      for (int j = 0; j < n; ++j)
        for (int64_t k = 0; k < recv[j]; ++k) EXPECT_EQ(got[at++], 10 * j + rank);
    }
  });
}

TEST(Nccl, BroadcastAndReduceFromEveryRoot) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (int root = 0; root < n; ++root) {
      for (DType dt : {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16}) {
        Tensor t = make(
            dt, rank == root ? std::vector<double>{1, 0, 1} : std::vector<double>{0, 0, 0}, rank);
        c.broadcast(t, root);
        EXPECT_EQ(values(t), (std::vector<double>{1, 0, 1})) << dtype_name(dt);
      }
      for (DType dt : kAllDTypes)
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kAvg}) {
          if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
          auto mine = inputs(op, dt, rank, 6);
          Tensor t = make(dt, mine, rank);
          c.reduce(t, root, op);
          auto got = values(t);
          for (int64_t i = 0; i < 6; ++i)
            EXPECT_EQ(got[i], rank == root ? expected(op, dt, n, i) : mine[i])
                << dtype_name(dt) << " root " << root;
        }
    }
  });
}

TEST(Nccl, GatherAndScatterEqualAndUnevenBlocks) {
  NEED_GPUS(2);
  int n = multi();
  run_ranks(n, [&](int rank, Communicator& c) {
    for (int root = 0; root < n; ++root)
      for (DType dt : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kFloat64}) {
        auto v = [&](int r, int64_t i) -> double {
          return dt == DType::kBool ? (r + i) % 2 : 10 * r + i;
        };
        std::vector<int64_t> counts = {1, 3, 0, 2};
        counts.resize(n);
        auto off = offsets(counts);
        Tensor out = rank == root ? empty(2 * n, dt, rank) : Tensor();
        c.gather(make(dt, {v(rank, 0), v(rank, 1)}, rank), out, root);
        std::vector<double> mine;
        for (int64_t i = 0; i < counts[rank]; ++i) mine.push_back(v(rank, i));
        Tensor out_v = rank == root ? empty(off[n], dt, rank) : Tensor();
        c.gather(make(dt, mine, rank), out_v, root, counts);
        if (rank == root) {
          auto got = values(out), got_v = values(out_v);
          for (int r = 0; r < n; ++r) {
            for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(got[2 * r + i], v(r, i));
            for (int64_t i = 0; i < counts[r]; ++i) EXPECT_EQ(got_v[off[r] + i], v(r, i));
          }
        }
        std::vector<double> all, all_v;
        for (int r = 0; r < n; ++r) {
          for (int64_t i = 0; i < 2; ++i) all.push_back(v(r, i));
          for (int64_t i = 0; i < counts[r]; ++i) all_v.push_back(v(r, i));
        }
        Tensor piece = empty(2, dt, rank);
        c.scatter(rank == root ? make(dt, all, rank) : Tensor(), piece, root);
        EXPECT_EQ(values(piece), (std::vector<double>{v(rank, 0), v(rank, 1)}));
        Tensor piece_v = empty(counts[rank], dt, rank);
        c.scatter(rank == root ? make(dt, all_v, rank) : Tensor(), piece_v, root, counts);
        EXPECT_EQ(values(piece_v), mine);
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
