// Reading safetensors files (core/safetensors.h), written here byte by byte: tensors by name, and a
// clear error naming the file and the entry for every way a file can be cut short or corrupt.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/safetensors.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

// A file of `header` (JSON) and `data`, the header's length first as 8 little-endian bytes.
std::string write_file(const std::string& name, const std::string& header, const std::string& data,
                       int64_t claimed = -1) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream f(path, std::ios::binary);
  uint64_t n = claimed >= 0 ? uint64_t(claimed) : header.size();
  for (int i = 0; i < 8; ++i) f.put(char((n >> (8 * i)) & 0xff));
  f << header << data;
  return path;
}

std::string bytes_of(const void* p, size_t n) {
  return std::string(static_cast<const char*>(p), n);
}

const char* kHeader = R"({"__metadata__": {"format": "pt"},)"
                      R"( "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},)"
                      R"( "ids": {"dtype": "I64", "shape": [3], "data_offsets": [16, 40]}})";

std::string data() {
  const float w[] = {1, 2, 3, 4};
  const int64_t ids[] = {7, -1, 1LL << 40};
  return bytes_of(w, sizeof w) + bytes_of(ids, sizeof ids);
}

}  // namespace

TEST(Safetensors, ReadsEveryTensorByName) {
  const auto tensors = safetensors::read(write_file("ofl_ok.safetensors", kHeader, data()));
  ASSERT_EQ(tensors.size(), 2u);
  const Tensor& w = tensors.at("w");
  EXPECT_EQ(w.shape(), (Shape{2, 2}));
  EXPECT_EQ(w.dtype(), DType::kFloat32);
  EXPECT_EQ(std::vector<float>(w.data<float>(), w.data<float>() + 4),
            (std::vector<float>{1, 2, 3, 4}));
  const Tensor& ids = tensors.at("ids");
  EXPECT_EQ(ids.dtype(), DType::kInt64);
  EXPECT_EQ(ids.data<int64_t>()[2], int64_t(1) << 40);
}

TEST(Safetensors, CutOrCorruptFilesRaiseNamingTheFileAndTheEntry) {
  const std::string d = data();
  auto error = [](const std::string& path) { return error_of([&] { safetensors::read(path); }); };
  EXPECT_NE(error("/nonexistent/x.safetensors").find("cannot open /nonexistent/x.safetensors"),
            std::string::npos);
  // Cut inside the data: the last tensor's bytes run past the end.
  const std::string cut = write_file("ofl_cut.safetensors", kHeader, d.substr(0, 30));
  EXPECT_NE(error(cut).find(cut + ": tensor 'ids' ((3,) int64, 24 bytes) claims bytes [16, 40) of "
                                  "30 (truncated or corrupt)"),
            std::string::npos)
      << error(cut);
  // Cut inside the header, and a header length past the end.
  EXPECT_NE(error(write_file("ofl_h.safetensors", "{\"w\": {", "")).find("is not a JSON object"),
            std::string::npos);
  EXPECT_NE(error(write_file("ofl_n.safetensors", kHeader, d, 1 << 20)).find("truncated"),
            std::string::npos);
  std::ofstream(std::filesystem::temp_directory_path() / "ofl_short.safetensors") << "abc";
  EXPECT_NE(error((std::filesystem::temp_directory_path() / "ofl_short.safetensors").string())
                .find("is 3 bytes: too short for a safetensors header"),
            std::string::npos);
  // An entry whose size disagrees with its shape, and a dtype this build does not read.
  EXPECT_NE(
      error(write_file("ofl_s.safetensors",
                       R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", d))
          .find("tensor 'w' ((3,) float32, 12 bytes) claims bytes [0, 16)"),
      std::string::npos);
  EXPECT_NE(
      error(write_file("ofl_d.safetensors",
                       R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", d))
          .find("tensor 'w' has dtype 'F8_E4M3', which this build does not read"),
      std::string::npos);
  EXPECT_NE(error(write_file("ofl_m.safetensors", R"({"w": {"dtype": "F32"}})", d))
                .find("tensor 'w' needs a dtype, a shape and data_offsets"),
            std::string::npos);
}

TEST(Safetensors, ShapesWhoseSizeOverflowsRaiseInsteadOfWrapping) {
  // (2^62, 16) float32 is 2^68 bytes: wrapped to 64 bits it would claim 0 bytes.
  const std::string path = write_file(
      "ofl_wrap.safetensors",
      R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 16], "data_offsets": [0, 0]}})", "");
  const std::string e = error_of([&] { safetensors::read(path); });
  EXPECT_NE(e.find("overflows 64 bits"), std::string::npos) << e;
  const std::string huge = write_file(
      "ofl_huge_dim.safetensors",
      R"({"w": {"dtype": "U8", "shape": [18446744073709551615], "data_offsets": [0, 0]}})", "");
  EXPECT_NE(error_of([&] { safetensors::read(huge); }).find("bad shape"), std::string::npos);
}

TEST(Safetensors, OverlappingDataOffsetsRaiseNamingBothTensors) {
  const std::string path =
      write_file("ofl_overlap.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                 R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                 data().substr(0, 16));
  const std::string e = error_of([&] { safetensors::read(path); });
  EXPECT_NE(e.find("overlap tensor"), std::string::npos) << e;
}

namespace {

// A file as flow.save writes it: __metadata__["ofl.crc32"] holds each tensor's CRC-32 (zlib's)
// over "CODE:d0,d1" and then its bytes; here for w (F32 (2, 2)) and ids (I64 (3,)).
std::string checksummed_header(const std::string& w_crc, const std::string& w_code = "F32") {
  return R"({"__metadata__": {"ofl.crc32": "{\"w\":\")" + w_crc +
         R"(\",\"ids\":\"043a8f72\"}"}, "w": {"dtype": ")" + w_code +
         R"(", "shape": [2, 2], "data_offsets": [0, 16]},)"
         R"( "ids": {"dtype": "I64", "shape": [3], "data_offsets": [16, 40]}})";
}

}  // namespace

TEST(Safetensors, ChecksumsCatchFlippedBytesAndRelabelledDtypes) {
  // The CRCs below are Python's zlib.crc32 of the same prefix and bytes (the writer's side).
  const std::string good = "9d68b901";
  const std::string ok = write_file("ofl_crc.safetensors", checksummed_header(good), data());
  EXPECT_EQ(safetensors::read(ok).at("w").data<float>()[3], 4.0f);
  std::string flipped = data();
  flipped[5] ^= 0x10;
  const std::string damaged =
      write_file("ofl_crc_bad.safetensors", checksummed_header(good), flipped);
  std::string e = error_of([&] { safetensors::read(damaged); });
  EXPECT_NE(e.find(damaged + ": tensor 'w' ((2, 2) float32) fails its checksum"), std::string::npos)
      << e;
  // The same bytes labelled int32: the bytes are intact, the label is not.
  const std::string relabelled =
      write_file("ofl_crc_i32.safetensors", checksummed_header(good, "I32"), data());
  e = error_of([&] { safetensors::read(relabelled); });
  EXPECT_NE(e.find("tensor 'w' ((2, 2) int32) fails its checksum"), std::string::npos) << e;
}

namespace {

std::string file_bytes(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return out + header + data;
}

}  // namespace

TEST(Safetensors, ReturnsTheMetadataAndTheTensorsInFileOrder) {
  // "w" before "ids" in the file, though not by name.
  const std::string path = write_file("ofl_order.safetensors", kHeader, data());
  for (const safetensors::Contents& c :
       {safetensors::read_file(path), safetensors::read_bytes(file_bytes(kHeader, data()))}) {
    EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
    ASSERT_EQ(c.tensors.size(), 2u);
    EXPECT_EQ(c.tensors[0].first, "w");
    EXPECT_EQ(c.tensors[1].first, "ids");
    EXPECT_EQ(c.tensors[1].second.data<int64_t>()[2], int64_t(1) << 40);
  }
  const std::set<std::string> only = {"ids"};
  const auto some = safetensors::read_file(path, &only);
  ASSERT_EQ(some.tensors.size(), 1u);
  EXPECT_EQ(some.tensors[0].first, "ids");
}

TEST(Safetensors, BytesNoTensorClaimsRaiseFromAPathAndFromBytes) {
  const std::string one = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  const std::string gap = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})";
  for (const auto& [header, payload] :
       {std::pair{one, std::string(12, '\0')}, std::pair{gap, std::string(12, '\0')}}) {
    const std::string path = write_file("ofl_unclaimed.safetensors", header, payload);
    std::string e = error_of([&] { safetensors::read_file(path); });
    EXPECT_NE(e.find(path + ": 4 of the 12 data bytes belong to no tensor"), std::string::npos)
        << e;
    e = error_of([&] { safetensors::read_bytes(file_bytes(header, payload)); });
    EXPECT_NE(e.find("<bytes>: 4 of the 12 data bytes belong to no tensor"), std::string::npos)
        << e;
  }
}

