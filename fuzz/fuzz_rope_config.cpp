// libFuzzer target: parse_rope_config on arbitrary bytes (a config.json). A config is refused
// with FileFormatError, or every number its rotation computes with is finite: each inverse
// frequency within [1e-300, 1e300], its stretch, the attention factor and the base in effect
// finite, at the trained length, the extended length and far past both (dynamic NTK with a
// factor of 1e20 once made the base 0 and every frequency infinite), and a rotation at positions
// near and far gives finite values. Anything else aborts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "posemb/errors.hpp"
#include "posemb/matrix.hpp"
#include "posemb/positions.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_config.hpp"

namespace {

void check(const posemb::RopeFrequencies& f) {
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    const auto v = static_cast<double>(f.inv_freq[i]);
    if (!(v >= 1e-300 && v <= 1e300) || !std::isfinite(static_cast<double>(f.stretch[i]))) {
      std::abort();
    }
  }
  if (!std::isfinite(f.attention_factor) || !(f.attention_factor > 0.0) || !std::isfinite(f.base) ||
      !(f.base > 0.0)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  posemb::RopeConfig c;
  try {
    c = posemb::parse_rope_config(std::string_view(reinterpret_cast<const char*>(data), size),
                                  "<fuzz>");
  } catch (const posemb::FileFormatError&) {
    return 0;
  }
  if (c.head_dim > 4096) return 0;  // a wide head is legal; keep each run short
  for (const std::size_t seq_len : {std::size_t{0}, c.extended_length(), std::size_t{1} << 40}) {
    try {
      const posemb::Rope rope = c.rope(posemb::RopeLayout::half, seq_len);
      check(rope.frequencies());
      posemb::Matrix<float> x(3, c.head_dim);
      for (float& v : x.flat()) v = 0.5f;
      posemb::Matrix<std::int64_t> ids(1, 3);
      ids(0, 0) = 0;
      ids(0, 1) = 4096;
      ids(0, 2) = std::int64_t{1} << 40;
      posemb::rope_forward(x, 1, 1, 3, posemb::PositionSource::explicit_ids(ids.cview()), rope);
      for (const float v : x.flat()) {
        if (!std::isfinite(v)) std::abort();
      }
    } catch (const std::invalid_argument&) {
      // A length whose frequencies cannot be computed usably (a dynamic base past 1e300 at 2^40
      // positions): refused, naming the key.
    }
  }
  return 0;
}
