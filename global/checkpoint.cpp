#include "global/checkpoint.h"

#include <algorithm>
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

struct Piece {
  std::string file, key;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

// The pieces of a tensor must tile it: pairwise disjoint, their volumes adding up to the whole
// (two pieces naming one region would leave another unread, as zeros).
template <class Bad>
void check_tiling(const std::string& name, const Shape& shape, const std::vector<Piece>& pieces,
                  const Bad& bad) {
  auto volume = [](const Piece& p) {
    int64_t n = 1;
    for (const auto& [b, e] : p.ranges) n *= e - b;
    return n;
  };
  int64_t total = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    total += volume(pieces[i]);
    for (size_t j = 0; j < i; ++j) {
      bool meet = volume(pieces[i]) > 0 && volume(pieces[j]) > 0;
      for (size_t d = 0; d < shape.size() && meet; ++d)
        meet = std::max(pieces[i].ranges[d].first, pieces[j].ranges[d].first) <
               std::min(pieces[i].ranges[d].second, pieces[j].ranges[d].second);
      if (meet)
        bad("pieces ", j, " and ", i, " of '", name, "' overlap (", pieces[j].file, " and ",
            pieces[i].file, ")");
    }
  }
  if (total != numel_of(shape))
    bad("the pieces of '", name, "' cover ", total, " of its ", numel_of(shape), " elements ",
        shape_str(shape));
}

}  // namespace

struct Reader::Index {
  std::string where;
  struct Entry {
    DType dtype;
    Shape shape;
    std::vector<Piece> pieces;
  };
  std::map<std::string, Entry> tensors;
  // file -> its tensors read so far (each file's wanted keys are read on first use)
  std::map<std::string, std::map<std::string, Tensor>> files;
};

Reader::Reader(std::string dir) : dir_(std::move(dir)), index_(std::make_unique<Index>()) {
  Index& ix = *index_;
  ix.where = dir_ + "/index.json";
  std::ifstream f(ix.where);
  if (!f) fail(kOp, "cannot open ", ix.where, " (not a checkpoint folder flow.save wrote?)");
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  auto bad = [&](const auto&... what) { fail(kOp, ix.where, ": ", what...); };
  if (j.is_discarded() || !j.is_object()) bad("not JSON (corrupt or truncated)");
  if (j.value("format", "") != "oneflowlike-checkpoint") bad("not a oneflowlike checkpoint index");
  if (j.value("format_version", 0) != kFormatVersion)
    bad("format version ", j.value("format_version", 0), ", this build reads ", kFormatVersion);
  if (!j.contains("tensors") || !j["tensors"].is_object()) bad("has no \"tensors\"");
  try {
    for (const auto& [name, e] : j["tensors"].items()) {
      Index::Entry entry;
      entry.dtype = dtype_from_name(e.at("dtype").get<std::string>());
      entry.shape = e.at("shape").get<Shape>();
      for (const auto& p : e.at("pieces")) {
        Piece piece{p.at("file").get<std::string>(), p.at("key").get<std::string>(), {}};
        if (piece.file.find('/') != std::string::npos) bad("piece file ", piece.file, " is a path");
        for (const auto& r : p.at("ranges")) piece.ranges.emplace_back(r.at(0), r.at(1));
        if (piece.ranges.size() != entry.shape.size())
          bad("a piece of '", name, "' has ", piece.ranges.size(), " ranges for ",
              entry.shape.size(), " axes");
        for (size_t d = 0; d < piece.ranges.size(); ++d)
          if (piece.ranges[d].first < 0 || piece.ranges[d].first > piece.ranges[d].second ||
              piece.ranges[d].second > entry.shape[d])
            bad("a piece of '", name, "' lies outside its shape ", shape_str(entry.shape));
        entry.pieces.push_back(std::move(piece));
      }
      check_tiling(name, entry.shape, entry.pieces, bad);
      ix.tensors.emplace(name, std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    bad("malformed tensor entry (", e.what(), ")");
  } catch (const Error& e) {
    bad(e.what());
  }
}

Reader::~Reader() = default;

bool Reader::contains(const std::string& name) const {
  return index_->tensors.count(name) > 0;
}

std::vector<std::string> Reader::files_read() const {
  std::vector<std::string> out;
  for (const auto& [file, tensors] : index_->files) out.push_back(file);
  return out;
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
  std::vector<std::pair<int64_t, int64_t>> region;
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
    std::map<std::string, Tensor> got = safetensors::read(dir_ + "/" + file, &keys);
    for (const std::string& key : keys)
      if (!got.count(key))
        fail(kOp, dir_, "/", file, " has no tensor '", key, "' (index.json names it)");
    ix.files[file].merge(got);
  }
  int64_t covered = 0;
  for (const Piece& p : e.pieces) {
    if (!overlap(p, lo, hi)) continue;
    Tensor src = ix.files[p.file].at(p.key);
    Shape piece_shape;
    for (const auto& [b, end] : p.ranges) piece_shape.push_back(end - b);
    if (src.shape() != piece_shape || src.dtype() != dtype)
      fail(kOp, dir_, "/", p.file, ": tensor '", p.key, "' is ", src.str(), ", index.json says ",
           shape_str(piece_shape), " ", dtype_name(dtype));
    Tensor dst = out;
    int64_t n = 1;
    for (size_t d = 0; d < region.size(); ++d) {
      src = narrow_view(src, int64_t(d), lo[d] - p.ranges[d].first, hi[d] - lo[d]);
      dst = narrow_view(dst, int64_t(d), lo[d] - region[d].first, hi[d] - lo[d]);
      n *= hi[d] - lo[d];
    }
    copy_into(dst, src);
    covered += n;
  }
  if (covered != out.numel())
    fail(kOp, ix.where, ": the pieces of '", name, "' cover ", covered, " of the ", out.numel(),
         " elements this rank needs (a shard file is missing from the index?)");
  return out;
}

}  // namespace ofl::internal::checkpoint
