// Pipeline schedules (graph/pipeline/schedule.h) as data: orders, sends and receives, activations
// in flight and bubbles; and the pass ordering a traced step by one (graph/pipeline/order.h).
// Without ranks.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "graph/pipeline/order.h"
#include "graph/pipeline/schedule.h"
#include "test_util.h"

using namespace ofl::internal::graph::pipeline;
using ofl::internal::testing::error_of;

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

// --- the pipeline pass (graph/pipeline/order.h) on a hand-built two-stage step ---

namespace {

using namespace ofl::internal;
using ofl::internal::graph::Graph;
using ofl::internal::graph::Node;

const Placement kStage0{DeviceType::kCPU, {0}, {1}};
const Placement kStage1{DeviceType::kCPU, {1}, {1}};

struct TwoStages {
  Graph g;
  int value(const Placement& p) {
    return g.add_value({{4}, DType::kFloat32, Device{}, p, NdSbp::parse("B")});
  }
  // A node of micro-batch `micro` in `stage` (-1: traced outside one), forward or backward.
  int op(const char* name, int in, const Placement& p, int micro, int stage, bool backward) {
    const int out = value(p);
    Node n = graph::op_node(op_def(name), {in}, {out});
    n.micro = micro, n.stage = stage, n.backward = backward;
    g.add_node(std::move(n));
    return out;
  }
  int move(int in, const Placement& to, int micro, int stage, bool backward) {
    const int out = value(to);
    Node n = graph::boxing_node(in, out);
    n.micro = micro, n.stage = stage, n.backward = backward;
    g.add_node(std::move(n));
    return out;
  }
  // Micro-batch i as traced: stage 0's forward, the activation moved to stage 1 (in its forward),
  // stage 1's forward and backward, the gradient moved back (in its backward), stage 0's backward.
  // The loss's gradient is traced outside any stage: it takes its placement's.
  int micro_batch(int x, int i) {
    const int a = op("exp", x, kStage0, i, 0, false);
    const int b = move(a, kStage1, i, 1, false);
    const int c = op("neg", b, kStage1, i, 1, false);
    const int loss_grad = op("abs", c, kStage1, i, -1, true);
    const int d = move(op("neg", loss_grad, kStage1, i, 1, true), kStage0, i, 1, true);
    return op("exp", d, kStage0, i, 0, true);
  }
};

// Each node as "F<micro>s<stage>" / "B..." (consecutive repeats once), "-" outside micro-batches.
std::string actions(const Graph& g) {
  std::string out, last;
  for (const Node& n : g.nodes()) {
    std::string a = n.micro < 0 ? "-"
                                : (n.backward ? "B" : "F") + std::to_string(n.micro) + "s" +
                                      std::to_string(n.stage);
    if (a != last) out += (out.empty() ? "" : " ") + a;
    last = a;
  }
  return out;
}

}  // namespace

TEST(PipelinePass, OrdersTheTracedMicroBatchesByTheSchedulesTimeline) {
  TwoStages s;
  const int x = s.g.add_input({{4}, DType::kFloat32, Device{}, kStage0, NdSbp::parse("B")});
  const int g0 = s.micro_batch(x, 0), g1 = s.micro_batch(x, 1);
  s.g.add_node(graph::op_node(op_def("add"), {g0, g1}, {s.value(kStage0)}));  // the update
  s.g.set_outputs({s.g.nodes().back().outputs[0]});
  EXPECT_EQ(actions(s.g), "F0s0 F0s1 B0s-1 B0s1 B0s0 F1s0 F1s1 B1s-1 B1s1 B1s0 -");
  const PipelineOptions gpipe{ScheduleKind::kGPipe, 2, {kStage0, kStage1}};
  EXPECT_EQ(actions(order_by_schedule(s.g, gpipe)), "F0s0 F1s0 F0s1 F1s1 B0s1 B0s0 B1s1 B1s0 -");
  // 1F1B on two stages: the first stage runs F1 before B0, the second alternates.
  const PipelineOptions one{ScheduleKind::k1F1B, 2, {kStage0, kStage1}};
  EXPECT_EQ(actions(order_by_schedule(s.g, one)), "F0s0 F1s0 F0s1 B0s1 B0s0 F1s1 B1s1 B1s0 -");
}

TEST(PipelinePass, InputsMoveToTheirStagesInTheOrderTheStagesNeedThem) {
  // Inputs given on both stages' ranks, moved before the micro-batches, the targets first as
  // traced: the batch's move (and what reads it) goes first, the first stage waits for it.
  TwoStages s;
  const Placement both{DeviceType::kCPU, {0, 1}, {2}};
  const int x = s.g.add_input({{4}, DType::kFloat32, Device{}, both, NdSbp::parse("B")});
  const int y = s.g.add_input({{4}, DType::kFloat32, Device{}, both, NdSbp::parse("B")});
  const int y1 = s.move(y, kStage1, -1, -1, false);
  const int y1_cut = s.op("neg", y1, kStage1, -1, -1, false);
  const int x0 = s.move(x, kStage0, -1, -1, false);
  const int g0 = s.micro_batch(x0, 0);
  s.g.add_node(graph::op_node(op_def("add"), {g0, y1_cut}, {s.value(kStage0)}));
  s.g.set_outputs({s.g.nodes().back().outputs[0]});
  const Graph out = order_by_schedule(s.g, {ScheduleKind::k1F1B, 1, {kStage0, kStage1}});
  EXPECT_EQ(out.nodes()[0].outputs[0], x0);
  EXPECT_EQ(out.nodes()[1].outputs[0], y1);
  EXPECT_EQ(out.nodes()[2].outputs[0], y1_cut);
  EXPECT_EQ(actions(out), "- F0s0 F0s1 B0s1 B0s0 -");
}

TEST(PipelinePass, StagesMustGoRoundDisjointPlacements) {
  const Placement a{DeviceType::kCPU, {0, 1}, {2}}, b{DeviceType::kCPU, {1, 2}, {2}};
  EXPECT_NE(error_of([&] {
              stage_schedule({ScheduleKind::k1F1B, 2, {a, b}});
            }).find("stage 1 on cpu[1, 2] overlaps stage 0 on cpu[0, 1]"),
            std::string::npos);
  const Placement c{DeviceType::kCPU, {2, 3}, {2}};
  EXPECT_NE(error_of([&] {
              stage_schedule({ScheduleKind::kInterleaved, 2, {a, c, c, a}});
            }).find("stage 2 is on cpu[2, 3], but 4 stages over 2 placements go round them"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              stage_schedule({ScheduleKind::k1F1B, 2, {a, c, a, c}});
            }).find("4 stages on 2 placements need the interleaved_1f1b schedule"),
            std::string::npos);
  EXPECT_EQ(stage_schedule({ScheduleKind::kInterleaved, 2, {a, c, a, c}}).chunks, 2);
}

TEST(PipelinePass, AnOrderReadingAValueBeforeItIsMadeRaisesNamingTheNode) {
  TwoStages s;
  const int x = s.g.add_input({{4}, DType::kFloat32, Device{}, kStage0, NdSbp::parse("B")});
  const int a = s.op("exp", x, kStage0, 0, 1, false);  // mistagged: stage 1's forward ...
  s.op("neg", a, kStage0, 0, 0, false);                // ... read by stage 0's, which runs first
  EXPECT_NE(error_of([&] {
              order_by_schedule(s.g, {ScheduleKind::k1F1B, 1, {kStage0, kStage1}});
            }).find("would run node 1 (neg, stage 0, micro-batch 0) before the node making its"),
            std::string::npos);
}
