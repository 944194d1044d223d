// Gloo backend: sub-groups, argument checks, timeouts and lost peers, and the ring schedule.
#include <gtest/gtest.h>

#include <chrono>
#include <latch>
#include <set>

#include "core/comm/gloo/ring_plan.h"
#include "core/comm/tcp_store.h"
#include "gloo_test_util.h"

using namespace ofl::internal;
using namespace ofl::internal::comm;
using namespace ofl::internal::comm::testing;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs `n` ranks whose bodies own their communicator (and may drop it, like a dying process).
void run_owning(int n, const std::function<void(int, std::shared_ptr<Communicator>&)>& body,
                Millis timeout = Millis(10000)) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto c = make_gloo_communicator(store, r, n, "127.0.0.1", timeout);
      body(r, c);
    });
  for (auto& t : threads) t.join();
}

}  // namespace

TEST(GlooRingPlan, ReduceScatterPlanReducesEveryBlockOverAllRanksEndingAtItsOwner) {
  for (int p = 1; p <= 6; ++p) {
    // contributions[r][b]: the ranks whose input rank r's partial of block b holds.
    std::vector<std::vector<std::set<int>>> partial(p, std::vector<std::set<int>>(p));
    for (int r = 0; r < p; ++r)
      for (int b = 0; b < p; ++b) partial[r][b] = {r};
    std::vector<std::vector<RingStep>> plans;
    for (int r = 0; r < p; ++r) plans.push_back(ring_reduce_scatter_plan(r, p));
    for (int s = 0; s + 1 < p; ++s) {
      auto before = partial;
      for (int r = 0; r < p; ++r) {
        const int prev = (r + p - 1) % p;
        ASSERT_EQ(plans[prev][s].send_block, plans[r][s].recv_block) << "p=" << p << " s=" << s;
        const int b = plans[r][s].recv_block;
        partial[r][b].insert(before[prev][b].begin(), before[prev][b].end());
      }
    }
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(plans[r].size(), size_t(p - 1));
      EXPECT_EQ(partial[r][r].size(), size_t(p)) << "rank " << r << " of " << p;
    }
  }
}

TEST(Gloo, SubGroupsRunCollectivesOverTheirMembersOnly) {
  run_ranks(4, [&](int rank, Communicator& c) {
    std::vector<int> members = rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
    auto g = c.group(members);
    EXPECT_EQ(c.group(members), g);  // cached: asking again is free
    EXPECT_EQ(g->size(), 2);
    EXPECT_EQ(g->rank(), rank / 2);
    EXPECT_EQ(g->ranks(), members);
    Tensor t = make(DType::kInt32, {double(rank)});
    g->all_reduce(t, ReduceOp::kSum);
    EXPECT_EQ(values(t)[0], rank % 2 == 0 ? 2 : 4);
    // The world still works between group collectives.
    Tensor w = make(DType::kInt32, {double(rank)});
    c.all_reduce(w, ReduceOp::kSum);
    EXPECT_EQ(values(w)[0], 6);
    // Member order is group order: in [3, 1, 2] rank 3 is group rank 0.
    if (rank != 0) {
      auto odd = c.group({3, 1, 2});
      Tensor out = Tensor::empty({3}, DType::kInt64);
      odd->all_gather(make(DType::kInt64, {double(rank)}), out);
      EXPECT_EQ(values(out), (std::vector<double>{3, 1, 2}));
      // A group of a group, and a group of one.
      if (rank != 3) {
        auto pair = odd->group({1, 2});
        Tensor s = make(DType::kFloat32, {double(rank)});
        pair->all_reduce(s, ReduceOp::kMax);
        EXPECT_EQ(values(s)[0], 2);
      }
      auto self = odd->group({rank});
      Tensor one = make(DType::kFloat32, {1});
      self->all_reduce(one, ReduceOp::kSum);
      EXPECT_EQ(values(one)[0], 1);
    }
  });
}

