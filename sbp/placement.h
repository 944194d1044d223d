// Placement: a device type and an n-d mesh of global ranks, e.g. cpu ranks [[0, 1], [2, 3]].
// A global tensor is laid over a placement by an NdSbp with one Sbp per mesh axis.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/shape.h"
#include "sbp/sbp.h"

namespace ofl::internal {

class Placement {
 public:
  // ranks in row-major order over `mesh`; raises ofl::internal::Error on repeated or negative ranks
  // or a mesh whose size differs from ranks.size().
  Placement(DeviceType type, std::vector<int> ranks, Shape mesh);
  static Placement all(DeviceType type, int world_size);  // 1-d mesh 0..world_size-1

  DeviceType device_type() const { return type_; }
  const std::vector<int>& ranks() const { return ranks_; }
  const Shape& mesh() const { return mesh_; }
  int64_t ndim() const { return static_cast<int64_t>(mesh_.size()); }
  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  bool contains(int rank) const;
  // Mesh coordinates of a global rank inside this placement (nullopt when outside).
  std::optional<std::vector<int64_t>> coords_of(int rank) const;
  int rank_at(const std::vector<int64_t>& coords) const;
  // The ranks sharing every coordinate with `rank` except along mesh axis `axis`, in order:
  // the sub-group a per-axis collective runs on.
  std::vector<int> axis_group(int rank, int64_t axis) const;
  std::string str() const;  // "cpu[[0, 1], [2, 3]]"

  bool operator==(const Placement& o) const = default;
  size_t hash() const;

 private:
  DeviceType type_;
  std::vector<int> ranks_;
  Shape mesh_;
};

// The mesh coordinates of the flat (row-major) position `flat` in `mesh`.
std::vector<int64_t> unravel_index(const Shape& mesh, int64_t flat);

// Raises ofl::internal::Error (naming op, shape, sbp and placement) unless nd_sbp fits: one Sbp per
// mesh axis and every split axis within the tensor's rank.
void validate_sbp(const char* op, const Shape& shape, const NdSbp& nd_sbp,
                  const Placement& placement);

// The logical index ranges a rank at `coords` holds: one [begin, end) per tensor axis.
// Splits nest in mesh-axis order (S(0) on two mesh axes splits axis 0 twice).
std::vector<std::pair<int64_t, int64_t>> local_ranges(const Shape& shape, const NdSbp& nd_sbp,
                                                      const Placement& placement,
                                                      const std::vector<int64_t>& coords);
Shape local_shape(const Shape& shape, const NdSbp& nd_sbp, const Placement& placement,
                  const std::vector<int64_t>& coords);
// Where that rank's shard begins in the logical tensor: the ranges' begins.
std::vector<int64_t> local_starts(const Shape& shape, const NdSbp& nd_sbp,
                                  const Placement& placement, const std::vector<int64_t>& coords);
// Every rank's shard shape, in the order of placement.ranks() (row-major over the mesh).
std::vector<Shape> local_shapes(const Shape& shape, const NdSbp& nd_sbp,
                                const Placement& placement);

}  // namespace ofl::internal

template <>
struct std::hash<ofl::internal::Placement> {
  size_t operator()(const ofl::internal::Placement& p) const { return p.hash(); }
};
