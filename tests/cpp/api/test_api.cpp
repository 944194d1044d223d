// The public C++ API (oneflowlike/), as an inference server uses it: graphs saved from Python by
// save_graphs.py (the ctest fixture), compared with Python eager's outputs; and planning, from
// the inputs Python's plan_pipeline saved, compared with Python's plan.
#include <gtest/gtest.h>

#include <unistd.h>

#include <oneflowlike/oneflowlike.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string saved(const std::string& name) {
  const char* dir = std::getenv("OFL_API_SAVED");
  if (!dir) throw std::runtime_error("OFL_API_SAVED is not set (ctest runs save_graphs.py first)");
  return std::string(dir) + "/" + name;
}

const std::map<std::string, ofl::Tensor>& expected() {
  static const auto tensors = ofl::load_tensors(saved("expected.safetensors"));
  return tensors;
}

const ofl::Tensor& want(const std::string& name) {
  return expected().at(name);
}

// Within float tolerance: the graph fuses and orders some reductions differently from eager.
void expect_close(const ofl::Tensor& got, const ofl::Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), ofl::DType::kFloat32);
  const std::vector<float> a = got.to_vector<float>(), b = want.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5f) << "at element " << i;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ofl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Api, LoadsTheGraphAndNamesItsInputsAndOutputs) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt"));
  ASSERT_EQ(g.input_infos().size(), 1u);
  const ofl::TensorInfo& in = g.input_infos()[0];
  EXPECT_EQ(in.name, "idx");
  EXPECT_EQ(in.dtype, ofl::DType::kInt64);
  EXPECT_EQ(in.shape, (std::vector<int64_t>{-1, 8}));
  EXPECT_EQ(in.device, ofl::Device("cpu"));
  ASSERT_EQ(g.output_infos().size(), 1u);
  EXPECT_EQ(g.output_infos()[0].name, "output");
  EXPECT_EQ(g.output_infos()[0].shape, (std::vector<int64_t>{-1, 8, 17}));
  EXPECT_EQ(g.saved_batch(), 2);
  EXPECT_TRUE(g.dynamic_batch());
  EXPECT_NE(g.str().find("idx: (-1, 8) int64 -> output: (-1, 8, 17) float32"), std::string::npos)
      << g.str();

  const ofl::Graph two = ofl::Graph::load(saved("two_outputs"));
  ASSERT_EQ(two.output_infos().size(), 2u);
  EXPECT_EQ(two.output_infos()[1].name, "output1");
  const std::vector<ofl::Tensor> outs = two.forward({want("idx2")});
  ASSERT_EQ(outs.size(), 2u);
  expect_close(outs[0], want("logits2"));
}

TEST(Api, ForwardEqualsPythonEagerAtTheSavedBatch) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt"));
  std::vector<int64_t> ids = want("idx2").to_vector<int64_t>();
  // The caller's buffer, not copied.
  const std::vector<ofl::Tensor> out =
      g.forward({ofl::Tensor::from_blob(ids.data(), {2, 8}, ofl::DType::kInt64)});
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], want("logits2"));
  EXPECT_EQ(out[0].data<float>()[0], out[0].to_vector<float>()[0]);
}

TEST(Api, TheBatchMayChangeFromCallToCall) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt"));
  for (int batch : {3, 1, 2, 3, 1}) {
    const std::string b = std::to_string(batch);
    const std::vector<ofl::Tensor> out = g.forward({want("idx" + b)});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{batch, 8, 17}));
    expect_close(out[0], want("logits" + b));
  }
  g.warmup(5);
  std::vector<int64_t> big(5 * 8, 3);
  EXPECT_EQ(g.forward({ofl::Tensor::from_vector(big, {5, 8})})[0].shape()[0], 5);
}

