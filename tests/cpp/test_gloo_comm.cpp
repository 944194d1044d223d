// Numerics of every Gloo collective on 2-4 ranks (threads of this process), every dtype class.
// The checks shared with the NCCL tests are in collective_checks.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "collective_checks.h"
#include "core/primitives.h"
#include "gloo_test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::comm;
using namespace ofl::internal::comm::checks;
using namespace ofl::internal::comm::testing;

namespace {

// Runs check(communicator) on every rank of worlds of two, three and four ranks.
void on_two_three_and_four_ranks(const std::function<void(Communicator&)>& check) {
  for (int n : {2, 3, 4}) run_ranks(n, [&](int, Communicator& c) { check(c); });
}

}  // namespace

TEST(Gloo, AllReduceAppliesEveryOpToEveryDtypeOnTwoThreeAndFourRanks) {
  on_two_three_and_four_ranks([](Communicator& c) { check_all_reduce_every_op(kCpu, c); });
}

TEST(Gloo, AllReduceAvgDividesTheSumForFloatingDtypes) {
  run_ranks(4, [&](int, Communicator& c) { check_all_reduce_avg(kCpu, c); });
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
  on_two_three_and_four_ranks([](Communicator& c) { check_all_gather(kCpu, c); });
}

TEST(Gloo, AllGatherVConcatenatesUnevenBlocksInRankOrder) {
  on_two_three_and_four_ranks([](Communicator& c) {
    check_all_gather_v(
        kCpu, c, {DType::kBool, DType::kInt8, DType::kInt64, DType::kBFloat16, DType::kFloat64});
  });
}

TEST(Gloo, ReduceScatterGivesEachRankTheReductionOfItsBlock) {
  on_two_three_and_four_ranks([](Communicator& c) { check_reduce_scatter(kCpu, c); });
}

TEST(Gloo, ReduceScatterVReducesUnevenAndEmptyBlocks) {
  on_two_three_and_four_ranks([](Communicator& c) { check_reduce_scatter_v(kCpu, c); });
}

// Groups up to OFL_COMM_DIRECT_RANKS (8) send each peer its part at once; larger ones go along
// the ring, which OFL_COMM_DIRECT_RANKS=1 gives these small groups.
TEST(Gloo, ReduceScatterAndAllGatherAlongTheRingAsDirectly) {
  ::setenv("OFL_COMM_DIRECT_RANKS", "1", 1);
  on_two_three_and_four_ranks([](Communicator& c) {
    check_reduce_scatter_v(kCpu, c);
    check_all_gather_v(kCpu, c, {DType::kInt8, DType::kFloat64});
  });
  ::unsetenv("OFL_COMM_DIRECT_RANKS");
}

// The all-gather's input may be the rank's own block of its output (boxing's P -> B).
TEST(Gloo, AllGatherVInPlaceFromTheRanksOwnBlock) {
  for (const char* direct : {"8", "1"}) {
    ::setenv("OFL_COMM_DIRECT_RANKS", direct, 1);
    run_ranks(3, [&](int rank, Communicator& c) {
      const std::vector<int64_t> counts = {2, 0, 3};
      Tensor out = filled(DType::kFloat32, 5, -1);
      const int64_t start = rank == 0 ? 0 : 2;
      for (int64_t i = 0; i < counts[rank]; ++i)
        out.data<float>()[start + i] = float(10 * rank + i);
      c.all_gather_v(narrow_view(out, 0, start, counts[rank]), out, counts);
      EXPECT_EQ(values(out), (std::vector<double>{0, 1, 20, 21, 22})) << "direct up to " << direct;
    });
  }
  ::unsetenv("OFL_COMM_DIRECT_RANKS");
}

