// posemb/rope_scaling.hpp: rotary embedding past the trained length. The scaling methods of
// Hugging Face's `rope_scaling` block (transformers, modeling_rope_utils.py, ROPE_INIT_FUNCTIONS)
// as value types, and the inverse frequencies and attention factor each one gives.
//
//   // Llama 3.1 8B: head_dim 128, rope_theta 500000, trained on 8192 positions, run to 131072.
//   posemb::RopeScaling s = posemb::Llama3Scaling{.factor = 8, .low_freq_factor = 1,
//                                                 .high_freq_factor = 4,
//                                                 .original_max_position_embeddings = 8192};
//   posemb::RopeFrequencies f = posemb::rope_frequencies(500000, 128, s);
//   f.inv_freq[63];          // theta_63 / 8: a low frequency, interpolated
//   f.treatment[0];          // RopePairTreatment::extrapolated: a high frequency, kept
//   posemb::Rope rope(128, posemb::RopeLayout::half, {.base = 500000, .scaling = s});
//
// With R the rotary dimension (rope.hpp), b the base (`rope_theta`), s the factor, L0 the
// trained length and theta_i = b^(-2i/R) for pair i < R/2 (all in long double, rounded once):
//   default   theta_i                                       Su et al. 2021
//   linear    theta_i / s  (position interpolation)          Chen et al. 2023; kaiokendev
//   ntk       theta_i with b' = b * s^(R/(R-2))  (fixed)     bloc97 2023 ("NTK-aware")
//   dynamic   theta_i with b' = b * (s*L/L0 - (s-1))^(R/(R-2)), L = max(seq_len, L0)
//                                                            emozilla 2023 ("dynamic NTK")
//   yarn      theta_i/s below, theta_i above the ramp between the pairs that turn beta_slow
//             and beta_fast times over L0; attention factor 0.1 ln s + 1
//             (or mscale / mscale_all_dim, DeepSeek)         Peng et al. 2023, YaRN
//   llama3    theta_i/s at wavelengths over L0/low_freq_factor, theta_i under
//             L0/high_freq_factor, a smooth blend between     Meta, Llama 3.1 (2024)
//   longrope  theta_i / short_factor[i] up to L0, theta_i / long_factor[i] past it; attention
//             factor sqrt(1 + ln(s) / ln(L0))                 Ding et al. 2024, LongRoPE; Phi-3
// The attention factor multiplies cos and sin (the Rope's cache holds cos * a, sin * a), so
// q.k scales by a^2: YaRN's temperature.
//
// The sequence length. `dynamic` and `longrope` depend on the length of the sequence being run:
// rope_frequencies and Rope take it explicitly (seq_len; 0: the trained length, as Hugging
// Face computes at initialisation). A Rope is for one length: for a longer one build another
// (Rope::with_seq_len). Keys cached while decoding were rotated with the frequencies of the
// length at the time; Hugging Face recomputes dynamic NTK's frequencies as the sequence grows
// but keeps those keys, so a cached model's attention is not the one it computes for the whole
// sequence at once (transformers #25104). With posemb the choice is the caller's: rotate the
// whole sequence with one Rope (re-rotate the cached keys), or accept the mismatch knowingly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace posemb {

// The scaling methods, in the order of RopeScaling's alternatives.
enum class RopeScalingType : std::uint8_t { none, linear, ntk, dynamic, yarn, llama3, longrope };

// The one table of the methods' names (Hugging Face's `rope_type`; "ntk" is posemb's).
inline constexpr std::array<std::pair<RopeScalingType, std::string_view>, 7> kRopeScalingNames = {{
    {RopeScalingType::none, "default"},
    {RopeScalingType::linear, "linear"},
    {RopeScalingType::ntk, "ntk"},
    {RopeScalingType::dynamic, "dynamic"},
    {RopeScalingType::yarn, "yarn"},
    {RopeScalingType::llama3, "llama3"},
    {RopeScalingType::longrope, "longrope"},
}};

std::string_view rope_scaling_name(RopeScalingType type);                       // "yarn"
std::optional<RopeScalingType> rope_scaling_type_named(std::string_view name);  // nullopt: unknown

// The original rotary embedding, unscaled.
struct NoScaling {};

// Position interpolation: every theta_i / factor.
struct LinearScaling {
  double factor = 1.0;  // s >= 1
};

// NTK-aware scaling with a fixed base b * factor^(R/(R-2)). Needs R >= 4.
struct NtkScaling {
  double factor = 1.0;  // s >= 1
};

// Dynamic NTK: the base of NtkScaling for the factor s*L/L0 - (s-1), L = max(seq_len, L0); the
// plain frequencies up to L0. Needs R >= 4.
struct DynamicNtkScaling {
  double factor = 1.0;                      // s >= 1
  std::size_t max_position_embeddings = 0;  // L0 >= 1 (Hugging Face: max_position_embeddings)
};

