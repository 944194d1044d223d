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

}  // namespace
