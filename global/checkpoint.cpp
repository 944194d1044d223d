#include "global/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/primitives.h"
#include "core/safetensors.h"

namespace ofl::internal::checkpoint {

namespace {

constexpr const char* kOp = "load";
constexpr int kFormatVersion = 1;  // python/oneflowlike/_checkpoint.py's VERSION
constexpr int kMaxDepth = 200;     // of index.json: a saved structure nests a few levels
using json = nlohmann::ordered_json;

struct Piece {
  std::string file, key;
  Ranges ranges;
};

// What Python calls a JSON value's type, as index.json's errors name it.
std::string type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "dict";
    case json::value_t::array:
      return "list";
    case json::value_t::string:
      return "str";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_float:
      return "float";
    case json::value_t::null:
      return "None";
    default:
      return "int";
  }
}

// A value as index.json's errors show it: strings quoted as Python does.
std::string repr(const json& v) {
  if (v.is_string()) return str_cat("'", v.get<std::string>(), "'");
  return v.dump();
}

// A size index.json may hold: an integer (not a bool) in [0, limit).
bool is_size(const json& v, uint64_t limit = uint64_t(1) << 62) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)
             ? v.get<uint64_t>() < limit
             : false;
}

std::string decimal(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v);
  return s;
}

// The number of elements in `ranges`, saturating (a damaged index may claim any).
unsigned __int128 volume(const Ranges& ranges) {
  const unsigned __int128 cap = (unsigned __int128)1 << 100;
  unsigned __int128 n = 1;
  for (const auto& [b, e] : ranges) n = std::min<unsigned __int128>(n * uint64_t(e - b), cap);
  return n;
}

std::string shape_list(const Shape& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[d]);
  }
  return s + "]";
}

}  // namespace

std::string tiling_error(const Shape& shape, const std::vector<Ranges>& pieces) {
  Ranges whole;
  for (int64_t n : shape) whole.emplace_back(0, n);
  unsigned __int128 total = 0;
  for (const Ranges& p : pieces) total += volume(p);
  if (total != volume(whole))
    return str_cat("its pieces hold ", decimal(total), " elements, its shape ", shape_list(shape),
                   " has ", decimal(volume(whole)));
  // Sorted by where they begin on axis 0, only the pieces that begin before piece i ends there
  // can meet it.
  std::vector<size_t> boxes;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (volume(pieces[i]) > 0) boxes.push_back(i);
  if (boxes.size() < 2 || shape.empty()) return "";
  std::stable_sort(boxes.begin(), boxes.end(),
                   [&](size_t a, size_t b) { return pieces[a][0].first < pieces[b][0].first; });
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Ranges& a = pieces[boxes[i]];
    for (size_t j = i + 1; j < boxes.size() && pieces[boxes[j]][0].first < a[0].second; ++j) {
      const Ranges& b = pieces[boxes[j]];
      bool meet = true;
      for (size_t d = 0; d < shape.size() && meet; ++d)
        meet = std::max(a[d].first, b[d].first) < std::min(a[d].second, b[d].second);
      if (meet)
        return str_cat("pieces ", std::min(boxes[i], boxes[j]), " and ",
                       std::max(boxes[i], boxes[j]), " overlap");
    }
  }
  return "";
}

struct Reader::Index {
  std::string where;
  struct Entry {
    DType dtype;
    Shape shape;
    std::vector<Piece> pieces;
  };
  std::map<std::string, Entry> tensors;
  std::vector<TensorInfo> infos;  // in index.json's order
  std::string tree;
  // file -> its tensors read so far (each file's wanted keys are read on first use)
  std::map<std::string, std::map<std::string, Tensor>> files;
  std::map<std::string, int64_t> bytes_read;
};

