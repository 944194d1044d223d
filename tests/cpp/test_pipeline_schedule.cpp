// Pipeline schedules (graph/pipeline/schedule.h) as data: orders, sends and receives, activations
// in flight and bubbles, without ranks.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "graph/pipeline/schedule.h"
#include "test_util.h"

using namespace ofl::graph::pipeline;
using ofl::testing::error_of;

namespace {

std::string order_str(const Schedule& s, int device) {
  std::string out;
  for (const Action& a : s.order[size_t(device)]) out += (out.empty() ? "" : " ") + a.str();
  return out;
}

const ScheduleKind kKinds[] = {ScheduleKind::kGPipe, ScheduleKind::k1F1B,
                               ScheduleKind::kInterleaved};

}  // namespace

TEST(PipelineSchedule, OneFOneBWarmsUpThenAlternatesThenDrains) {
  const Schedule s = make_schedule(ScheduleKind::k1F1B, 4, 8);
  EXPECT_EQ(order_str(s, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(order_str(s, 2), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  EXPECT_EQ(order_str(s, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  EXPECT_EQ(order_str(make_schedule(ScheduleKind::kGPipe, 2, 3), 1), "F0 F1 F2 B0 B1 B2");
}

TEST(PipelineSchedule, GPipeHoldsEveryMicroBatchAndOneFOneBAtMostTheDevicesLeft) {
  for (int p : {1, 2, 4})
    for (int m : {1, 3, 8}) {
      const Schedule gpipe = make_schedule(ScheduleKind::kGPipe, p, m);
      const Schedule one = make_schedule(ScheduleKind::k1F1B, p, m);
      for (int d = 0; d < p; ++d) {
        EXPECT_EQ(gpipe.peak_in_flight(d), m);
        EXPECT_EQ(one.peak_in_flight(d), std::min(p - d, m)) << "p " << p << " m " << m;
      }
    }
}

TEST(PipelineSchedule, EveryMicroBatchRunsForwardAndBackwardOnceThroughEveryStage) {
  for (ScheduleKind kind : kKinds)
    for (auto [p, m, v] : {std::tuple{2, 4, 1}, {4, 8, 1}, {2, 4, 2}, {4, 8, 3}, {1, 2, 1}}) {
      if (kind != ScheduleKind::kInterleaved && v > 1) continue;
      const Schedule s = make_schedule(kind, p, m, v);
      std::set<std::tuple<int, int, int>> seen;  // (phase, stage, micro)
      for (int d = 0; d < p; ++d)
        for (const Action& a : s.order[size_t(d)]) {
          EXPECT_EQ(s.device_of(a.stage), d) << a.str();
          EXPECT_EQ(a.stage, a.chunk * p + d);
          EXPECT_TRUE(seen.insert({int(a.phase), a.stage, a.micro}).second) << a.str();
        }
      EXPECT_EQ(seen.size(), size_t(2 * p * v * m)) << schedule_name(kind);
    }
}

TEST(PipelineSchedule, EachSendHasItsReceiveOnTheNeighbouringStage) {
  const Schedule s = make_schedule(ScheduleKind::kInterleaved, 2, 4, 2);
  std::multiset<std::tuple<int, int, int, int>> sent, received;  // (phase, from, to, micro)
  for (const auto& order : s.order)
    for (const Action& a : order) {
      if (a.send_to >= 0) sent.insert({int(a.phase), a.stage, a.send_to, a.micro});
      if (a.recv_from >= 0) received.insert({int(a.phase), a.recv_from, a.stage, a.micro});
      const int step = a.phase == Phase::kForward ? 1 : -1;
      if (a.send_to >= 0) EXPECT_EQ(a.send_to, a.stage + step) << a.str();
    }
  EXPECT_EQ(sent, received);
  EXPECT_EQ(sent.size(), size_t(2 * (s.virtual_stages() - 1) * s.micro_batches));
}

TEST(PipelineSchedule, BubbleIsPMinusOneOverMPlusPMinusOneForEqualStages) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B})
    for (int p : {2, 3, 4})
      for (int m : {1, 4, 8})
        EXPECT_NEAR(make_schedule(kind, p, m).bubble_fraction({1.0}, {2.0}),
                    double(p - 1) / (m + p - 1), 1e-12)
            << schedule_name(kind) << " p " << p << " m " << m;
}

TEST(PipelineSchedule, InterleavingShrinksTheBubbleByTheChunkCount) {
  // Megatron-LM: v chunks per device cut the bubble to (p-1)/v against m micro-batches' work.
  for (auto [p, m, v] : {std::tuple{2, 4, 2}, {4, 8, 2}, {4, 8, 4}}) {
    const double per_chunk = 1.0 / v;  // a chunk holds 1/v of the device's layers
    const double bubble = make_schedule(ScheduleKind::kInterleaved, p, m, v)
                              .bubble_fraction({per_chunk}, {2 * per_chunk});
    const double ideal = (p - 1.0) / v / (m + (p - 1.0) / v);
    EXPECT_NEAR(bubble, ideal, 1e-12) << "p " << p << " m " << m << " v " << v;
    EXPECT_LT(bubble, double(p - 1) / (m + p - 1));
  }
}

TEST(PipelineSchedule, TimelineWaitsForTheSendBetweenDevices) {
  const Schedule s = make_schedule(ScheduleKind::k1F1B, 2, 1);
  const std::vector<Timed> t = s.timeline({1.0}, {2.0}, 0.5);
  ASSERT_EQ(t.size(), 4u);
  double b0_on_0 = -1;
  for (const Timed& x : t)
    if (x.device == 0 && x.action.phase == Phase::kBackward) b0_on_0 = x.start;
  EXPECT_DOUBLE_EQ(b0_on_0, 1 + 0.5 + 1 + 2 + 0.5);  // F, send, F, B, send back
}

TEST(PipelineSchedule, PrintsOrdersAndAGrid) {
  EXPECT_EQ(make_schedule(ScheduleKind::k1F1B, 2, 3).str(),
            "1f1b: 2 devices, 3 micro-batches\n"
            "device 0: F0 F1 B0 F2 B1 B2  (2 in flight at most)\n"
            "device 1: F0 B0 F1 B1 F2 B2  (1 in flight at most)\n"
            "time (forward 1, backward 2):\n"
            "device 0: F0 F1 .  .  B0 -  F2 B1 -  .  B2 -\n"
            "device 1: .  F0 B0 -  F1 B1 -  F2 B2 -  .  .\n");
}

TEST(PipelineSchedule, BadCountsAndOrdersRaiseNamingTheSchedule) {
  EXPECT_NE(error_of([] {
              make_schedule(ScheduleKind::kInterleaved, 4, 6, 2);
            }).find("interleaved_1f1b sends micro-batches through in groups of the 4 devices: 6"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_schedule(ScheduleKind::k1F1B, 2, 4, 2); }).find("one chunk"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_schedule(ScheduleKind::kGPipe, 0, 4); }).find("0 devices"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_schedule("zb"); }).find("unknown schedule 'zb'"),
            std::string::npos);
  Schedule s = make_schedule(ScheduleKind::k1F1B, 2, 2);
  std::swap(s.order[1][0], s.order[1][1]);  // the last device's B0 before its F0
  EXPECT_NE(error_of([&] { s.timeline({1.0}, {1.0}); })
                .find("1f1b deadlocks: every device waits on an input never sent: device 0 at B0 "
                      "device 1 at B0"),
            std::string::npos);
}
