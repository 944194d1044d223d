// Placement: a device type over an n-d mesh of ranks; how an NdSbp lays a shape over it.
#include "sbp/placement.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"

namespace ofl::internal {

namespace {

std::string ranks_str(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

// Nested brackets over the row-major ranks: "[[0, 1], [2, 3]]".
void nested_str(const std::vector<int>& ranks, const Shape& mesh, size_t dim, size_t& next,
                std::string& out) {
  out += "[";
  for (int64_t i = 0; i < mesh[dim]; ++i) {
    if (i) out += ", ";
    if (dim + 1 == mesh.size())
      out += std::to_string(ranks[next++]);
    else
      nested_str(ranks, mesh, dim + 1, next, out);
  }
  out += "]";
}

}  // namespace

Placement::Placement(DeviceType type, std::vector<int> ranks, Shape mesh)
    : type_(type), ranks_(std::move(ranks)), mesh_(std::move(mesh)) {
  const char* dev = device_type_name(type_);
  if (ranks_.empty()) fail("placement", "a placement needs at least one rank (", dev, " ranks [])");
  if (mesh_.empty())
    fail("placement", "mesh of ", dev, " ranks ", ranks_str(ranks_), " has no axes");
  for (int64_t d : mesh_)
    if (d <= 0)
      fail("placement", "mesh ", shape_str(mesh_), " of ", dev, " ranks ", ranks_str(ranks_),
           " has an axis of size ", d);
  if (numel_of(mesh_) != static_cast<int64_t>(ranks_.size()))
    fail("placement", "mesh ", shape_str(mesh_), " holds ", numel_of(mesh_), " ranks but ", dev,
         " ranks ", ranks_str(ranks_), " are ", ranks_.size());
  std::unordered_set<int> seen;
  for (int r : ranks_) {
    if (r < 0) fail("placement", "rank ", r, " is negative in ", dev, " ranks ", ranks_str(ranks_));
    if (!seen.insert(r).second)
      fail("placement", "rank ", r, " appears twice in ", dev, " ranks ", ranks_str(ranks_));
  }
}

Placement Placement::all(DeviceType type, int world_size) {
  if (world_size <= 0) fail("placement", "world size must be positive, got ", world_size);
  std::vector<int> ranks(world_size);
  for (int i = 0; i < world_size; ++i) ranks[i] = i;
  return Placement(type, std::move(ranks), {world_size});
}

bool Placement::contains(int rank) const {
  return std::find(ranks_.begin(), ranks_.end(), rank) != ranks_.end();
}

std::optional<std::vector<int64_t>> Placement::coords_of(int rank) const {
  auto it = std::find(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end()) return std::nullopt;
  int64_t flat = it - ranks_.begin();
  std::vector<int64_t> coords(mesh_.size());
  for (size_t d = mesh_.size(); d-- > 0;) {
    coords[d] = flat % mesh_[d];
    flat /= mesh_[d];
  }
  return coords;
}

int Placement::rank_at(const std::vector<int64_t>& coords) const {
  bool ok = coords.size() == mesh_.size();
  int64_t flat = 0;
  for (size_t d = 0; ok && d < coords.size(); ++d) {
    ok = coords[d] >= 0 && coords[d] < mesh_[d];
    flat = flat * mesh_[d] + coords[d];
  }
  if (!ok)
    fail("placement", "coordinates ", shape_str(coords), " are outside mesh ", shape_str(mesh_),
         " of ", str());
  return ranks_[flat];
}

std::vector<int> Placement::axis_group(int rank, int64_t axis) const {
  if (axis < 0 || axis >= ndim())
    fail("placement", "mesh axis ", axis, " is out of range for ", str(), " (", ndim(), "-d mesh)");
  auto coords = coords_of(rank);
  if (!coords) fail("placement", "rank ", rank, " is not in ", str());
  std::vector<int> group;
  group.reserve(mesh_[axis]);
  for (int64_t i = 0; i < mesh_[axis]; ++i) {
    (*coords)[axis] = i;
    group.push_back(rank_at(*coords));
  }
  return group;
}

std::string Placement::str() const {
  std::string out = device_type_name(type_);
  // A large placement of consecutive ranks (a simulated cluster, say) in a line, not 1024 numbers.
  bool consecutive = ranks_.size() > 16;
  for (size_t i = 1; consecutive && i < ranks_.size(); ++i)
    consecutive = ranks_[i] == ranks_[0] + int(i);
  if (consecutive) {
    out += str_cat("[", ranks_.front(), "..", ranks_.back(), "]");
    return mesh_.size() > 1 ? out + " as " + shape_str(mesh_) : out;
  }
  size_t next = 0;
  nested_str(ranks_, mesh_, 0, next, out);
  return out;
}

size_t Placement::hash() const {
  size_t h = std::hash<int>()(static_cast<int>(type_));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t d : mesh_) mix(std::hash<int64_t>()(d));
  for (int r : ranks_) mix(std::hash<int>()(r));
  return h;
}

void validate_sbp(const char* op, const Shape& shape, const NdSbp& nd_sbp,
                  const Placement& placement) {
  auto bad = [&](const auto&... why) {
    fail(op, "sbp ", nd_sbp.str(), " does not fit tensor of shape ", shape_str(shape),
         " on placement ", placement.str(), ": ", why...);
  };
  if (static_cast<int64_t>(nd_sbp.size()) != placement.ndim())
    bad(nd_sbp.size(), " sbp for a ", placement.ndim(), "-d mesh");
  for (const Sbp& s : nd_sbp.axes())
    if (s.is_split() && s.axis() >= static_cast<int64_t>(shape.size()))
      bad("split axis ", s.axis(), " is out of range for ", shape.size(), " dimensions");
}

std::vector<std::pair<int64_t, int64_t>> local_ranges(const Shape& shape, const NdSbp& nd_sbp,
                                                      const Placement& placement,
                                                      const std::vector<int64_t>& coords) {
  validate_sbp("local_ranges", shape, nd_sbp, placement);
  const Shape& mesh = placement.mesh();
  bool ok = coords.size() == mesh.size();
  for (size_t d = 0; ok && d < coords.size(); ++d) ok = coords[d] >= 0 && coords[d] < mesh[d];
  if (!ok)
    fail("local_ranges", "coordinates ", shape_str(coords), " are outside mesh ", shape_str(mesh),
         " of ", placement.str());
  std::vector<std::pair<int64_t, int64_t>> ranges(shape.size());
  for (size_t a = 0; a < shape.size(); ++a) ranges[a] = {0, shape[a]};
  for (size_t d = 0; d < mesh.size(); ++d) {
    const Sbp& s = nd_sbp[d];
    if (!s.is_split()) continue;
    auto& [begin, end] = ranges[s.axis()];
    auto [b, e] = split_range(end - begin, mesh[d], coords[d]);
    end = begin + e;
    begin += b;
  }
  return ranges;
}

Shape local_shape(const Shape& shape, const NdSbp& nd_sbp, const Placement& placement,
                  const std::vector<int64_t>& coords) {
  auto ranges = local_ranges(shape, nd_sbp, placement, coords);
  Shape out(ranges.size());
  for (size_t a = 0; a < ranges.size(); ++a) out[a] = ranges[a].second - ranges[a].first;
  return out;
}

std::vector<int64_t> local_starts(const Shape& shape, const NdSbp& nd_sbp,
                                  const Placement& placement, const std::vector<int64_t>& coords) {
  std::vector<int64_t> starts;
  for (const auto& [begin, end] : local_ranges(shape, nd_sbp, placement, coords))
    starts.push_back(begin);
  return starts;
}

std::vector<Shape> local_shapes(const Shape& shape, const NdSbp& nd_sbp,
                                const Placement& placement) {
  std::vector<Shape> out;
  out.reserve(size_t(placement.size()));
  for (int64_t i = 0; i < placement.size(); ++i)
    out.push_back(local_shape(shape, nd_sbp, placement, unravel_index(placement.mesh(), i)));
  return out;
}

std::vector<int64_t> unravel_index(const Shape& mesh, int64_t flat) {
  std::vector<int64_t> c(mesh.size());
  for (size_t d = mesh.size(); d-- > 0;) {
    c[d] = flat % mesh[d];
    flat /= mesh[d];
  }
  return c;
}

}  // namespace ofl::internal
