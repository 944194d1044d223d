// Numerics of every Gloo collective on 2-4 ranks (threads of this process), every dtype class.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "gloo_test_util.h"

using namespace ofl;
using namespace ofl::comm;
using namespace ofl::comm::testing;

namespace {

// Small values every dtype holds exactly; products stay within int8 and bfloat16.
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

TEST(Gloo, AllReduceAppliesEveryOpToEveryDtypeOnTwoThreeAndFourRanks) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (DType dt : kAllDTypes)
        for (ReduceOp op : kOps) {
          Tensor t = make(dt, inputs(op, dt, rank, 7));
          c.all_reduce(t, op);
          auto got = values(t);
          for (int64_t i = 0; i < 7; ++i)
            EXPECT_EQ(got[i], expected(op, dt, n, i))
                << dtype_name(dt) << " " << reduce_op_name(op) << " n=" << n << " i=" << i;
        }
    });
}

TEST(Gloo, AllReduceAvgDividesTheSumForFloatingDtypes) {
  run_ranks(4, [&](int rank, Communicator& c) {
    for (DType dt : kFloating) {
      Tensor t = make(dt, inputs(ReduceOp::kAvg, dt, rank, 5));
      c.all_reduce(t, ReduceOp::kAvg);
      auto got = values(t);
      for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], expected(ReduceOp::kAvg, dt, 4, i));
    }
  });
}

TEST(Gloo, AllReduceMaxAndMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  run_ranks(3, [&](int rank, Communicator& c) {
    for (DType dt : kFloating)
      for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
        Tensor t = make(dt, {rank == 1 ? nan : 1.0, double(rank)});
        c.all_reduce(t, op);
        auto got = values(t);
        EXPECT_TRUE(std::isnan(got[0])) << dtype_name(dt);
        EXPECT_EQ(got[1], op == ReduceOp::kMax ? 2.0 : 0.0);
      }
  });
}

TEST(Gloo, AllReduceOfManySegmentsMatchesTheSum) {
  const int64_t n = 300001;  // over Gloo's 1 MB segments, not a multiple of anything
  run_ranks(3, [&](int rank, Communicator& c) {
    Tensor t = Tensor::empty({n}, DType::kFloat32);
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float(rank * 1000 + i % 1000);
    c.all_reduce(t, ReduceOp::kSum);
    for (int64_t i = 0; i < n; i += 977)
      EXPECT_EQ(t.data<float>()[i], float(3000 + 3 * (i % 1000)));
  });
}

TEST(Gloo, AllGatherPlacesEachRanksBlockAtItsRank) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (DType dt : kAllDTypes) {
        Tensor in = make(dt, {double(rank % 2), 1.0});
        Tensor out = Tensor::empty({2 * n}, dt);
        c.all_gather(in, out);
        auto got = values(out);
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(got[2 * r], r % 2) << dtype_name(dt);
          EXPECT_EQ(got[2 * r + 1], 1.0);
        }
      }
    });
}

TEST(Gloo, AllGatherVConcatenatesUnevenBlocksInRankOrder) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      std::vector<int64_t> counts = {3, 0, 1, 2};
      counts.resize(n);
      auto off = offsets(counts);
      for (DType dt :
           {DType::kBool, DType::kInt8, DType::kInt64, DType::kBFloat16, DType::kFloat64}) {
        std::vector<double> mine(counts[rank]);
        for (int64_t i = 0; i < counts[rank]; ++i) mine[i] = dt == DType::kBool ? 1 : rank + i;
        Tensor out = Tensor::empty({off[n]}, dt);
        c.all_gather_v(make(dt, mine), out, counts);
        auto got = values(out);
        for (int r = 0; r < n; ++r)
          for (int64_t i = 0; i < counts[r]; ++i)
            EXPECT_EQ(got[off[r] + i], dt == DType::kBool ? 1 : r + i) << dtype_name(dt);
      }
    });
}

TEST(Gloo, ReduceScatterGivesEachRankTheReductionOfItsBlock) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (DType dt : kAllDTypes)
        for (ReduceOp op : kOps) {
          const int64_t block = 3;
          Tensor in = make(dt, inputs(op, dt, rank, block * n));
          Tensor out = Tensor::empty({block}, dt);
          c.reduce_scatter(in, out, op);
          auto got = values(out);
          for (int64_t i = 0; i < block; ++i)
            EXPECT_EQ(got[i], expected(op, dt, n, rank * block + i))
                << dtype_name(dt) << " " << reduce_op_name(op) << " n=" << n;
        }
    });
}

