// Limits checked on a JSON text before it is parsed. nlohmann/json copies, dumps and destroys a
// value recursively, so a text nested 100,000 deep (200 KB of brackets) overflows the stack of
// whoever holds the parsed value; counting the depth first refuses it at the cost of one scan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace ofl_examples {

// The deepest nesting of arrays and objects in `text` (0 for a scalar), counted without parsing
// it: brackets inside strings, escaped quotes included, do not count. The scan stops as soon as
// the depth passes `stop_above`, so it returns at most stop_above + 1. A malformed text gets a
// depth too; the parser that follows refuses it.
inline size_t json_nesting_depth(std::string_view text, size_t stop_above) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character (for \uXXXX, the 'u'; hex digits are no brackets)
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_above) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace ofl_examples