TEST(Api, ForwardFromEightThreadsAtOnceGivesEachThreadItsOwnAnswer) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt"));
  constexpr int kThreads = 8, kCalls = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int call = 0; call < kCalls; ++call) {
        const std::string b = std::to_string(1 + (t + call) % 3);  // batch sizes interleave
        const std::vector<float> got = g.forward({want("idx" + b)})[0].to_vector<float>();
        const std::vector<float> ref = want("logits" + b).to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i)
          if (std::abs(got[i] - ref[i]) > 1e-5f) {
            failures[t] =
                "thread " + std::to_string(t) + " batch " + b + " element " + std::to_string(i);
            return;
          }
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(Api, AGraphSavedForOneBatchSizeTakesOnlyThat) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt_static"));
  EXPECT_FALSE(g.dynamic_batch());
  EXPECT_EQ(g.input_infos()[0].shape, (std::vector<int64_t>{2, 8}));
  expect_close(g.forward({want("idx2")})[0], want("logits2"));
  EXPECT_NE(error_of([&] {
              g.forward({want("idx3")});
            }).find("input 0 is (3, 8) int64 where the graph takes idx: (2, 8) int64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.warmup(3); }).find("one batch size only"), std::string::npos);
}

TEST(Api, BadInputsRaiseNamingTheInput) {
  const ofl::Graph g = ofl::Graph::load(saved("gpt"));
  std::vector<float> floats(16, 0.f);
  std::vector<int64_t> ids(18, 1);
  EXPECT_NE(error_of([&] {
              g.forward({});
            }).find("[forward] the graph takes 1 input (idx: (-1, 8) int64), got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              g.forward({ofl::Tensor::from_vector(floats, {2, 8})});
            }).find("input 0 is (2, 8) float32 where the graph takes idx: (-1, 8) int64"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              g.forward({ofl::Tensor::from_vector(ids, {2, 9})});
            })
                .find("input 0 is (2, 9) int64 where the graph takes idx: (-1, 8) int64 "
                      "(-1: any batch size)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.forward({ofl::Tensor()}); }).find("undefined tensor"),
            std::string::npos);
  EXPECT_NE(error_of([&] { g.forward({ofl::Tensor::from_vector(ids, {0, 8})}); }), "(no error)");
  EXPECT_NE(
      error_of([&] { want("logits2").data<int64_t>(); }).find("data<int64>() of a float32 tensor"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              ofl::Tensor::from_vector(ids, {4, 4});
            }).find("18 values do not fill shape (4, 4)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ofl::Device("tpu"); }).find("unknown device 'tpu'"), std::string::npos);
}

TEST(Api, BadFoldersRaiseNamingTheFile) {
  namespace fs = std::filesystem;
  EXPECT_NE(error_of([] {
              ofl::Graph::load("/nonexistent/graph");
            }).find("cannot open /nonexistent/graph/graph.json"),
            std::string::npos);
  const fs::path dir = fs::temp_directory_path() / ("ofl_api_bad_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(saved("gpt"), dir);
  { std::ofstream(dir / "weights.safetensors", std::ios::trunc) << "xx"; }
  EXPECT_NE(error_of([&] { ofl::Graph::load(dir.string()); }).find("weights.safetensors"),
            std::string::npos);
  fs::copy_file(fs::path(saved("gpt")) / "weights.safetensors", dir / "weights.safetensors",
                fs::copy_options::overwrite_existing);
  { std::ofstream(dir / "graph.json", std::ios::trunc) << "{\"format_version\": 1, \"values\": ["; }
  EXPECT_NE(error_of([&] { ofl::Graph::load(dir.string()); }).find("graph.json: not a JSON object"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Api, LoadingOnAnUnavailableDeviceRaisesNamingIt) {
  // No machine has 64 GPUs in one process's view (cuda:0 exists where a GPU is lent).
  const std::string err = error_of([] { ofl::Graph::load(saved("gpt"), ofl::Device("cuda", 63)); });
  EXPECT_NE(err.find("cuda:63"), std::string::npos) << err;
}

TEST(Api, PlansThePipelinePythonPlannedFromTheInputsItSaved) {
  const std::string dir = saved("pipeline");
  const nlohmann::json want = nlohmann::json::parse(std::ifstream(dir + "/python_plan.json"));
  const ofl::PipelinePlan got = ofl::plan_pipeline(dir);
  EXPECT_EQ(got.description, want["description"].get<std::string>());
  EXPECT_EQ(got.stages, want["stages"].get<int>());
  EXPECT_GT(got.stages, 1);
  EXPECT_EQ(got.devices_per_stage, want["devices_per_stage"].get<int>());
  EXPECT_EQ(got.micro_batches, want["micro_batches"].get<int>());
  EXPECT_EQ(got.recompute, want["recompute"].get<bool>());
  EXPECT_EQ(got.first_layer, want["first_layer"].get<std::vector<int>>());
  EXPECT_DOUBLE_EQ(got.seconds, want["seconds"].get<double>());
  const auto stage_seconds = want["stage_seconds"].get<std::vector<double>>();
  const auto stage_bytes = want["stage_bytes"].get<std::vector<double>>();
  ASSERT_EQ(got.stage_seconds.size(), stage_seconds.size());
  for (size_t s = 0; s < stage_seconds.size(); ++s) {
    EXPECT_DOUBLE_EQ(got.stage_seconds[s], stage_seconds[s]);
    EXPECT_DOUBLE_EQ(got.stage_bytes[s], stage_bytes[s]);
  }
  EXPECT_EQ(got.options, (want["options"].get<std::vector<std::pair<int, int>>>()));
  EXPECT_EQ(got.layouts, (want["layouts"].get<std::map<std::string, std::string>>()));
  EXPECT_FALSE(got.layouts.empty());
  // A budget no choice fits names the least memory any needs.
  const std::string err = error_of([&] { ofl::plan_pipeline(dir, 1e3); });
  EXPECT_NE(err.find("the least any choice of stages"), std::string::npos) << err;
}

TEST(Api, PlanningFromAFolderPlanPipelineDidNotWriteRaisesNamingIt) {
  const std::string err = error_of([] { ofl::plan_pipeline(saved("gpt")); });
  EXPECT_NE(err.find("gpt/pipeline.json (not a folder plan_pipeline(save=...) wrote?)"),
            std::string::npos)
      << err;
}

// --- Generation (ofl::Generator, on the GPT save_graphs.py saved for it) ---

const std::vector<std::vector<int64_t>> kPrompts = {{1, 2, 3}, {4, 5, 6, 7, 8}, {9}};

// Runs the prompts `which` of kPrompts together, greedy, to the cache's end, checking every step's
// logits against Python's full window (gen_logits<i>) and counting each prompt's tokens.
void expect_full_window_logits(const std::vector<size_t>& which) {
  ofl::Generator gen = ofl::Generator::load(saved("generation"), int64_t(which.size()));
  std::map<int64_t, size_t> prompt_of;
  for (size_t i : which) prompt_of[gen.add(kPrompts[i], {.max_new_tokens = 8})] = i;
  std::map<size_t, int64_t> steps;
  while (gen.running()) {
    const std::vector<ofl::Made> made = gen.step();
    const std::vector<float> logits = gen.last_logits().to_vector<float>();
    ASSERT_EQ(int64_t(logits.size()), int64_t(made.size()) * 17);
    for (size_t r = 0; r < made.size(); ++r) {
      const size_t i = prompt_of.at(made[r].id);
      const std::vector<float> full = want("gen_logits" + std::to_string(i)).to_vector<float>();
      const int64_t at = steps[i]++;
      ASSERT_LT((at + 1) * 17, int64_t(full.size()) + 1) << "prompt " << i << " made too many";
      for (int64_t v = 0; v < 17; ++v)
        ASSERT_NEAR(logits[r * 17 + size_t(v)], full[size_t(at * 17 + v)], 1e-4f)
            << "prompt " << i << ", token " << at << ", logit " << v;
    }
  }
  // Each made tokens up to the cache's end: length - prompt + 1.
  for (size_t i : which) EXPECT_EQ(steps[i], 8 - int64_t(kPrompts[i].size()) + 1) << "prompt " << i;
}

TEST(Generator, EveryStepsLogitsAreTheFullWindowsForARaggedBatch) {
  const ofl::Generator gen = ofl::Generator::load(saved("generation"), 3);
  EXPECT_EQ(gen.length(), 8);
  EXPECT_EQ(gen.vocab_size(), 17);
  expect_full_window_logits({0, 1, 2});
}

TEST(Generator, EveryStepsLogitsAreTheFullWindowsForOneSequence) {
  for (size_t i = 0; i < kPrompts.size(); ++i) expect_full_window_logits({i});
}

TEST(Generator, SeededSamplingGivesPythonsTokens) {
  ofl::Generator gen = ofl::Generator::load(saved("generation"), 4);
  std::vector<ofl::Sampling> sampling;
  for (int64_t seed : {11, 12, 13})
    sampling.push_back(
        {.temperature = 1.0, .top_k = 5, .top_p = 0.9, .seed = seed, .max_new_tokens = 4});
  const auto got = gen.generate(kPrompts, sampling);
  for (size_t i = 0; i < kPrompts.size(); ++i)
    EXPECT_EQ(got[i], want("sampled" + std::to_string(i)).to_vector<int64_t>()) << "prompt " << i;
}

TEST(Generator, ASequenceJoiningOrLeavingARunningBatchGetsItsTokensAlone) {
  ofl::Generator alone = ofl::Generator::load(saved("generation"), 1);
  std::vector<ofl::Sampling> sampling;
  for (int64_t i = 0; i < 5; ++i)
    sampling.push_back(
        {.temperature = 0.8, .top_k = 0, .top_p = 1, .seed = i, .max_new_tokens = 2 + i});
  const std::vector<std::vector<int64_t>> prompts = {{1}, {2, 3}, {4, 5, 6}, {7, 8, 9, 10}, {11}};
  std::vector<std::vector<int64_t>> want;
  for (size_t i = 0; i < prompts.size(); ++i)
    want.push_back(alone.generate({prompts[i]}, {sampling[i]})[0]);
  // Three slots; a new sequence every step while there is room; one cancelled midway.
  ofl::Generator gen = ofl::Generator::load(saved("generation"), 3);
  std::map<int64_t, size_t> index;
  std::vector<std::vector<int64_t>> got(prompts.size());
  size_t next = 0;
  int64_t cancelled = -1;
  for (int step = 0; step < 50 && (gen.running() || next < prompts.size()); ++step) {
    if (next < prompts.size() && gen.refusal(prompts[next], sampling[next]).empty()) {
      index[gen.add(prompts[next], sampling[next])] = next;
      ++next;
    }
    if (step == 2) gen.cancel(cancelled = gen.add({12, 13}, {.max_new_tokens = 5}));
    for (const ofl::Made& m : gen.step()) {
      ASSERT_NE(m.id, cancelled);
      got[index.at(m.id)].push_back(m.token);
    }
  }
  EXPECT_EQ(gen.running(), 0);
  EXPECT_EQ(got, want);
}

TEST(Generator, StopTokensEndASequenceWithTheReason) {
  ofl::Generator gen = ofl::Generator::load(saved("generation"), 1);
  const std::vector<int64_t> greedy = gen.generate({{1, 2, 3}}, {{.max_new_tokens = 3}})[0];
  ASSERT_EQ(greedy.size(), 3u);
  gen.add({1, 2, 3}, {.max_new_tokens = 3, .stop = {greedy[1]}});
  std::vector<ofl::Made> made;
  while (gen.running())
    for (const ofl::Made& m : gen.step()) made.push_back(m);
  ASSERT_EQ(made.size(), 2u);
  EXPECT_EQ(made[1].token, greedy[1]);
  EXPECT_TRUE(made[1].finished);
  EXPECT_EQ(made[1].finish_reason, "stop");
  gen.add({1, 2, 3}, {.max_new_tokens = 1});
  made = gen.step();
  EXPECT_EQ(made[0].finish_reason, "length");
}

TEST(Generator, BadRequestsAndAFullBatchAreRefusedWithTheReason) {
  ofl::Generator gen = ofl::Generator::load(saved("generation"), 2, ofl::Device(), 6);
  auto add_error = [&](std::vector<int64_t> prompt, ofl::Sampling s) {
    return error_of([&] { gen.add(prompt, s); });
  };
  EXPECT_NE(add_error({}, {}).find("the prompt is empty"), std::string::npos);
  EXPECT_NE(add_error({17}, {}).find("token 17 is not in [0, 17)"), std::string::npos);
  EXPECT_NE(add_error(std::vector<int64_t>(9, 1), {}).find("exceeds the 8 positions"),
            std::string::npos);
  EXPECT_NE(add_error({1}, {.temperature = -1}).find("temperature"), std::string::npos);
  EXPECT_NE(add_error({1}, {.top_p = 0}).find("top_p"), std::string::npos);
  EXPECT_NE(add_error({1}, {.max_new_tokens = 0}).find("max_new_tokens 0 < 1"), std::string::npos);
  EXPECT_NE(add_error({1}, {.stop = {-2}}).find("stop token -2"), std::string::npos);
  // max_tokens 6: a sequence reserves the cache positions it may fill (its prompt and its tokens
  // but the last, within the 8 of a slot).
  EXPECT_EQ(gen.positions_needed({1, 2, 3}, {.max_new_tokens = 10}), 8);
  EXPECT_EQ(gen.positions_needed({1, 2, 3}, {.max_new_tokens = INT64_MAX}), 8);
  EXPECT_NE(gen.refusal({1, 2, 3}, {.max_new_tokens = 10})
                .find("need 8 positions of the cache, over max_tokens 6"),
            std::string::npos);
  gen.add({1, 2}, {.max_new_tokens = 3});
  EXPECT_NE(gen.refusal({1}, {.max_new_tokens = 3}).find("reserve 4 of max_tokens 6"),
            std::string::npos);
  EXPECT_EQ(gen.refusal({1}, {.max_new_tokens = 2}), "");
  gen.add({1}, {.max_new_tokens = 2});
  EXPECT_NE(gen.refusal({1}, {.max_new_tokens = 1}).find("all 2 sequences"), std::string::npos);
  EXPECT_EQ(gen.invalid({1}, {.max_new_tokens = 1}), "");
  EXPECT_EQ(gen.running(), 2);
}

TEST(Generator, GenerateTakesMorePromptsThanTheBatchAndRefusesBadOnesFirst) {
  ofl::Generator one = ofl::Generator::load(saved("generation"), 1);
  ofl::Generator three = ofl::Generator::load(saved("generation"), 3);
  const ofl::Sampling s{.temperature = 0.7, .seed = 5, .max_new_tokens = 4};
  EXPECT_EQ(one.generate(kPrompts, {s}), three.generate(kPrompts, {s}));
  EXPECT_NE(error_of([&] {
              one.generate({{1}, {}}, {s});
            }).find("prompt 1: the prompt is empty"),
            std::string::npos);
  EXPECT_EQ(one.running(), 0);  // nothing was admitted
}

TEST(Generator, EncodesAndDecodesTheSavedVocabulary) {
  const ofl::Generator gen = ofl::Generator::load(saved("generation"), 1);
  ASSERT_TRUE(gen.has_vocabulary());
  EXPECT_EQ(gen.encode("bad"), (std::vector<int64_t>{1, 0, 3}));
  EXPECT_EQ(gen.decode({1, 0, 3}), "bad");
  EXPECT_NE(error_of([&] { gen.encode("bz"); }).find("\"z\" at byte 1 is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gen.encode("\xff"); }).find("at byte 0"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.decode({17}); }).find("token 17"), std::string::npos);
}

TEST(Generator, DamagedFoldersRaiseNamingTheFile) {
  const std::string dir = ::testing::TempDir() + "/damaged_generation";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(saved("generation"), dir, std::filesystem::copy_options::recursive);
  auto load_error = [&] { return error_of([&] { ofl::Generator::load(dir, 1); }); };
  auto write = [&](const std::string& text) { std::ofstream(dir + "/generation.json") << text; };
  write("{\"format\": \"oneflowlike-generation\", \"format_version\": 1, \"length\": 8");
  EXPECT_NE(load_error().find("generation.json: not a JSON object"), std::string::npos);
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16})");
  EXPECT_NE(load_error().find("\"graphs\" does not list the step graphs"), std::string::npos);
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16, "graphs": {"step": [[4, "step_8"]]}})");
  EXPECT_NE(load_error().find("no step graph spans the whole cache (8 positions)"),
            std::string::npos)
      << load_error();
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16,
            "graphs": {"step": [[8, "step_8"]], "prefill": [[4, "step_8"]]}})");
  EXPECT_NE(load_error().find("/step_8 is Graph("), std::string::npos) << load_error();
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16,
            "graphs": {"step": [[8, "step_8"]], "prefill": [[4, "prefill_8"]]}})");
  EXPECT_NE(load_error().find("/prefill_8 is Graph("), std::string::npos) << load_error();
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16, "graphs": {"step": [[9, "x"]]}})");
  EXPECT_NE(load_error().find("holds [9,\"x\"], not [span, folder]"), std::string::npos)
      << load_error();
  write(R"({"format": "oneflowlike-generation", "format_version": 1, "length": 8,
            "vocab_size": 17, "n_layer": 2, "n_embd": 16, "chars": ["a", "a"]})");
  EXPECT_NE(load_error().find("\"chars\" is not a list of vocab_size"), std::string::npos);
  std::filesystem::remove(dir + "/generation.json");
  EXPECT_NE(load_error().find("generation.json cannot be read"), std::string::npos);
  EXPECT_NE(error_of([] { ofl::Generator::load(saved("generation"), 0); }).find("max_batch 0"),
            std::string::npos);
}

}  // namespace