// Blocks packed on demand (boxing's S(i) -> S(j)) land as all_to_all_v's, sent as each is packed
// (direct) or packed first (the default, beyond OFL_COMM_DIRECT_RANKS).
TEST(Gloo, AllToAllVPackedRoutesTheBlocksItPacks) {
  for (const char* direct : {"8", "1"}) {
    ::setenv("OFL_COMM_DIRECT_RANKS", direct, 1);
    run_ranks(3, [&](int rank, Communicator& c) {
      // Rank r sends rank k (r + k) % 3 elements, each 100 r + 10 k + i.
      std::vector<int64_t> send, recv;
      for (int k = 0; k < 3; ++k) {
        send.push_back((rank + k) % 3);
        recv.push_back((k + rank) % 3);
      }
      std::vector<int> packed;
      Tensor out = filled(DType::kFloat64, 3, -1);
      c.all_to_all_v_packed(
          [&](int k, const Tensor& into) {
            packed.push_back(k);
            for (int64_t i = 0; i < into.numel(); ++i)
              into.data<double>()[i] = 100 * rank + 10 * k + double(i);
            return into;
          },
          send, out, recv);
      std::vector<double> want;
      for (int k = 0; k < 3; ++k)
        for (int64_t i = 0; i < recv[k]; ++i) want.push_back(100 * k + 10 * rank + double(i));
      EXPECT_EQ(values(out), want) << "rank " << rank << ", direct up to " << direct;
      EXPECT_EQ(packed.size(), size_t(2)) << "an empty block is not packed";
    });
  }
  ::unsetenv("OFL_COMM_DIRECT_RANKS");
}

TEST(Gloo, AllToAllSendsBlockJToRankJ) {
  on_two_three_and_four_ranks([](Communicator& c) {
    check_all_to_all(kCpu, c,
                     {DType::kBool, DType::kInt8, DType::kInt32, DType::kFloat16, DType::kFloat64});
  });
}

TEST(Gloo, AllToAllVRoutesUnevenBlocksIncludingEmptyOnes) {
  on_two_three_and_four_ranks([](Communicator& c) { check_all_to_all_v(kCpu, c); });
}

TEST(Gloo, BroadcastCopiesTheRootsTensorToEveryRank) {
  on_two_three_and_four_ranks([](Communicator& c) {
    for (int root = 0; root < c.size(); ++root)
      check_broadcast(
          kCpu, c, root,
          {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16, DType::kFloat32});
  });
}

TEST(Gloo, ReduceLandsOnRootAndLeavesOtherRanksUntouched) {
  on_two_three_and_four_ranks([](Communicator& c) {
    for (int root = 0; root < c.size(); ++root) check_reduce(kCpu, c, root);
  });
}

TEST(Gloo, GatherCollectsEqualAndUnevenBlocksOnRoot) {
  on_two_three_and_four_ranks([](Communicator& c) {
    for (int root = 0; root < c.size(); ++root)
      check_gather(kCpu, c, root,
                   {DType::kBool, DType::kUInt8, DType::kInt32, DType::kBFloat16, DType::kFloat64});
  });
}

TEST(Gloo, ScatterDistributesEqualAndUnevenBlocksFromRoot) {
  on_two_three_and_four_ranks([](Communicator& c) {
    for (int root = 0; root < c.size(); ++root)
      check_scatter(kCpu, c, root,
                    {DType::kBool, DType::kInt8, DType::kInt64, DType::kFloat16, DType::kFloat32},
                    {0, 2, 3, 1});
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

TEST(Gloo, SendRecvPassesEveryBlockAroundARingWithoutDeadlock) {
  // Every member sends to the next and receives from the one before at once (ring attention's
  // step); after n - 1 steps each has seen every block, on rings of odd and even size.
  on_two_three_and_four_ranks([](Communicator& c) {
    const int n = c.size();
    Tensor held = make(DType::kFloat32, {double(c.rank()), double(c.rank())});
    std::vector<double> seen{values(held)[0]};
    for (int step = 1; step < n; ++step) {
      Tensor next = Tensor::empty({2}, DType::kFloat32);
      send_recv(c, held, (c.rank() + 1) % n, next, (c.rank() + n - 1) % n, 5);
      held = next;
      seen.push_back(values(held)[0]);
    }
    for (int step = 0; step < n; ++step) EXPECT_EQ(seen[size_t(step)], (c.rank() - step + n) % n);
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