namespace {

// One entry of index.json's "tensors", checked: Python's flow.load refused the same entries with
// the same words.
template <class Bad>
void parse_tensor(const std::string& name, const json& e, Reader::TensorInfo& info,
                  std::vector<Piece>& pieces, const Bad& bad) {
  const std::string w = "tensor '" + name + "'";
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("pieces"))
    bad(": ", w, " is not an object with a dtype, a shape and pieces");
  const json &dtype = e["dtype"], &shape = e["shape"], &ps = e["pieces"];
  bool known = dtype.is_string();
  if (known) {
    try {
      info.dtype = dtype_from_name(dtype.get<std::string>());
      known = safetensors::code_of(info.dtype) != dtype_name(info.dtype);
    } catch (const Error&) {
      known = false;
    }
  }
  if (!known) bad(": ", w, " has an unsupported dtype ", repr(dtype));
  if (!shape.is_array() ||
      !std::all_of(shape.begin(), shape.end(), [](const json& n) { return is_size(n); }))
    bad(": ", w, " has an invalid shape ", repr(shape));
  for (const json& n : shape) info.shape.push_back(n.get<int64_t>());
  if (!ps.is_array()) bad(": ", w, ": pieces is a ", type_of(ps), ", not a list");
  for (size_t i = 0; i < ps.size(); ++i) {
    const json& p = ps[i];
    if (!p.is_object() || !p.contains("file") || !p.contains("key") || !p.contains("ranges"))
      bad(": ", w, ": piece ", i, " is not an object with a file, a key and ranges");
    const json &file = p["file"], &key = p["key"], &ranges = p["ranges"];
    if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos || file == "" ||
        file == "." || file == "..")
      bad(": ", w, ": piece ", i, " names ", repr(file), ", not a file of the folder");
    if (!key.is_string()) bad(": ", w, ": piece ", i, " has a key ", repr(key), ", not a string");
    bool ok = ranges.is_array() && ranges.size() == info.shape.size();
    for (size_t d = 0; ok && d < ranges.size(); ++d) {
      const json& r = ranges[d];
      const uint64_t limit = uint64_t(info.shape[d]) + 1;
      ok = r.is_array() && r.size() == 2 && is_size(r[0], limit) && is_size(r[1], limit) &&
           r[0].get<int64_t>() <= r[1].get<int64_t>();
    }
    if (!ok)
      bad(": ", w, ": piece ", i, " has ranges ", repr(ranges),
          ", not a [begin, end] per axis inside the shape ", shape_list(info.shape));
    Piece piece{file.get<std::string>(), key.get<std::string>(), {}};
    for (const json& r : ranges)
      piece.ranges.emplace_back(r[0].get<int64_t>(), r[1].get<int64_t>());
    pieces.push_back(std::move(piece));
  }
  std::vector<Ranges> boxes;
  for (const Piece& p : pieces) boxes.push_back(p.ranges);
  if (std::string why = tiling_error(info.shape, boxes); !why.empty())
    bad(": ", w, ": ", why, ", so they do not tile it (the index is damaged)");
}

}  // namespace

Reader::Reader(std::string dir) : dir_(std::move(dir)), index_(std::make_unique<Index>()) {
  Index& ix = *index_;
  ix.where = dir_ + "/index.json";
  std::ifstream f(ix.where);
  if (!f) {
    std::error_code ec;
    if (!std::filesystem::exists(ix.where, ec))
      fail<NotFoundError>(kOp, "cannot open ", ix.where,
                          " (not a checkpoint folder flow.save wrote?)");
    fail(kOp, "cannot open ", ix.where);
  }
  std::stringstream text;
  text << f.rdbuf();
  auto bad = [&](const auto&... what) { fail(kOp, ix.where, what...); };
  json j;
  try {
    // Refused while parsing: nlohmann's recursive copy and dump of a far deeper value would
    // exhaust the stack, and Python rebuilds the tree recursively.
    j = json::parse(text.str(), [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth)
        bad(" nests deeper than ", kMaxDepth, " levels (corrupt or not a checkpoint index)");
      return true;
    });
  } catch (const json::parse_error& e) {  // (its what() may quote bytes that are not UTF-8)
    bad(" is not JSON (a syntax error at byte ", e.byte, "; truncated or damaged?)");
  } catch (const json::exception&) {
    bad(" is not JSON (truncated or damaged?)");
  }
  if (!j.is_object()) bad(" is not a JSON object but a ", type_of(j));
  if (j.value("format", json()) != "oneflowlike-checkpoint")
    bad(" is not a oneflowlike-checkpoint index (format ",
        j.contains("format") ? repr(j["format"]) : "None", ")");
  if (j.value("format_version", json()) != kFormatVersion)
    bad(": checkpoint format version ",
        j.contains("format_version") ? repr(j["format_version"]) : "None", ", this build reads ",
        kFormatVersion);
  for (const char* key : {"tree", "tensors"})
    if (!j.contains(key)) bad(" has no '", key, "'");
  if (!j["tensors"].is_object()) bad(": 'tensors' is a ", type_of(j["tensors"]), ", not an object");
  ix.tree = j["tree"].dump();
  for (const auto& [name, e] : j["tensors"].items()) {
    TensorInfo info{name, {}, DType::kFloat32};
    std::vector<Piece> pieces;
    parse_tensor(name, e, info, pieces, bad);
    ix.tensors[name] = Index::Entry{info.dtype, info.shape, std::move(pieces)};
    ix.infos.push_back(std::move(info));
  }
}

