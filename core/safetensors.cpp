#include "core/safetensors.h"

#include <zlib.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
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

// The CRC-32 flow.save writes for a tensor (in __metadata__["ofl.crc32"], by name): zlib's, over
// "CODE:d0,d1,..." and then the bytes, so a relabelled dtype or shape fails it as damaged bytes do.
uint32_t tensor_crc(const std::string& code, const Shape& shape, const void* data, size_t n) {
  std::string prefix = code + ":";
  for (size_t d = 0; d < shape.size(); ++d) prefix += (d ? "," : "") + std::to_string(shape[d]);
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(prefix.data()), uInt(prefix.size()));
  const auto* p = static_cast<const Bytef*>(data);
  for (size_t done = 0; done < n;) {  // zlib takes 32-bit lengths
    const size_t step = std::min<size_t>(n - done, size_t(1) << 30);
    crc = crc32(crc, p + done, uInt(step));
    done += step;
  }
  return uint32_t(crc);
}

// The checksums a file carries by tensor name (none when a foreign writer made it).
std::map<std::string, std::string> checksums(const std::string& path,
                                             const nlohmann::json& header) {
  std::map<std::string, std::string> out;
  if (!header.contains("__metadata__") || !header["__metadata__"].is_object()) return out;
  const auto& meta = header["__metadata__"];
  if (!meta.contains("ofl.crc32")) return out;
  const nlohmann::json sums =
      meta["ofl.crc32"].is_string()
          ? nlohmann::json::parse(meta["ofl.crc32"].get<std::string>(), nullptr, false)
          : nlohmann::json();
  if (!sums.is_object()) fail(kOp, path, ": the checksums in __metadata__ are not a JSON object");
  for (const auto& [name, v] : sums.items()) {
    if (!v.is_string()) fail(kOp, path, ": the checksum of '", name, "' is not a string");
    out[name] = v.get<std::string>();
  }
  return out;
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
  const std::map<std::string, std::string> sums = checksums(path, header);
  std::map<std::string, Tensor> out;
  std::map<uint64_t, std::pair<uint64_t, std::string>> extents;  // begin -> (end, tensor)
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
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(kOp, path, ": tensor '", name, "' has a bad shape");
      shape.push_back(d.get<int64_t>());
    }
    const DType dtype = dtype_of_code(path, name, e["dtype"].get<std::string>());
    const uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    uint64_t want = 0;
    try {
      want = uint64_t(nbytes_of(shape, itemsize(dtype), kOp));
    } catch (const Error&) {
      fail(kOp, path, ": tensor '", name, "' has shape ", shape_str(shape),
           ", whose byte size overflows 64 bits (corrupt)");
    }
    if (begin > end || end > data_bytes || end - begin != want)
      fail(kOp, path, ": tensor '", name, "' (", shape_str(shape), " ", dtype_name(dtype), ", ",
           want, " bytes) claims bytes [", begin, ", ", end, ") of ", data_bytes,
           " (truncated or corrupt)");
    if (begin < end) {
      // No two tensors may share bytes (safetensors' rule): a damaged header would alias them.
      auto next = extents.lower_bound(begin);
      if ((next != extents.end() && next->first < end) ||
          (next != extents.begin() && std::prev(next)->second.first > begin))
        fail(kOp, path, ": tensor '", name, "' claims bytes [", begin, ", ", end,
             ") that overlap tensor '",
             (next != extents.end() && next->first < end ? next : std::prev(next))->second.second,
             "' (corrupt)");
      extents.emplace(begin, std::make_pair(end, name));
    }
    if (only && !only->count(name)) continue;
    Tensor t = Tensor::empty(shape, dtype);
    f.seekg(std::streamoff(8 + n + begin));
    if (want && !f.read(static_cast<char*>(t.raw_data()), std::streamsize(want)))
      fail(kOp, path, ": reading tensor '", name, "' failed (truncated?)");
    if (!sums.empty() && !sums.count(name))
      fail(kOp, path, ": tensor '", name, "' has no checksum where the others have (damaged)");
    if (auto sum = sums.find(name); sum != sums.end()) {
      char got[9];
      std::snprintf(got, sizeof got, "%08x",
                    tensor_crc(e["dtype"].get<std::string>(), shape, t.raw_data(), want));
      if (sum->second != got)
        fail(kOp, path, ": tensor '", name, "' (", shape_str(shape), " ", dtype_name(dtype),
             ") fails its checksum (", got, ", saved ", sum->second, "): the file is damaged");
    }
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace ofl::internal::safetensors