TEST(Gloo, ReduceScatterVReducesUnevenAndEmptyBlocks) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      std::vector<int64_t> counts = {2, 0, 5, 1};
      counts.resize(n);
      auto off = offsets(counts);
      for (DType dt : {DType::kUInt8, DType::kInt32, DType::kFloat16, DType::kFloat32})
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg}) {
          if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
          Tensor in = make(dt, inputs(op, dt, rank, off[n]));
          Tensor out = Tensor::empty({counts[rank]}, dt);
          c.reduce_scatter_v(in, out, counts, op);
          auto got = values(out);
          for (int64_t i = 0; i < counts[rank]; ++i)
            EXPECT_EQ(got[i], expected(op, dt, n, off[rank] + i)) << dtype_name(dt);
        }
    });
}

TEST(Gloo, AllToAllSendsBlockJToRankJ) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (DType dt :
           {DType::kBool, DType::kInt8, DType::kInt32, DType::kFloat16, DType::kFloat64}) {
        std::vector<double> mine(2 * n);
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < 2; ++k)
            mine[2 * j + k] = dt == DType::kBool ? (rank + j + k) % 2 : 10 * rank + j + k;
        Tensor out = Tensor::empty({2 * n}, dt);
        c.all_to_all(make(dt, mine), out);
        auto got = values(out);
        for (int r = 0; r < n; ++r)
          for (int k = 0; k < 2; ++k)
            EXPECT_EQ(got[2 * r + k], dt == DType::kBool ? (r + rank + k) % 2 : 10 * r + rank + k);
        Tensor inplace = make(dt, mine);  // the output may be the input
        c.all_to_all(inplace, inplace);
        EXPECT_EQ(values(inplace), got);
      }
    });
}

TEST(Gloo, AllToAllVRoutesUnevenBlocksIncludingEmptyOnes) {
  // Rank i sends (i + j) % 3 elements to rank j, each 10 * i + j.
  auto count = [](int i, int j) -> int64_t { return (i + j) % 3; };
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (DType dt : {DType::kUInt8, DType::kInt64, DType::kBFloat16, DType::kFloat32}) {
        std::vector<int64_t> send(n), recv(n);
        std::vector<double> mine;
        for (int j = 0; j < n; ++j) {
          send[j] = count(rank, j);
          recv[j] = count(j, rank);
          for (int64_t k = 0; k < send[j]; ++k) mine.push_back(10 * rank + j);
        }
        Tensor out = Tensor::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0})}, dt);
        c.all_to_all_v(make(dt, mine), send, out, recv);
        auto got = values(out);
        size_t at = 0;
        for (int j = 0; j < n; ++j)
          for (int64_t k = 0; k < recv[j]; ++k) EXPECT_EQ(got[at++], 10 * j + rank);
      }
    });
}

TEST(Gloo, BroadcastCopiesTheRootsTensorToEveryRank) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (int root = 0; root < n; ++root)
        for (DType dt :
             {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16, DType::kFloat32}) {
          Tensor t = rank == root ? make(dt, {1, 0, 1}) : filled(dt, 3, 0);
          c.broadcast(t, root);
          EXPECT_EQ(values(t), (std::vector<double>{1, 0, 1})) << dtype_name(dt);
        }
    });
}

TEST(Gloo, ReduceLandsOnRootAndLeavesOtherRanksUntouched) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (int root = 0; root < n; ++root)
        for (DType dt : kAllDTypes)
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kAvg}) {
            if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
            auto mine = inputs(op, dt, rank, 6);
            Tensor t = make(dt, mine);
            c.reduce(t, root, op);
            auto got = values(t);
            for (int64_t i = 0; i < 6; ++i)
              EXPECT_EQ(got[i], rank == root ? expected(op, dt, n, i) : mine[i])
                  << dtype_name(dt) << " root " << root;
          }
    });
}

TEST(Gloo, GatherCollectsEqualAndUnevenBlocksOnRoot) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (int root = 0; root < n; ++root)
        for (DType dt :
             {DType::kBool, DType::kUInt8, DType::kInt32, DType::kBFloat16, DType::kFloat64}) {
          auto v = [&](int r, int64_t i) -> double {
            return dt == DType::kBool ? (r + i) % 2 : 10 * r + i;
          };
          Tensor out = rank == root ? Tensor::empty({2 * n}, dt) : Tensor();
          c.gather(make(dt, {v(rank, 0), v(rank, 1)}), out, root);
          std::vector<int64_t> counts = {1, 3, 0, 2};
          counts.resize(n);
          auto off = offsets(counts);
          std::vector<double> mine;
          for (int64_t i = 0; i < counts[rank]; ++i) mine.push_back(v(rank, i));
          Tensor out_v = rank == root ? Tensor::empty({off[n]}, dt) : Tensor();
          c.gather(make(dt, mine), out_v, root, counts);
          if (rank != root) continue;
          auto got = values(out), got_v = values(out_v);
          for (int r = 0; r < n; ++r) {
            for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(got[2 * r + i], v(r, i));
            for (int64_t i = 0; i < counts[r]; ++i) EXPECT_EQ(got_v[off[r] + i], v(r, i));
          }
        }
    });
}