TEST(Gloo, InvalidArgumentsRaiseBeforeAnyCommunication) {
  run_ranks(2, [&](int rank, Communicator& c) {
    Tensor f = make(DType::kFloat32, {1, 2, 3, 4});
    Tensor i32 = make(DType::kInt32, {1, 2});
    Tensor strided = Tensor::view_of(f.storage(), {2}, {2}, 0, DType::kFloat32);
    EXPECT_TRUE(contains(error_of([&] { c.all_reduce(i32, ReduceOp::kAvg); }),
                         "[all_reduce] avg needs a floating-point tensor, got int32"));
    EXPECT_TRUE(contains(error_of([&] { c.reduce(i32, 0, ReduceOp::kAvg); }), "[reduce] avg"));
    EXPECT_TRUE(contains(error_of([&] { c.all_reduce(strided, ReduceOp::kSum); }),
                         "[all_reduce] needs a contiguous tensor"));
    Tensor undefined;
    EXPECT_TRUE(contains(error_of([&] { c.broadcast(undefined, 0); }),
                         "[broadcast] got an undefined tensor"));
    EXPECT_TRUE(contains(error_of([&] { c.broadcast(f, 2); }),
                         "[broadcast] root 2 is out of range for world of size 2"));
    Tensor out3 = Tensor::empty({3}, DType::kFloat32);
    // The checks both backends share (core/comm/communicator.h), message for message.
    EXPECT_TRUE(contains(error_of([&] { c.all_gather(f, out3); }),
                         "[all_gather] output (3,) float32 must hold 2 x 4 elements for input "
                         "(4,) float32 on world"));
    EXPECT_TRUE(contains(error_of([&] { c.reduce_scatter(out3, f, ReduceOp::kSum); }),
                         "[reduce_scatter] input (3,) float32 must hold 2 x 4 elements"));
    EXPECT_TRUE(contains(error_of([&] {
                           c.all_gather_v(out3, f, {2, 2});
                         }),
                         "[all_gather_v] input (3,) float32 holds 3 elements but counts[" +
                             std::to_string(rank) + "] is 2 on world"));
    EXPECT_TRUE(contains(error_of([&] {
                           c.all_to_all_v(f, {rank == 0 ? 3 : 1, rank == 0 ? 1 : 3}, f, {2, 2});
                         }),
                         "[all_to_all_v] rank " + std::to_string(rank) + " sends itself"));
    EXPECT_TRUE(contains(error_of([&] { c.recv(f, rank, 0); }),
                         "[recv] rank " + std::to_string(rank) + " cannot receive from itself"));
    EXPECT_TRUE(contains(error_of([&] { c.all_gather(i32, out3); }), "differ in dtype"));
    EXPECT_TRUE(contains(error_of([&] {
                           c.all_gather_v(f, out3, {1, 1, 1});
                         }),
                         "[all_gather_v] got 3 counts for the 2 ranks of world"));
    EXPECT_TRUE(contains(error_of([&] {
                           c.reduce_scatter_v(f, out3, {3, 2}, ReduceOp::kSum);
                         }),
                         "[reduce_scatter_v] counts sum to 5"));
    EXPECT_TRUE(contains(error_of([&] {
                           c.all_to_all_v(f, {2, -2}, f, {2, 2});
                         }),
                         "[all_to_all_v] negative count -2"));
    EXPECT_TRUE(contains(error_of([&] { c.all_to_all(f, out3); }), "[all_to_all]"));
    EXPECT_TRUE(contains(error_of([&] { c.scatter(f, out3, 0, {1}); }), "[scatter] got 1 counts"));
    EXPECT_TRUE(contains(error_of([&] { c.send(f, rank); }),
                         "[send] rank " + std::to_string(rank) + " cannot send to itself"));
    EXPECT_TRUE(contains(error_of([&] { c.recv(f, 1 - rank, -1); }), "[recv] tag must be"));
    EXPECT_TRUE(contains(error_of([&] { c.group({0, 5}); }), "[new_group] rank 5 is not in"));
    // Nothing reached the wire: the ranks are still in step.
    c.all_reduce(f, ReduceOp::kSum);
    EXPECT_EQ(values(f), (std::vector<double>{2, 4, 6, 8}));
  });
}

TEST(Gloo, MakeCommunicatorRejectsAnOutOfRangeRank) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_TRUE(
      contains(error_of([&] { make_gloo_communicator(store, 2, 2, "127.0.0.1", Millis(100)); }),
               "[make_gloo_communicator] rank 2 is out of range for world size 2"));
}

