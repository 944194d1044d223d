#include "core/safetensors.h"

#include <zlib.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ofl::internal::safetensors {

namespace {

constexpr const char* kOp = "load";
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

const std::map<std::string, DType>& codes() {
  static const std::map<std::string, DType> codes = {
      {"F32", DType::kFloat32},   {"F64", DType::kFloat64}, {"F16", DType::kFloat16},
      {"BF16", DType::kBFloat16}, {"I8", DType::kInt8},     {"U8", DType::kUInt8},
      {"I32", DType::kInt32},     {"I64", DType::kInt64},   {"BOOL", DType::kBool}};
  return codes;
}

DType dtype_of_code(const std::string& path, const std::string& name, const std::string& code) {
  auto it = codes().find(code);
  if (it == codes().end())
    fail(kOp, path, ": tensor '", name, "' has dtype '", code, "', which this build does not read");
  return it->second;
}

// The CRC-32 flow.save writes for a tensor (in __metadata__["ofl.crc32"], by name): zlib's, over
// "CODE:d0,d1,..." and then the bytes, so a relabelled dtype or shape fails it as damaged bytes do.
uint32_t tensor_crc(const std::string& code, const Shape& shape, const void* data, size_t n) {
  std::string prefix = code + ":";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) prefix += ',';
    prefix += std::to_string(shape[d]);
  }
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(prefix.data()), uInt(prefix.size()));
  const auto* p = static_cast<const Bytef*>(data);
  for (size_t done = 0; done < n;) {  // zlib takes 32-bit lengths
    const size_t step = std::min<size_t>(n - done, size_t(1) << 30);
    crc = crc32(crc, p + done, uInt(step));
    done += step;
  }
  return uint32_t(crc);
}

// __metadata__, which must map strings to strings (absent or null: none).
std::map<std::string, std::string> metadata_of(const std::string& path,
                                               const nlohmann::ordered_json& header) {
  std::map<std::string, std::string> out;
  if (!header.contains("__metadata__") || header["__metadata__"].is_null()) return out;
  const auto& meta = header["__metadata__"];
  if (!meta.is_object()) fail(kOp, path, ": __metadata__ must map strings to strings");
  for (const auto& [key, v] : meta.items()) {
    if (!v.is_string())
      fail(kOp, path, ": __metadata__ must map strings to strings ('", key, "' is not a string)");
    out[key] = v.get<std::string>();
  }
  return out;
}

// The checksums a file carries by tensor name (none when a foreign writer made it).
std::map<std::string, std::string> checksums(const std::string& path,
                                             const std::map<std::string, std::string>& meta) {
  std::map<std::string, std::string> out;
  auto it = meta.find("ofl.crc32");
  if (it == meta.end()) return out;
  const nlohmann::json sums = nlohmann::json::parse(it->second, nullptr, false);
  if (!sums.is_object()) fail(kOp, path, ": the checksums in __metadata__ are not a JSON object");
  for (const auto& [name, v] : sums.items()) {
    if (!v.is_string()) fail(kOp, path, ": the checksum of '", name, "' is not a string");
    out[name] = v.get<std::string>();
  }
  return out;
}

// Bytes to parse: `size` of them, `read(offset, n, dst)` copying n from offset (false if short).
struct Source {
  const std::string& shown;
  uint64_t size;
  std::function<bool(uint64_t, uint64_t, void*)> read;
};

struct Entry {
  std::string name, code;
  Shape shape;
  DType dtype;
  uint64_t begin, end;
};