TEST(Gloo, ScatterDistributesEqualAndUnevenBlocksFromRoot) {
  for (int n : {2, 3, 4})
    run_ranks(n, [&](int rank, Communicator& c) {
      for (int root = 0; root < n; ++root)
        for (DType dt :
             {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16, DType::kFloat32}) {
          auto v = [&](int r, int64_t i) -> double {
            return dt == DType::kBool ? (r + i) % 2 : 10 * r + i;
          };
          std::vector<double> all;
          for (int r = 0; r < n; ++r)
            for (int64_t i = 0; i < 2; ++i) all.push_back(v(r, i));
          Tensor out = Tensor::empty({2}, dt);
          c.scatter(rank == root ? make(dt, all) : Tensor(), out, root);
          EXPECT_EQ(values(out), (std::vector<double>{v(rank, 0), v(rank, 1)}));

          std::vector<int64_t> counts = {0, 2, 3, 1};
          counts.resize(n);
          std::vector<double> all_v;
          for (int r = 0; r < n; ++r)
            for (int64_t i = 0; i < counts[r]; ++i) all_v.push_back(v(r, i));
          Tensor out_v = Tensor::empty({counts[rank]}, dt);
          c.scatter(rank == root ? make(dt, all_v) : Tensor(), out_v, root, counts);
          auto got = values(out_v);
          for (int64_t i = 0; i < counts[rank]; ++i) EXPECT_EQ(got[i], v(rank, i));
        }
    });
}

TEST(Gloo, SendRecvPairsMessagesByPeerAndTag) {
  run_ranks(3, [&](int rank, Communicator& c) {
    if (rank == 2) {
      // Receives from rank 1 before rank 0, though rank 0 may have sent first.
      Tensor from1 = Tensor::empty({3}, DType::kInt64), from0 = Tensor::empty({2}, DType::kFloat16);
      c.recv(from1, 1, 7);
      c.recv(from0, 0, 3);
      EXPECT_EQ(values(from1), (std::vector<double>{1, 2, 3}));
      EXPECT_EQ(values(from0), (std::vector<double>{0.5, -1}));
    } else if (rank == 1) {
      c.send(make(DType::kInt64, {1, 2, 3}), 2, 7);
    } else {
      c.send(make(DType::kFloat16, {0.5, -1}), 2, 3);
    }
    // Consecutive messages on one pair arrive in order, each with its own tag.
    if (rank == 0) {
      c.send(make(DType::kBool, {1, 0}), 1, 1);
      c.send(make(DType::kInt8, {-5}), 1, 2);
      c.send(Tensor::empty({0}, DType::kFloat32), 1, 3);
    } else if (rank == 1) {
      Tensor a = Tensor::empty({2}, DType::kBool), b = Tensor::empty({1}, DType::kInt8);
      Tensor empty = Tensor::empty({0}, DType::kFloat32);
      c.recv(a, 0, 1);
      c.recv(b, 0, 2);
      c.recv(empty, 0, 3);
      EXPECT_EQ(values(a), (std::vector<double>{1, 0}));
      EXPECT_EQ(values(b), (std::vector<double>{-5}));
    }
  });
}

TEST(Gloo, BarrierReturnsOnlyAfterEveryRankArrives) {
  using Clock = std::chrono::steady_clock;
  run_ranks(4, [&](int rank, Communicator& c) {
    c.barrier();  // every rank is connected; now the staggered arrival
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(60 * rank));
    c.barrier();
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(150));
  });
}

TEST(Gloo, WorldOfOneRankRunsEveryCollectiveLocally) {
  run_ranks(1, [&](int, Communicator& c) {
    Tensor t = make(DType::kFloat32, {1, 2});
    c.all_reduce(t, ReduceOp::kAvg);
    EXPECT_EQ(values(t), (std::vector<double>{1, 2}));
    Tensor out = Tensor::empty({2}, DType::kFloat32);
    c.all_gather(t, out);
    c.reduce_scatter_v(t, out, {2}, ReduceOp::kSum);
    c.all_to_all_v(t, {2}, out, {2});
    c.gather(t, out, 0, {2});
    c.scatter(t, out, 0);
    c.broadcast(t, 0);
    c.reduce(t, 0, ReduceOp::kMax);
    c.barrier();
    EXPECT_EQ(values(out), (std::vector<double>{1, 2}));
  });
}

TEST(Gloo, DISABLED_AllReduceOf64MBFloat32OnFourRanks) {
  const int64_t n = 16 << 20;  // 64 MB of float32
  run_ranks(4, [&](int rank, Communicator& c) {
    Tensor t = Tensor::empty({n}, DType::kFloat32);
    std::fill(t.data<float>(), t.data<float>() + n, float(rank));
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    c.all_reduce(t, ReduceOp::kSum);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) std::printf("4-rank all_reduce of 64 MB float32: %.3f s\n", s);
    EXPECT_EQ(t.data<float>()[n - 1], 6.0f);
  });
}
