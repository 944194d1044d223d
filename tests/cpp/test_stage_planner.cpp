// The planner's inter-op search (graph/auto_parallel/stages.h) on cost tables, without ranks:
// exact against enumerating every choice, and the choices a memory budget forces.
#include <gtest/gtest.h>

#include <random>

#include "graph/auto_parallel/stages.h"
#include "graph/pipeline/schedule.h"
#include "test_util.h"

using namespace ofl::internal::auto_parallel;
using ofl::internal::testing::error_of;

namespace {

// Every choice under the same model, the least step that fits (inf when none does).
double brute_force(const std::vector<StageOption>& options, int devices, double budget) {
  double best = std::numeric_limits<double>::infinity();
  for (const StageOption& o : options) {
    const int L = int(o.layers.size()), S = devices / o.devices_per_stage;
    if (devices % o.devices_per_stage || S > L) continue;
    // Every set of S - 1 cut points among the L - 1 gaps, as a bit mask.
    for (unsigned mask = 0; mask < (1u << (L - 1)); ++mask) {
      if (__builtin_popcount(mask) != S - 1) continue;
      std::vector<int> first{0};
      for (int g = 0; g < L - 1; ++g)
        if (mask >> g & 1) first.push_back(g + 1);
      for (bool recompute : {false, true}) {
        bool fits = true;
        for (int s = 0; s < S; ++s) fits &= stage_bytes(o, first, s, recompute) <= budget;
        if (fits) best = std::min(best, pipeline_seconds(o, first, recompute));
      }
    }
  }
  return best;
}

std::vector<StageOption> random_options(std::mt19937& rng, int layers) {
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<StageOption> out;
  for (int d : {1, 2, 4, 8})
    for (int m : {1, 2, 4}) {
      StageOption o{.devices_per_stage = d, .micro_batches = m, .send_seconds = 0.1 * u(rng)};
      for (int l = 0; l < layers; ++l) {
        const double work = u(rng) / d / m;  // fewer devices and larger micro-batches: slower
        o.layers.push_back({.forward = work,
                            .backward = 2 * work * u(rng),
                            .update = 0.3 * u(rng) / d,
                            .state_bytes = 100 * u(rng) / d,
                            .activation_bytes = 50 * u(rng) / d / m,
                            .input_bytes = 5 * u(rng) / d / m});
      }
      out.push_back(std::move(o));
    }
  return out;
}

}  // namespace

TEST(StagePlanner, MatchesEnumeratingEverySplitMicroBatchCountAndRecomputation) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int layers = 3 + trial % 5;
    const std::vector<StageOption> options = random_options(rng, layers);
    for (double budget : {1e9, 400.0, 150.0, 60.0}) {
      const double want = brute_force(options, 8, budget);
      if (std::isinf(want)) {
        EXPECT_NE(error_of([&] { plan_stages(options, 8, budget); }).find("no pipeline fits"),
                  std::string::npos);
        continue;
      }
      const PipelineChoice got = plan_stages(options, 8, budget);
      EXPECT_NEAR(got.seconds, want, 1e-12 * want) << "trial " << trial << " budget " << budget;
      for (double b : got.stage_bytes) EXPECT_LE(b, budget);
      EXPECT_EQ(got.stages * got.devices_per_stage, 8);
    }
  }
}

