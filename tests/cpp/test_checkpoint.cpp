// Reading distributed checkpoints (global/checkpoint.h) from folders written here by hand: the
// index checked before anything is read, pieces that must tile each tensor, shards read as the
// pieces a rank needs, and errors naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "global/checkpoint.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

namespace fs = std::filesystem;

// A folder holding `index` as index.json and w (4,) float32 = [1, 2, 3, 4] in two shards of
// two rows each, "a.safetensors" (rows [0, 2)) and "b.safetensors" (rows [2, 4)).
std::string write_checkpoint(const std::string& name, const std::string& index) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "index.json") << index;
  const float rows[2][2] = {{1, 2}, {3, 4}};
  for (int i = 0; i < 2; ++i) {
    const std::string header = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    std::ofstream f(dir / (i ? "b.safetensors" : "a.safetensors"), std::ios::binary);
    for (int b = 0; b < 8; ++b) f.put(char((uint64_t(header.size()) >> (8 * b)) & 0xff));
    f << header;
    f.write(reinterpret_cast<const char*>(rows[i]), sizeof rows[i]);
  }
  return dir.string();
}

std::string index_with(const std::string& pieces) {
  return R"({"format": "oneflowlike-checkpoint", "format_version": 1, "world_size": 2,)"
         R"( "tree": {"__dict__": [["w", {"__tensor__": "w"}]]},)"
         R"( "tensors": {"w": {"dtype": "float32", "shape": [4], "pieces": )" +
         pieces + "}}}";
}

const char* kPieces = R"([{"file": "a.safetensors", "key": "w", "ranges": [[0, 2]]},)"
                      R"( {"file": "b.safetensors", "key": "w", "ranges": [[2, 4]]}])";

}  // namespace

TEST(Checkpoint, ReadsTheIndexAndOnlyTheShardsARankNeeds) {
  const std::string dir = write_checkpoint("ofl_ckpt_ok", index_with(kPieces));
  checkpoint::Reader r(dir);
  ASSERT_EQ(r.tensors().size(), 1u);
  EXPECT_EQ(r.tensors()[0].name, "w");
  EXPECT_EQ(r.tensors()[0].shape, (Shape{4}));
  EXPECT_EQ(r.tree(), R"({"__dict__":[["w",{"__tensor__":"w"}]]})");
  EXPECT_EQ(r.files(), (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
  const Placement two = Placement::all(DeviceType::kCPU, 2);
  const Tensor second = r.read("w", {4}, DType::kFloat32, two, NdSbp({Sbp::split(0)}), {1});
  EXPECT_EQ(std::vector<float>(second.data<float>(), second.data<float>() + 2),
            (std::vector<float>{3, 4}));
  EXPECT_EQ(r.files_read(), (std::vector<std::string>{"b.safetensors"}));
  EXPECT_EQ(r.bytes_read(), (std::map<std::string, int64_t>{{"b.safetensors", 8}}));
  EXPECT_EQ(r.read("w", {4}, DType::kFloat32).data<float>()[0], 1.0f);
}

TEST(Checkpoint, AMissingFolderOrShardRaisesNotFound) {
  EXPECT_THROW(checkpoint::Reader("/nonexistent/ckpt"), NotFoundError);
  const std::string dir = write_checkpoint("ofl_ckpt_gone", index_with(kPieces));
  fs::remove(fs::path(dir) / "b.safetensors");
  checkpoint::Reader r(dir);
  const std::string e = error_of<NotFoundError>([&] { r.read("w", {4}, DType::kFloat32); });
  EXPECT_NE(e.find("b.safetensors: the checkpoint's shard file is missing"), std::string::npos)
      << e;
}

TEST(Checkpoint, AMalformedIndexRaisesNamingItAndTheEntry) {
  auto error = [](const std::string& index) {
    const std::string dir = write_checkpoint("ofl_ckpt_bad", index);
    return error_of([&] { checkpoint::Reader r(dir); });
  };
  EXPECT_NE(error("{").find("index.json is not JSON"), std::string::npos);
  EXPECT_NE(error("[]").find("index.json is not a JSON object but a list"), std::string::npos);
  const std::string twice = R"([{"file": "a.safetensors", "key": "w", "ranges": [[0, 2]]},)"
                            R"( {"file": "a.safetensors", "key": "w", "ranges": [[0, 2]]}])";
  EXPECT_NE(
      error(index_with(twice)).find("index.json: tensor 'w': pieces 0 and 1 overlap, so they"),
      std::string::npos);
  const std::string escapes = R"([{"file": "../a", "key": "w", "ranges": [[0, 4]]}])";
  EXPECT_NE(error(index_with(escapes)).find("tensor 'w': piece 0 names '../a', not a file"),
            std::string::npos);
}

TEST(Checkpoint, APieceOfTheWrongDtypeOrADamagedShardRaisesNamingTheShard) {
  const std::string dir = write_checkpoint("ofl_ckpt_dtype", index_with(kPieces));
  {
    std::string text = index_with(kPieces);
    text.replace(text.find("float32"), 7, "int32");
    std::ofstream(fs::path(dir) / "index.json") << text;
    checkpoint::Reader r(dir);
    const std::string e = error_of([&] { r.read("w", {4}, DType::kInt32); });
    EXPECT_NE(e.find("a.safetensors: tensor 'w' is F32 [2], index.json says I32 (int32) [2]"),
              std::string::npos)
        << e;
  }
  std::ofstream(fs::path(dir) / "a.safetensors", std::ios::app) << "trailing";
  std::ofstream(fs::path(dir) / "index.json") << index_with(kPieces);
  checkpoint::Reader r(dir);
  const std::string e = error_of([&] { r.read("w", {4}, DType::kFloat32); });
  EXPECT_NE(e.find("a.safetensors: 8 of the 16 data bytes belong to no tensor"), std::string::npos)
      << e;
}

TEST(Checkpoint, PiecesMustTileTheTensorExactly) {
  using checkpoint::tiling_error;
  EXPECT_EQ(tiling_error({6, 4}, {{{0, 3}, {0, 4}}, {{3, 6}, {0, 4}}}), "");
  EXPECT_EQ(tiling_error({}, {{}}), "");
  EXPECT_EQ(tiling_error({0, 3}, {}), "");
  // as many elements as the tensor, but row 2 twice and row 4 not at all
  EXPECT_EQ(tiling_error({5, 3}, {{{0, 3}, {0, 3}}, {{2, 4}, {0, 3}}}), "pieces 0 and 1 overlap");
  EXPECT_EQ(tiling_error({5, 3}, {{{0, 5}, {0, 3}}, {{0, 5}, {0, 3}}}),
            "its pieces hold 30 elements, its shape [5, 3] has 15");
  EXPECT_EQ(tiling_error({}, {{}, {}}), "its pieces hold 2 elements, its shape [] has 1");
}