TEST(Safetensors, TruncatedBytesRaiseNamingThemAndTheEntry) {
  const std::string e =
      error_of([&] { safetensors::read_bytes(file_bytes(kHeader, data().substr(0, 30)), "<f>"); });
  EXPECT_NE(e.find("<f>: tensor 'ids' ((3,) int64, 24 bytes) claims bytes [16, 40) of 30"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([] { safetensors::read_bytes("abc"); }).find("<bytes> is 3 bytes"),
            std::string::npos);
}

TEST(Safetensors, MetadataMustMapStringsToStrings) {
  for (const std::string meta : {R"({"epoch": 3})", R"([1])", R"("x")"}) {
    const std::string header = R"({"__metadata__": )" + meta + "}";
    const std::string path = write_file("ofl_meta.safetensors", header, "");
    std::string e = error_of([&] { safetensors::read_file(path); });
    EXPECT_NE(e.find(path + ": __metadata__ must map strings to strings"), std::string::npos) << e;
    e = error_of([&] { safetensors::read_bytes(file_bytes(header, "")); });
    EXPECT_NE(e.find("<bytes>: __metadata__ must map strings to strings"), std::string::npos) << e;
  }
  const std::string null_meta = R"({"__metadata__": null})";
  EXPECT_TRUE(safetensors::read_bytes(file_bytes(null_meta, "")).metadata.empty());
}

TEST(Safetensors, BadChecksumsRaiseFromBytesToo) {
  std::string flipped = data();
  flipped[17] ^= 0x10;  // in ids
  const std::string e = error_of(
      [&] { safetensors::read_bytes(file_bytes(checksummed_header("9d68b901"), flipped)); });
  EXPECT_NE(e.find("<bytes>: tensor 'ids' ((3,) int64) fails its checksum"), std::string::npos)
      << e;
  EXPECT_EQ(
      safetensors::read_bytes(file_bytes(checksummed_header("9d68b901"), data())).tensors.size(),
      2u);
}

TEST(Safetensors, AMissingFileRaisesNotFound) {
  EXPECT_THROW(safetensors::read_file("/nonexistent/x.safetensors"), NotFoundError);
}