TEST(Gloo, RendezvousTimesOutNamingTheRanksThatNeverJoined) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)  // rank 3 of 4 never shows up
    threads.emplace_back([&, r] {
      errors[r] = error_of([&] { make_gloo_communicator(store, r, 4, "127.0.0.1", Millis(500)); });
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    EXPECT_TRUE(contains(e,
                         "[make_gloo_communicator] rendezvous of world (4 ranks) timed out "
                         "after 0.5 s; ranks that did not arrive: [3]"))
        << e;
}

TEST(Gloo, AllReduceTimesOutNamingTheRankThatNeverArrived) {
  std::latch others_done(3);
  std::vector<std::string> errors(4);
  std::vector<double> seconds(4);
  run_ranks(4, [&](int rank, Communicator& c) {
    c.set_timeout(Millis(500));
    c.barrier();
    if (rank == 3) {  // alive but busy elsewhere: never joins the all_reduce
      others_done.wait();
      return;
    }
    Tensor t = make(DType::kFloat32, {1, 2, 3});
    const auto t0 = Clock::now();
    errors[rank] = error_of([&] { c.all_reduce(t, ReduceOp::kSum); });
    seconds[rank] = std::chrono::duration<double>(Clock::now() - t0).count();
    // The communicator is unusable afterwards, and says so.
    EXPECT_TRUE(contains(error_of([&] { c.barrier(); }),
                         "[barrier] on world: the communicator is unusable after an earlier"));
    others_done.count_down();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(contains(errors[r],
                         "[all_reduce] on world (4 ranks) timed out after 0.5 s; "
                         "ranks that did not arrive: [3]"))
        << "rank " << r << ": " << errors[r];
    EXPECT_LT(seconds[r], 0.5 + 0.5 + 1.0) << "timeout + grace + slack";
  }
}

TEST(Gloo, SubGroupTimeoutNamesGlobalRanksAndTheGroup) {
  std::latch done(1);
  std::string error;
  run_ranks(4, [&](int rank, Communicator& c) {
    if (rank % 2 == 0) return;
    auto g = c.group({1, 3});
    g->set_timeout(Millis(300));
    if (rank == 3) return done.wait();
    Tensor out = Tensor::empty({2}, DType::kInt8);
    error = error_of([&] { g->all_gather(make(DType::kInt8, {1}), out); });
    done.count_down();
  });
  EXPECT_TRUE(contains(error,
                       "[all_gather] on group[1,3] (2 ranks) timed out after 0.3 s; "
                       "ranks that did not arrive: [3]"))
      << error;
}

TEST(Gloo, RecvTimesOutNamingThePeerAndTag) {
  std::latch done(1);
  std::string error;
  run_ranks(2, [&](int rank, Communicator& c) {
    if (rank == 1) return done.wait();
    c.set_timeout(Millis(300));
    Tensor t = Tensor::empty({4}, DType::kFloat32);
    error = error_of([&] { c.recv(t, 1, 4); });
    done.count_down();
  });
  EXPECT_TRUE(contains(error, "[recv] on world: rank 1 did not send tag 4 within 0.3 s")) << error;
}

TEST(Gloo, APeerThatDiesIsReportedAsALostConnection) {
  std::vector<std::string> errors(3);
  std::vector<double> seconds(3);
  run_owning(4, [&](int rank, std::shared_ptr<Communicator>& c) {
    c->barrier();
    if (rank == 3) {
      c.reset();  // closes its sockets, as a crashed process would
      return;
    }
    c->set_timeout(Millis(5000));
    Tensor t = make(DType::kFloat64, {1});
    const auto t0 = Clock::now();
    errors[rank] = error_of([&] { c->all_reduce(t, ReduceOp::kSum); });
    seconds[rank] = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(contains(errors[r], "[all_reduce] on world: lost connection to a peer ("))
        << errors[r];
    EXPECT_TRUE(contains(errors[r], "ranks that did not arrive: [3]")) << errors[r];
    EXPECT_LT(seconds[r], 4.0) << "well before the 5 s timeout";
  }
}

TEST(Gloo, RecvOfAnotherSizeOrDtypeRaisesOnTheReceiverAndKeepsBothRanksUsable) {
  run_ranks(2, [&](int rank, Communicator& c) {
    if (rank == 0) {
      c.send(filled(DType::kFloat32, 8, 1), 1, 5);  // more than the receiver expects
      c.send(filled(DType::kFloat32, 2, 1), 1, 5);  // fewer
      c.send(filled(DType::kInt32, 4, 1), 1, 5);    // same bytes, other dtype
    } else {
      Tensor t = Tensor::empty({4}, DType::kFloat32);
      for (const char* sent : {"sent 8 elements of float32", "sent 2 elements of float32",
                               "sent 4 elements of int32"}) {
        std::string e = error_of([&] { c.recv(t, 0, 5); });
        EXPECT_TRUE(contains(e, std::string("[recv] on world: rank 0 ") + sent +
                                    " with tag 5 but this rank expects (4,) float32"))
            << e;
      }
    }
    Tensor t = make(DType::kInt64, {double(rank)});
    c.all_reduce(t, ReduceOp::kSum);
    EXPECT_EQ(values(t)[0], 1);
  });
}

TEST(Gloo, MismatchedCollectivesRaiseOnEveryRankByDefaultInsteadOfHanging) {
  run_ranks(3, [&](int rank, Communicator& c) {
    Tensor t = filled(DType::kFloat32, rank == 2 ? 5 : 4, 1);
    EXPECT_TRUE(contains(error_of([&] { c.all_reduce(t, ReduceOp::kSum); }),
                         "[all_reduce] on world: ranks disagree on the call (rank 0: all_reduce "
                         "float32 of 4 elements (sum); rank 1: all_reduce float32 of 4 elements "
                         "(sum); rank 2: all_reduce float32 of 5 elements (sum))"));
    Tensor u = filled(DType::kFloat32, 4, 1);
    std::string e = rank == 0 ? error_of([&] { c.broadcast(u, 0); })
                              : error_of([&] { c.all_reduce(u, ReduceOp::kSum); });
    EXPECT_TRUE(contains(e,
                         "rank 0: broadcast float32 of 4 elements from/to root 0; rank 1: "
                         "all_reduce"))
        << e;
    std::vector<int64_t> counts =
        rank == 1 ? std::vector<int64_t>{2, 1, 1} : std::vector<int64_t>{1, 2, 1};
    Tensor out = Tensor::empty({4}, DType::kFloat32);
    EXPECT_TRUE(contains(
        error_of([&] { c.all_gather_v(filled(DType::kFloat32, counts[rank], 1), out, counts); }),
        "[all_gather_v] on world: ranks pass different counts (rank 0: [1, 2, 1]; "
        "rank 1: [2, 1, 1]; rank 2: [1, 2, 1])"));
    // Rank 0 sends rank 1 two elements; rank 1 expects one.
    std::vector<int64_t> send = {1, rank == 0 ? 2 : 1, 1}, recv = {1, 1, 1};
    Tensor in = filled(DType::kFloat32, rank == 0 ? 4 : 3, 1), got = filled(DType::kFloat32, 3, 0);
    EXPECT_TRUE(contains(error_of([&] { c.all_to_all_v(in, send, got, recv); }),
                         "[all_to_all_v] on world: send and receive counts disagree (rank 0 "
                         "sends rank 1 2 elements, which expects 1)"));
    c.all_reduce(u, ReduceOp::kSum);  // still usable, still in step
    EXPECT_EQ(values(u)[0], rank == 0 ? 3 : 3);
  });
}

// Boxing's collectives (PlannedCollectives) follow from metadata every rank agrees on: they skip
// the call check, a round trip per collective, unless OFL_COMM_CHECK=all asks for it. Two calls
// the check tells apart (float32 and int32 of one size) show which ran it.
TEST(Gloo, PlannedCollectivesSkipTheCallCheckUnlessAllAreChecked) {
  auto call = [](int rank, Communicator& c) {
    PlannedCollectives planned;
    Tensor t = filled(rank == 0 ? DType::kFloat32 : DType::kInt32, 4, 0);
    try {
      c.all_reduce(t, ReduceOp::kSum);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  run_ranks(2, [&](int rank, Communicator& c) {
    EXPECT_EQ(call(rank, c), "");
    EXPECT_FALSE(PlannedCollectives::active());  // the scope has ended
  });
  ::setenv("OFL_COMM_CHECK", "all", 1);
  run_ranks(2, [&](int rank, Communicator& c) {
    EXPECT_TRUE(contains(call(rank, c), "ranks disagree on the call (rank 0: all_reduce float32"));
  });
  ::unsetenv("OFL_COMM_CHECK");
}

TEST(Gloo, RanksMeetThroughTheTcpStoreAndNameMissingRanksThroughIt) {
  // One TcpStore client per rank, as in separate processes; rank 0's owns the server.
  auto server_client = make_tcp_store("127.0.0.1", 0, true, "", Millis(10000));
  const int port = std::dynamic_pointer_cast<TcpStore>(server_client)->port();
  std::latch others_done(3);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      auto store =
          r == 0 ? server_client : make_tcp_store("127.0.0.1", port, false, "", Millis(10000));
      auto c = make_gloo_communicator(store, r, 4, "127.0.0.1", Millis(10000));
      Tensor t = make(DType::kBFloat16, {double(r)});
      c->all_reduce(t, ReduceOp::kSum);
      EXPECT_EQ(values(t)[0], 6);
      auto g = c->group(r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3});
      g->all_reduce(t, ReduceOp::kMax);
      EXPECT_EQ(values(t)[0], 6);
      c->set_timeout(Millis(400));
      if (r == 3) return others_done.wait();
      errors[r] = error_of([&] { c->barrier(); });
      others_done.count_down();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(contains(errors[r],
                         "[barrier] on world (4 ranks) timed out after 0.4 s; ranks "
                         "that did not arrive: [3]"))
        << errors[r];
}
