// SBP: how one mesh axis lays a logical tensor over its ranks. S(i) splits tensor axis i
// (balanced: rank r of p holds n/p + (r < n%p) elements), B broadcasts (every rank holds all),
// P(op) holds partial values reduced with op. NdSbp is one Sbp per mesh axis.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace ofl::internal {

enum class PartialOp : uint8_t { kSum, kMax, kMin };
const char* partial_op_name(PartialOp op);  // "sum", "max", "min"

class Sbp {
 public:
  enum class Kind : uint8_t { kSplit, kBroadcast, kPartial };

  static Sbp split(int64_t axis);
  static Sbp broadcast();
  static Sbp partial(PartialOp op = PartialOp::kSum);
  // Parses "S(0)", "B", "P", "P(sum)", "P(max)", "P(min)"; raises ofl::internal::Error otherwise.
  static Sbp parse(const std::string& s);

  Kind kind() const { return kind_; }
  bool is_split() const { return kind_ == Kind::kSplit; }
  bool is_broadcast() const { return kind_ == Kind::kBroadcast; }
  bool is_partial() const { return kind_ == Kind::kPartial; }
  int64_t axis() const;     // split axis; raises unless is_split()
  PartialOp op() const;     // partial op; raises unless is_partial()
  std::string str() const;  // "S(0)", "B", "P(sum)"

  bool operator==(const Sbp& o) const = default;
  size_t hash() const;

 private:
  Sbp(Kind kind, int64_t axis, PartialOp op) : kind_(kind), op_(op), axis_(axis) {}
  Kind kind_;
  PartialOp op_ = PartialOp::kSum;
  int64_t axis_ = 0;
};

class NdSbp {
 public:
  NdSbp() = default;
  explicit NdSbp(std::vector<Sbp> axes) : axes_(std::move(axes)) {}
  // Parses "S(0)", "(S(0), B)", "[S(0), P(sum)]".
  static NdSbp parse(const std::string& s);

  size_t size() const { return axes_.size(); }
  bool empty() const { return axes_.empty(); }
  const Sbp& operator[](size_t i) const { return axes_[i]; }
  const std::vector<Sbp>& axes() const { return axes_; }
  bool all_broadcast() const;
  bool any_partial() const;
  std::string str() const;  // "S(0)" for one axis, "(S(0), B)" for several

  bool operator==(const NdSbp& o) const = default;
  size_t hash() const;

 private:
  std::vector<Sbp> axes_;
};

// The [begin, end) range rank `index` of `parts` holds of a length-n axis (balanced split).
std::pair<int64_t, int64_t> split_range(int64_t n, int64_t parts, int64_t index);

}  // namespace ofl::internal

template <>
struct std::hash<ofl::internal::Sbp> {
  size_t operator()(const ofl::internal::Sbp& s) const { return s.hash(); }
};
template <>
struct std::hash<ofl::internal::NdSbp> {
  size_t operator()(const ofl::internal::NdSbp& s) const { return s.hash(); }
};
