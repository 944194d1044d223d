#include "core/safetensors.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ofl::internal::safetensors {

namespace {

constexpr const char* kOp = "load";
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;  // as serialization.py

DType dtype_of_code(const std::string& path, const std::string& name, const std::string& code) {
  static const std::map<std::string, DType> codes = {
      {"F32", DType::kFloat32},   {"F64", DType::kFloat64}, {"F16", DType::kFloat16},
      {"BF16", DType::kBFloat16}, {"I8", DType::kInt8},     {"U8", DType::kUInt8},
      {"I32", DType::kInt32},     {"I64", DType::kInt64},   {"BOOL", DType::kBool}};
  auto it = codes.find(code);
  if (it == codes.end())
    fail(kOp, path, ": tensor '", name, "' has dtype '", code, "', which this build does not read");
  return it->second;
}

}  // namespace

std::map<std::string, Tensor> read(const std::string& path, const std::set<std::string>* only) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) fail(kOp, "cannot open ", path);
  const uint64_t size = uint64_t(f.tellg());
  f.seekg(0);
  unsigned char len[8];
  if (size < 8 || !f.read(reinterpret_cast<char*>(len), 8))
    fail(kOp, path, " is ", size, " bytes: too short for a safetensors header (truncated?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes || n > size - 8)
    fail(kOp, path, ": the header claims ", n, " bytes but the file has ", size - 8,
         " after the length (truncated or not safetensors)");
  std::string text(n, '\0');
  f.read(text.data(), std::streamsize(n));
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    fail(kOp, path, ": the header is not a JSON object (corrupt or not safetensors)");
  const uint64_t data_bytes = size - 8 - n;
  std::map<std::string, Tensor> out;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    const bool ok = e.is_object() && e.contains("dtype") && e["dtype"].is_string() &&
                    e.contains("shape") && e["shape"].is_array() && e.contains("data_offsets") &&
                    e["data_offsets"].is_array() && e["data_offsets"].size() == 2 &&
                    e["data_offsets"][0].is_number_unsigned() &&
                    e["data_offsets"][1].is_number_unsigned();
    if (!ok)
      fail(kOp, path, ": tensor '", name,
           "' needs a dtype, a shape and data_offsets [begin, end] in the header");
    Shape shape;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned()) fail(kOp, path, ": tensor '", name, "' has a bad shape");
      shape.push_back(d.get<int64_t>());
    }
    const DType dtype = dtype_of_code(path, name, e["dtype"].get<std::string>());
    const uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    const uint64_t want = uint64_t(numel_of(shape)) * itemsize(dtype);
    if (begin > end || end > data_bytes || end - begin != want)
      fail(kOp, path, ": tensor '", name, "' (", shape_str(shape), " ", dtype_name(dtype), ", ",
           want, " bytes) claims bytes [", begin, ", ", end, ") of ", data_bytes,
           " (truncated or corrupt)");
    if (only && !only->count(name)) continue;
    Tensor t = Tensor::empty(shape, dtype);
    f.seekg(std::streamoff(8 + n + begin));
    if (want && !f.read(static_cast<char*>(t.raw_data()), std::streamsize(want)))
      fail(kOp, path, ": reading tensor '", name, "' failed (truncated?)");
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace ofl::internal::safetensors
