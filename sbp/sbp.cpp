// Sbp / NdSbp: factories, parsing, printing, hashing, and the balanced split of one axis.
#include "sbp/sbp.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/error.h"

namespace ofl::internal {

namespace {

size_t hash_combine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

[[noreturn]] void parse_fail(const std::string& s) {
  fail("sbp", "cannot parse '", s, "' (expected S(i), B, P(sum), P(max) or P(min))");
}

// A cursor over the text being parsed; spaces between tokens are skipped.
struct Cursor {
  const std::string& s;
  size_t i = 0;

  void skip_space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool at_end() {
    skip_space();
    return i == s.size();
  }
  bool eat(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // A non-negative integer, or nullopt when none starts here.
  std::optional<int64_t> number() {
    skip_space();
    size_t start = i;
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (v > (int64_t{1} << 40)) return std::nullopt;  // absurd axis; reject rather than wrap
      v = v * 10 + (s[i++] - '0');
    }
    if (i == start) return std::nullopt;
    return v;
  }
  // An identifier of letters (for the partial op).
  std::string word() {
    skip_space();
    size_t start = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(start, i - start);
  }
};

// One Sbp at the cursor, or nullopt (the caller names the whole text in its error).
std::optional<Sbp> parse_one(Cursor& c) {
  c.skip_space();
  if (c.i >= c.s.size()) return std::nullopt;
  char k = c.s[c.i++];
  if (k == 'S') {
    if (!c.eat('(')) return std::nullopt;
    auto axis = c.number();
    if (!axis || !c.eat(')')) return std::nullopt;
    return Sbp::split(*axis);
  }
  if (k == 'B') return Sbp::broadcast();
  if (k == 'P') {
    if (!c.eat('(')) return Sbp::partial(PartialOp::kSum);
    std::string op = c.word();
    if (!c.eat(')')) return std::nullopt;
    if (op == "sum") return Sbp::partial(PartialOp::kSum);
    if (op == "max") return Sbp::partial(PartialOp::kMax);
    if (op == "min") return Sbp::partial(PartialOp::kMin);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

const char* partial_op_name(PartialOp op) {
  switch (op) {
    case PartialOp::kSum:
      return "sum";
    case PartialOp::kMax:
      return "max";
    case PartialOp::kMin:
      return "min";
  }
  OFL_CHECK(false, "unknown PartialOp");
}

Sbp Sbp::split(int64_t axis) {
  if (axis < 0) fail("sbp", "split axis must be non-negative, got ", axis);
  return Sbp(Kind::kSplit, axis, PartialOp::kSum);
}

Sbp Sbp::broadcast() {
  return Sbp(Kind::kBroadcast, 0, PartialOp::kSum);
}

Sbp Sbp::partial(PartialOp op) {
  return Sbp(Kind::kPartial, 0, op);
}

Sbp Sbp::parse(const std::string& s) {
  Cursor c{s};
  auto sbp = parse_one(c);
  if (!sbp || !c.at_end()) parse_fail(s);
  return *sbp;
}

int64_t Sbp::axis() const {
  if (!is_split()) fail("sbp", str(), " has no split axis");
  return axis_;
}

PartialOp Sbp::op() const {
  if (!is_partial()) fail("sbp", str(), " has no partial op");
  return op_;
}

std::string Sbp::str() const {
  switch (kind_) {
    case Kind::kSplit:
      return "S(" + std::to_string(axis_) + ")";
    case Kind::kBroadcast:
      return "B";
    case Kind::kPartial:
      return std::string("P(") + partial_op_name(op_) + ")";
  }
  OFL_CHECK(false, "unknown Sbp kind");
}

size_t Sbp::hash() const {
  size_t h = std::hash<int>()(static_cast<int>(kind_));
  h = hash_combine(h, std::hash<int64_t>()(axis_));
  return hash_combine(h, std::hash<int>()(static_cast<int>(op_)));
}

NdSbp NdSbp::parse(const std::string& s) {
  Cursor c{s};
  c.skip_space();
  char close = 0;
  if (c.eat('('))
    close = ')';
  else if (c.eat('['))
    close = ']';
  if (!close) return NdSbp({Sbp::parse(s)});
  std::vector<Sbp> axes;
  do {
    auto sbp = parse_one(c);
    if (!sbp) parse_fail(s);
    axes.push_back(*sbp);
  } while (c.eat(','));
  if (!c.eat(close) || !c.at_end()) parse_fail(s);
  return NdSbp(std::move(axes));
}

bool NdSbp::all_broadcast() const {
  for (const Sbp& s : axes_)
    if (!s.is_broadcast()) return false;
  return true;
}

bool NdSbp::any_partial() const {
  for (const Sbp& s : axes_)
    if (s.is_partial()) return true;
  return false;
}

std::string NdSbp::str() const {
  if (axes_.size() == 1) return axes_[0].str();
  std::string out = "(";
  for (size_t i = 0; i < axes_.size(); ++i) out += (i ? ", " : "") + axes_[i].str();
  return out + ")";
}

size_t NdSbp::hash() const {
  size_t h = std::hash<size_t>()(axes_.size());
  for (const Sbp& s : axes_) h = hash_combine(h, s.hash());
  return h;
}

std::pair<int64_t, int64_t> split_range(int64_t n, int64_t parts, int64_t index) {
  if (n < 0 || parts <= 0 || index < 0 || index >= parts)
    fail("split_range", "cannot split a length-", n, " axis into ", parts, " parts and take part ",
         index);
  int64_t q = n / parts, r = n % parts;
  int64_t begin = index * q + std::min(index, r);
  return {begin, begin + q + (index < r ? 1 : 0)};
}

}  // namespace ofl::internal