TEST(StagePlanner, AMemoryBudgetForcesStagesThenRecomputation) {
  // 8 equal layers on 4 devices: one stage of 4 is fastest (no fill, no sends) when it fits.
  StageOption one{.devices_per_stage = 4, .micro_batches = 4, .send_seconds = 0.01};
  StageOption four{.devices_per_stage = 1, .micro_batches = 4, .send_seconds = 0.01};
  for (int l = 0; l < 8; ++l) {
    one.layers.push_back({.forward = 0.25,
                          .backward = 0.5,
                          .state_bytes = 40,
                          .activation_bytes = 10,
                          .input_bytes = 1});
    four.layers.push_back({.forward = 1,
                           .backward = 2,
                           .state_bytes = 160,
                           .activation_bytes = 40,
                           .input_bytes = 4});
  }
  const std::vector<StageOption> options{one, four};
  const PipelineChoice fast = plan_stages(options, 4, 1e9);
  EXPECT_EQ(fast.stages, 1);
  EXPECT_FALSE(fast.recompute);
  // 8 x 160 of state does not fit 700 on one device: four stages of two layers, the first
  // holding 4 micro-batches' activations (2 x 160 + 4 x 80 = 640)...
  const PipelineChoice staged = plan_stages({four}, 4, 700);
  EXPECT_EQ(staged.stages, 4);
  EXPECT_EQ(staged.first_layer, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_FALSE(staged.recompute);
  // ... and within 400 only recomputation fits (2 x 160 + 4 x 8 + 40 = 392).
  const PipelineChoice tight = plan_stages({four}, 4, 400);
  EXPECT_TRUE(tight.recompute);
  EXPECT_NE(tight.str().find("4 stages x 1 devices, 4 micro-batches, recomputing activations"),
            std::string::npos);
  EXPECT_NE(error_of([&] { plan_stages({four}, 4, 300); })
                .find("the least any choice of stages, micro-batches and recomputation needs is "
                      "392 bytes"),
            std::string::npos);
}

TEST(StagePlanner, RecomputationCanBeForcedOrForbidden) {
  StageOption four{.devices_per_stage = 1, .micro_batches = 4, .send_seconds = 0.01};
  for (int l = 0; l < 8; ++l)
    four.layers.push_back({.forward = 1,
                           .backward = 2,
                           .state_bytes = 160,
                           .activation_bytes = 40,
                           .input_bytes = 4});
  // With room for the activations the search keeps them; forced, it recomputes, and the step
  // is the one recomputing predicts: each stage runs its forward twice.
  const PipelineChoice kept = plan_stages({four}, 4, 1e9);
  const PipelineChoice forced = plan_stages({four}, 4, 1e9, Recompute::kAlways);
  EXPECT_FALSE(kept.recompute);
  EXPECT_TRUE(forced.recompute);
  EXPECT_NEAR(forced.seconds, pipeline_seconds(four, forced.first_layer, true), 1e-12);
  EXPECT_NEAR(forced.seconds - kept.seconds, 4 * 2 + 3 * 2, 1e-9);  // 7 micro-batch forwards
  EXPECT_EQ(plan_stages({four}, 4, 1e9, Recompute::kNever).seconds, kept.seconds);
  // Within 400 only recomputation fits: forbidden, nothing does, and the error says so (the
  // least without: layers split 1, 2, 2, 3, stage s holding 4 - s micro-batches, 3 x 160 + 120).
  EXPECT_TRUE(plan_stages({four}, 4, 400, Recompute::kEither).recompute);
  EXPECT_NE(error_of([&] {
              plan_stages({four}, 4, 400, Recompute::kNever);
            }).find("recomputation (never recomputing) needs is 600 bytes"),
            std::string::npos);
  EXPECT_EQ(parse_recompute("always"), Recompute::kAlways);
  EXPECT_NE(error_of([] { parse_recompute("sometimes"); }).find("got \"sometimes\""),
            std::string::npos);
}

TEST(StagePlanner, TheInterleavedScheduleShrinksTheBubbleByItsChunksAndCountsItsSendsAndWarmUp) {
  // 8 equal layers between an empty first and last row, 2 stages of 2 chunks each, 4
  // micro-batches: virtual stage c runs layers 2c + 1, 2c + 2, device s virtual stages s, s + 2.
  StageOption o{.devices_per_stage = 1, .micro_batches = 4, .chunks = 2, .send_seconds = 0.5};
  o.layers.push_back({});
  for (int l = 0; l < 8; ++l)
    o.layers.push_back({.forward = 1,
                        .backward = 2,
                        .update = 0.25,
                        .state_bytes = 10,
                        .activation_bytes = 100,
                        .input_bytes = 1});
  o.layers.push_back({});
  const std::vector<int> first{0, 3, 5, 7};
  // Each device: 4 layers x 3 s, and 2v - 1 = 3 sends of 0.5 s (device 0 receives nothing first,
  // device 1 sends nothing last): t = 13.5 s; U = 1 s. T = (1/2)(13.5 + 13.5) + (4 - 1/2) 13.5 + 1.
  std::vector<double> per_device;
  EXPECT_DOUBLE_EQ(pipeline_seconds(o, first, false, &per_device), 13.5 + 3.5 * 13.5 + 1);
  EXPECT_EQ(per_device, (std::vector<double>{13.5, 13.5}));
  // In flight: device 0 min(2 (2 - 0 - 1) + (2 - 1) 2 + 1, 4 x 2) = 5 virtual stages, each half its
  // 400 bytes of activations; device 1 min(0 + 2 + 1, 8) = 3.
  EXPECT_DOUBLE_EQ(stage_bytes(o, first, 0, false), 40 + 5 * 400 / 2.0);
  EXPECT_DOUBLE_EQ(stage_bytes(o, first, 1, false), 40 + 3 * 400 / 2.0);
  // Recomputing: each layer's forward again, and the inputs in flight plus one layer's
  // activations.
  EXPECT_DOUBLE_EQ(pipeline_seconds(o, first, true), 17.5 + 3.5 * 17.5 + 1);
  EXPECT_DOUBLE_EQ(stage_bytes(o, first, 0, true), 40 + 5 * 4 / 2.0 + 100);

  // plan_stages splits evenly and reports the chunks; against 1F1B on the same costs the bubble
  // halves: (m + (S - 1)) t against (m + (S - 1)/2) t, sends aside.
  o.send_seconds = 0;
  const PipelineChoice interleaved = plan_stages({o}, 2, 1e9, Recompute::kNever);
  EXPECT_EQ(interleaved.chunks, 2);
  EXPECT_EQ(interleaved.first_layer, first);
  EXPECT_DOUBLE_EQ(interleaved.seconds, (4 + 0.5) * 12 + 1);
  StageOption plain = o;
  plain.chunks = 1;
  const PipelineChoice one = plan_stages({plain}, 2, 1e9, Recompute::kNever);
  EXPECT_EQ(one.chunks, 1);
  EXPECT_DOUBLE_EQ(one.seconds, (4 + 1) * 12 + 1);
  EXPECT_NE(interleaved.str().find("interleaved in 2 chunks a device"), std::string::npos);
  // 5 chunks of 2 stages leave a virtual stage without a layer: no choice, and the error says
  // why (with no budget, said as such).
  o.chunks = 5;
  const std::string none = error_of([&] { plan_stages({o}, 2, 1.0 / 0.0); });
  EXPECT_NE(none.find("no pipeline fits (with no memory budget)"), std::string::npos) << none;
  EXPECT_NE(none.find("a repeated layer for each of its virtual stages"), std::string::npos);
  // Nor 3 micro-batches on 2 stages interleaved: they go through in groups of the stages, as
  // the executor's schedule runs them (make_schedule refuses the same).
  o.chunks = 2;
  o.micro_batches = 3;
  EXPECT_NE(error_of([&] {
              plan_stages({o}, 2, 1e9);
            }).find("and micro-batches that divide into the stages"),
            std::string::npos);
  namespace pipeline = ofl::internal::graph::pipeline;
  EXPECT_THROW(pipeline::make_schedule(pipeline::ScheduleKind::kInterleaved, 2, 3, 2),
               ofl::internal::Error);
}

TEST(StagePlanner, TheInterleavedScheduleSplitsLayersUnevenlyAsWellAsEnumeratingEverySplit) {
  // Equal repeated layers between a first and a last row of their own costs; the stages'
  // counts need not divide (Llama 3: 126 layers on 16 stages). Against every split into S v
  // virtual stages of at least a repeated layer each, over budgets that bind.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.2, 3.0);
  for (int trial = 0; trial < 20; ++trial) {
    const int S = 2 + trial % 2, v = 2, R = 7 + trial % 4, L = R + 2;
    StageOption o{
        .devices_per_stage = 1, .micro_batches = 2 * S, .chunks = v, .send_seconds = 0.1 * u(rng)};
    const auto row = [&] {
      return LayerCost{.forward = u(rng),
                       .backward = 2 * u(rng),
                       .update = 0.3 * u(rng),
                       .state_bytes = 10 * u(rng),
                       .activation_bytes = 20 * u(rng),
                       .input_bytes = u(rng)};
    };
    const LayerCost layer = row();
    o.layers.push_back(row());
    o.layers.insert(o.layers.end(), size_t(R), layer);
    o.layers.push_back(row());
    for (double budget : {1e9, 200.0, 120.0, 80.0}) {
      double want = 1.0 / 0.0;
      for (unsigned mask = 0; mask < (1u << (L - 1)); ++mask) {  // cuts among the gaps
        if (__builtin_popcount(mask) != S * v - 1) continue;
        std::vector<int> first{0};
        for (int g = 0; g < L - 1; ++g)
          if (mask >> g & 1) first.push_back(g + 1);
        if (first[1] < 2 || first.back() > L - 2) continue;  // a virtual stage of no layer
        for (bool recompute : {false, true}) {
          bool fits = true;
          for (int s = 0; s < S; ++s) fits &= stage_bytes(o, first, s, recompute) <= budget;
          if (fits) want = std::min(want, pipeline_seconds(o, first, recompute));
        }
      }
      if (want == 1.0 / 0.0) {
        EXPECT_NE(error_of([&] { plan_stages({o}, S, budget); }).find("no pipeline fits"),
                  std::string::npos);
        continue;
      }
      const PipelineChoice got = plan_stages({o}, S, budget);
      EXPECT_NEAR(got.seconds, want, 1e-12 * want) << "trial " << trial << " budget " << budget;
      EXPECT_EQ(got.first_layer.size(), size_t(S * v));
      for (double b : got.stage_bytes) EXPECT_LE(b, budget);
    }
  }
}
