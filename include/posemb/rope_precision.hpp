// posemb/rope_precision.hpp: how far the rotary embedding's angles drift when they are formed
// in a narrow floating-point format, position after position, against posemb's own angles
// (long double): where a float16 or bfloat16 cos/sin cache breaks (transformers #29285,
// vllm #1004, candle #3520).
//
//   posemb::Rope rope(128, posemb::RopeLayout::half, {.base = 500000});
//   auto report = posemb::rope_angle_precision(rope, 131072);   // one row per format
//   report[2].format;             // AngleFormat::bfloat16
//   report[2].max_error;          // radians (up to pi): the worst rotation error of any pair
//   report[2].first_over;         // the first position whose error exceeds the threshold
//
// In format F the angle of pair i at position p is F(F(p) * F(theta_i)): the position and the
// inverse frequency each rounded to F, their product rounded to F (what a float32 cos/sin
// cache computes, and a matmul or an autocast in F with its one product). posemb's angle is
// p * theta_i in long double. The error of a pair is the difference of the two as a rotation:
// |d - 2 pi round(d / 2 pi)|, at most pi; an angle that overflows F (float16 past 65504) counts
// as pi. The attention factor does not enter (it scales, it does not turn).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "posemb/rope.hpp"

namespace posemb {

enum class AngleFormat : std::uint8_t { float32, bfloat16, float16 };
inline constexpr std::array<AngleFormat, 3> kAngleFormats = {
    AngleFormat::float32, AngleFormat::bfloat16, AngleFormat::float16};
std::string_view angle_format_name(AngleFormat f);  // "float32", "bfloat16", "float16"

// The largest error among positions [0, upto).
struct AngleErrorUpTo {
  std::size_t upto = 0;
  double max_error = 0.0;  // radians
};

// One format's errors over positions [0, positions).
struct AnglePrecision {
  AngleFormat format = AngleFormat::float32;
  double max_error = 0.0;          // radians, in [0, pi]
  std::size_t worst_position = 0;  // where it is (the first such position and pair)
  std::size_t worst_pair = 0;
  std::size_t first_over = 0;      // first position with an error over the threshold;
                                   // `positions` when none
  std::size_t first_overflow = 0;  // first position whose angle overflows F; `positions`: none
  std::vector<AngleErrorUpTo> by_length = {};  // at 1024, 2048, 4096, ... and `positions`
};

// Positions checked: every one below 2^22; past it, 2^22 more spread evenly and the last one
// (positions - 1), so that a ten-million-position model takes about as long as a
// four-million one.
inline constexpr std::size_t kAnglePrecisionDense = std::size_t{1} << 22;

// The work of rope_angle_precision: the positions it checks (all below kAnglePrecisionDense,
// at most 2 kAnglePrecisionDense) times the rope's pairs, each angle formed in every format.
std::size_t rope_angle_precision_work(const Rope& rope, std::size_t positions) noexcept;

// The most work rope_angle_precision takes on (about a minute of one core): 2^31 position-pairs,
// 2^23 positions of a 512-column head (Llama 3.1's 131072 positions of 128 columns are 2^23).
inline constexpr std::size_t kAnglePrecisionMaxWork = std::size_t{1} << 31;

// The errors of each format of kAngleFormats over positions [0, positions), errors larger than
// `threshold` radians (finite, >= 0) counted from first_over. Throws std::invalid_argument for
// positions == 0, a bad threshold, or work (rope_angle_precision_work) past
// kAnglePrecisionMaxWork, before any is done: a config of 2^40 positions and a 65536-column head
// would run for hours.
std::vector<AnglePrecision> rope_angle_precision(const Rope& rope, std::size_t positions,
                                                 double threshold = 1e-3);

}  // namespace posemb