Reader::~Reader() = default;

bool Reader::contains(const std::string& name) const {
  return index_->tensors.count(name) > 0;
}

const std::vector<Reader::TensorInfo>& Reader::tensors() const {
  return index_->infos;
}

const std::string& Reader::tree() const {
  return index_->tree;
}

std::vector<std::string> Reader::files() const {
  std::set<std::string> out;
  for (const auto& [name, e] : index_->tensors)
    for (const Piece& p : e.pieces) out.insert(p.file);
  return {out.begin(), out.end()};
}

std::vector<std::string> Reader::files_read() const {
  std::vector<std::string> out;
  for (const auto& [file, tensors] : index_->files) out.push_back(file);
  return out;
}

std::map<std::string, int64_t> Reader::bytes_read() const {
  return index_->bytes_read;
}

Tensor Reader::read(const std::string& name, const Shape& shape, DType dtype,
                    const std::optional<Placement>& placement, const NdSbp& nd_sbp,
                    const std::vector<int64_t>& coords) {
  Index& ix = *index_;
  auto it = ix.tensors.find(name);
  if (it == ix.tensors.end()) fail(kOp, ix.where, " has no tensor '", name, "'");
  const Index::Entry& e = it->second;
  if (e.shape != shape || e.dtype != dtype)
    fail(kOp, ix.where, ": '", name, "' is ", shape_str(e.shape), " ", dtype_name(e.dtype),
         ", expected ", shape_str(shape), " ", dtype_name(dtype));
  Ranges region;
  if (placement) {
    region = local_ranges(shape, nd_sbp, *placement, coords);
  } else {
    for (int64_t n : shape) region.emplace_back(0, n);
  }
  Shape local;
  for (const auto& [b, end] : region) local.push_back(end - b);
  Tensor out = Tensor::empty(local, dtype);
  fill_into(out, 0);
  for (size_t k = 0; k < nd_sbp.size(); ++k)
    if (nd_sbp[k].is_partial() && coords[k] != 0) return out;
  // Which keys each file must give, then each overlapping piece copied into place.
  std::map<std::string, std::set<std::string>> wanted;
  auto overlap = [&](const Piece& p, Shape& lo, Shape& hi) {
    lo.clear();
    hi.clear();
    for (size_t d = 0; d < region.size(); ++d) {
      lo.push_back(std::max(region[d].first, p.ranges[d].first));
      hi.push_back(std::min(region[d].second, p.ranges[d].second));
      if (lo.back() >= hi.back()) return false;
    }
    return true;
  };
  Shape lo, hi;
  for (const Piece& p : e.pieces)
    if (overlap(p, lo, hi) && !ix.files[p.file].count(p.key)) wanted[p.file].insert(p.key);
  for (const auto& [file, keys] : wanted) {
    const std::string path = dir_ + "/" + file;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      fail<NotFoundError>(kOp, path, ": the checkpoint's shard file is missing");
    std::map<std::string, Tensor> got = safetensors::read(path, &keys);
    for (const std::string& key : keys)
      if (!got.count(key)) fail(kOp, path, " has no tensor '", key, "' (index.json names it)");
    ix.files[file].merge(got);
  }
  int64_t covered = 0;
  for (const Piece& p : e.pieces) {
    if (!overlap(p, lo, hi)) continue;
    Tensor src = ix.files[p.file].at(p.key);
    Shape piece_shape;
    for (const auto& [b, end] : p.ranges) piece_shape.push_back(end - b);
    if (src.shape() != piece_shape || src.dtype() != dtype)
      fail(kOp, dir_, "/", p.file, ": tensor '", p.key, "' is ", safetensors::code_of(src.dtype()),
           " ", shape_list(src.shape()), ", index.json says ", safetensors::code_of(dtype), " (",
           dtype_name(dtype), ") ", shape_list(piece_shape));
    Tensor dst = out;
    int64_t n = 1;
    for (size_t d = 0; d < region.size(); ++d) {
      src = narrow_view(src, int64_t(d), lo[d] - p.ranges[d].first, hi[d] - lo[d]);
      dst = narrow_view(dst, int64_t(d), lo[d] - region[d].first, hi[d] - lo[d]);
      n *= hi[d] - lo[d];
    }
    copy_into(dst, src);
    covered += n;
    ix.bytes_read[p.file] += n * int64_t(itemsize(dtype));
  }
  if (covered != out.numel())
    fail(kOp, ix.where, ": the pieces of '", name, "' cover ", covered, " of the ", out.numel(),
         " elements this rank needs (a shard file is missing from the index?)");
  return out;
}

}  // namespace ofl::internal::checkpoint