Contents parse(const Source& src, const std::set<std::string>* only) {
  const std::string& path = src.shown;
  const uint64_t size = src.size;
  unsigned char len[8];
  if (size < 8 || !src.read(0, 8, len))
    fail(kOp, path, " is ", size, " bytes: too short for a safetensors header (truncated?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes || n > size - 8)
    fail(kOp, path, ": the header claims ", n, " bytes but the file has ", size - 8,
         " after the length (truncated or not safetensors)");
  std::string text(n, '\0');
  if (!src.read(8, n, text.data())) fail(kOp, path, ": reading the header failed (truncated?)");
  const auto header = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    fail(kOp, path, ": the header is not a JSON object (corrupt or not safetensors)");
  Contents out;
  out.metadata = metadata_of(path, header);
  const std::map<std::string, std::string> sums = checksums(path, out.metadata);
  const uint64_t data_bytes = size - 8 - n;
  // Every entry is checked before any byte is read.
  std::vector<Entry> entries;
  std::map<uint64_t, std::pair<uint64_t, std::string>> extents;  // begin -> (end, tensor)
  uint64_t claimed = 0;
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
    Entry entry{name, e["dtype"].get<std::string>(), {}, DType::kFloat32, 0, 0};
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(kOp, path, ": tensor '", name, "' has a bad shape");
      entry.shape.push_back(d.get<int64_t>());
    }
    entry.dtype = dtype_of_code(path, name, entry.code);
    entry.begin = e["data_offsets"][0];
    entry.end = e["data_offsets"][1];
    const auto& [shape, dtype, begin, end] =
        std::tie(entry.shape, entry.dtype, entry.begin, entry.end);
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
      claimed += want;
    }
    if (!sums.empty() && !sums.count(name))
      fail(kOp, path, ": tensor '", name, "' has no checksum where the others have (damaged)");
    entries.push_back(std::move(entry));
  }
  // The entries are disjoint: whatever they do not add up to is a gap or trailing bytes.
  if (claimed != data_bytes)
    fail(kOp, path, ": ", data_bytes - claimed, " of the ", data_bytes,
         " data bytes belong to no tensor (trailing bytes or a gap: damaged or not safetensors)");
  for (const Entry& e : entries) {
    if (only && !only->count(e.name)) continue;
    Tensor t = Tensor::empty(e.shape, e.dtype);
    const uint64_t want = e.end - e.begin;
    if (want && !src.read(8 + n + e.begin, want, t.raw_data()))
      fail(kOp, path, ": reading tensor '", e.name, "' failed (truncated?)");
    if (auto sum = sums.find(e.name); sum != sums.end()) {
      char got[9];
      std::snprintf(got, sizeof got, "%08x", tensor_crc(e.code, e.shape, t.raw_data(), want));
      if (sum->second != got)
        fail(kOp, path, ": tensor '", e.name, "' (", shape_str(e.shape), " ", dtype_name(e.dtype),
             ") fails its checksum (", got, ", saved ", sum->second, "): the file is damaged");
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace

Contents read_file(const std::string& path, const std::set<std::string>* only) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(kOp, path, " is a folder, not a file");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) {
    if (!std::filesystem::exists(path, ec)) fail<NotFoundError>(kOp, "cannot open ", path);
    fail(kOp, "cannot open ", path);
  }
  const uint64_t size = uint64_t(f.tellg());
  return parse({path, size,
                [&](uint64_t at, uint64_t n, void* dst) {
                  f.seekg(std::streamoff(at));
                  return bool(f.read(static_cast<char*>(dst), std::streamsize(n)));
                }},
               only);
}

Contents read_bytes(std::string_view bytes, const std::string& shown,
                    const std::set<std::string>* only) {
  return parse({shown, bytes.size(),
                [&](uint64_t at, uint64_t n, void* dst) {
                  if (at > bytes.size() || n > bytes.size() - at) return false;
                  std::memcpy(dst, bytes.data() + at, n);
                  return true;
                }},
               only);
}

std::string code_of(DType dtype) {
  for (const auto& [code, d] : codes())
    if (d == dtype) return code;
  return dtype_name(dtype);
}

std::map<std::string, Tensor> read(const std::string& path, const std::set<std::string>* only) {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : read_file(path, only).tensors) out.emplace(name, std::move(t));
  return out;
}

}  // namespace ofl::internal::safetensors
