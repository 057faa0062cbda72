// src/io/json_depth.hpp: the nesting depth of a JSON text, counted before parsing it. A file
// nested 100,000 deep crashed the tool (the parser's and the document's recursion ran out of
// stack) and 8,000 deep took seconds; the JSON posemb reads (config.json, a shard index, rope
// settings) is a few levels deep, so a deeper one is refused unparsed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "posemb/errors.hpp"

namespace posemb::detail {

// The deepest nesting of arrays and objects in text (strings skipped).
inline std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The deepest nesting a configuration file may have (Hugging Face's are 2 to 4 deep).
inline constexpr std::size_t kMaxJsonDepth = 64;

// Throws FileFormatError naming source when text nests deeper than kMaxJsonDepth.
inline void check_json_depth(std::string_view text, std::string_view source) {
  if (const std::size_t d = json_nesting_depth(text); d > kMaxJsonDepth) {
    throw FileFormatError(source, "nests arrays and objects " + std::to_string(d) +
                                      " deep; posemb reads JSON at most " +
                                      std::to_string(kMaxJsonDepth) + " deep");
  }
}

}  // namespace posemb::detail