// YaRN, as Hugging Face's _compute_yarn_parameters.
struct YarnScaling {
  double factor = 1.0;                               // s >= 1
  std::size_t original_max_position_embeddings = 0;  // L0 >= 1
  double beta_fast = 32.0;                           // > 0: rotations over L0 where the ramp ends
  double beta_slow = 1.0;                            // > 0: ... where it starts
  std::optional<double> attention_factor =
      std::nullopt;                             // > 0; unset: from mscale, else 0.1 ln s + 1
  std::optional<double> mscale = std::nullopt;  // >= 0; both set and non-zero:
  std::optional<double> mscale_all_dim = std::nullopt;  //   a = m(s, mscale) / m(s, mscale_all_dim)
  bool truncate = true;  // round the ramp's ends to whole pairs (floor, ceil), as the paper does
};

// Llama 3.1's scaling, as Hugging Face's _compute_llama3_parameters.
struct Llama3Scaling {
  double factor = 8.0;                                  // s >= 1
  double low_freq_factor = 1.0;                         // > 0
  double high_freq_factor = 4.0;                        // > low_freq_factor
  std::size_t original_max_position_embeddings = 8192;  // L0 >= 1
};

// LongRoPE (Phi-3), as Hugging Face's _compute_longrope_parameters: per-pair factors.
struct LongRopeScaling {
  std::vector<double> short_factor = {};  // R/2 values > 0, for sequences of up to L0 positions
  std::vector<double> long_factor = {};   // R/2 values > 0, for longer ones
  std::size_t original_max_position_embeddings = 0;  // L0 >= 1
  double factor = 1.0;  // s > 0: the extended length over L0 (for the attention factor)
  std::optional<double> attention_factor =
      std::nullopt;  // > 0; unset: sqrt(1 + ln s / ln L0), 1 for s <= 1
};

// One scaling method and its parameters. A value type.
using RopeScaling = std::variant<NoScaling, LinearScaling, NtkScaling, DynamicNtkScaling,
                                 YarnScaling, Llama3Scaling, LongRopeScaling>;

RopeScalingType rope_scaling_type(const RopeScaling& scaling) noexcept;

// A scaling parameter out of range. what() names the method, the key (as config.json spells it:
// "rope_scaling.factor", "rope_theta") and the numbers; key() is that key alone.
class RopeScalingError : public std::invalid_argument {
 public:
  RopeScalingError(std::string key, const std::string& message);
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

// Throws RopeScalingError when a parameter is out of the ranges above, a factor list does not
// hold rotary_dim / 2 values, R is too small for ntk / dynamic, the base is not > 1 for
// yarn (its ramp divides by ln b), the attention factor (yarn, longrope; given or computed) is
// not a finite, non-zero float (it multiplies cos and sin in float), or longrope computes it
// with L0 = 1 (ln L0 = 0) for a factor > 1.
void validate_rope_scaling(const RopeScaling& scaling, std::size_t rotary_dim, double base);

// What a method does to pair i.
enum class RopePairTreatment : std::uint8_t {
  unchanged,     // default: theta_i
  interpolated,  // theta_i / s (linear; yarn and llama3's low frequencies)
  extrapolated,  // theta_i kept where others are scaled (yarn and llama3's high frequencies)
  blended,       // between the two (yarn's ramp, llama3's smooth band)
  rebased,       // from another base (ntk, dynamic)
  rescaled,      // theta_i / a factor of its own (longrope)
};
std::string_view rope_pair_treatment_name(RopePairTreatment t);  // "interpolated"

// The frequencies a scaling gives for rotary_dim R at a sequence length.
struct RopeFrequencies {
  std::vector<long double> inv_freq = {};  // (R/2) theta_i as used, in long double
  std::vector<long double> stretch = {};   // (R/2) plain theta_i over inv_freq[i]: 1 unchanged
  std::vector<RopePairTreatment> treatment = {};  // (R/2)
  double attention_factor = 1.0;                  // multiplies cos and sin
  double base = 10000.0;                          // the base in effect (ntk, dynamic: b'; else b)
  bool long_factors = false;                      // longrope: long_factor in use (seq_len > L0)
};

// The widest head (and so rotary dimension) the rotation takes: 65536 columns, far past any
// model's (64 to 512), so that a mistyped size is refused instead of computing (and holding)
// billions of frequencies.
inline constexpr std::size_t kMaxRopeHeadDim = std::size_t{1} << 16;

// Validates (validate_rope_scaling), then computes. seq_len: the length of the sequence run
// (dynamic, longrope; 0: the trained length). Throws std::invalid_argument when rotary_dim is
// larger than kMaxRopeHeadDim, and RopeScalingError (naming rope_theta, or the scaling's factor
// or factor list) when a result would not be usable: an inverse frequency outside [1e-300,
// 1e300] radians per position (its wavelength 2 pi / theta then a finite double too), a stretch
// or a base in effect that is not a finite double. Every value in the result is finite.
RopeFrequencies rope_frequencies(double base, std::size_t rotary_dim, const RopeScaling& scaling,
                                 std::size_t seq_len = 0);

}  // namespace posemb
