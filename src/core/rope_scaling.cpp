// The scaling methods of the rotary embedding. Each one follows the function of Hugging Face
// transformers' src/transformers/modeling_rope_utils.py named beside it (ROPE_INIT_FUNCTIONS),
// computed in long double and rounded once by the caller, where transformers computes in
// float32.
#include "posemb/rope_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "angles.hpp"

namespace posemb {
namespace {

constexpr long double kPi = 3.141592653589793238462643383279502884L;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

[[noreturn]] void refuse(const char* method, std::string key, const std::string& problem) {
  const std::string what = std::string("rope scaling '") + method + "': " + key + " " + problem;
  throw RopeScalingError(std::move(key), what);
}

void check_factor(const char* method, double factor, double min = 1.0) {
  if (!(std::isfinite(factor) && factor >= min)) {
    refuse(method, "rope_scaling.factor",
           "= " + num(factor) + " must be finite and >= " + num(min));
  }
}

void check_positive(const char* method, const char* key, double v) {
  if (!(std::isfinite(v) && v > 0.0)) {
    refuse(method, std::string("rope_scaling.") + key, "= " + num(v) + " must be finite and > 0");
  }
}

void check_length(const char* method, const char* key, std::size_t length) {
  if (length == 0) refuse(method, key, "= 0 must be at least 1 (a number of positions)");
}

void check_list(const char* method, const char* key, const std::vector<double>& v,
                std::size_t rotary_dim) {
  if (v.size() != rotary_dim / 2) {
    refuse(method, std::string("rope_scaling.") + key,
           "holds " + std::to_string(v.size()) + " values, but the rotary dimension " +
               std::to_string(rotary_dim) + " has " + std::to_string(rotary_dim / 2) +
               " pairs (one factor per pair)");
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!(std::isfinite(v[i]) && v[i] > 0.0)) {
      refuse(method, std::string("rope_scaling.") + key + "[" + std::to_string(i) + "]",
             "= " + num(v[i]) + " must be finite and > 0");
    }
  }
}

void check_ntk_dim(const char* method, std::size_t rotary_dim) {
  if (rotary_dim < 4) {
    refuse(method, "rotary_dim",
           "= " + std::to_string(rotary_dim) +
               ": NTK scaling raises the factor to R/(R-2) and needs R >= 4");
  }
}

// theta_i = b^(-2i/R), exactly as the unscaled Rope forms it.
long double plain(double base, std::size_t i, std::size_t rotary_dim) {
  const long double expo = static_cast<long double>(2 * i) / static_cast<long double>(rotary_dim);
  return detail::inverse_frequency(base, expo).ld;
}

RopeFrequencies with_base(double base, std::size_t rotary_dim, RopePairTreatment t) {
  RopeFrequencies f;
  f.base = base;
  for (std::size_t i = 0; i < rotary_dim / 2; ++i) {
    f.inv_freq.push_back(plain(base, i, rotary_dim));
    f.treatment.push_back(t);
  }
  return f;
}

// _compute_dynamic_ntk_parameters (and the fixed form, x = s): b' = b * x^(R/(R-2)).
RopeFrequencies rebased(double base, std::size_t rotary_dim, long double x) {
  const long double r = static_cast<long double>(rotary_dim);
  const long double b = static_cast<long double>(base) * std::pow(x, r / (r - 2.0L));
  if (x == 1.0L) return with_base(base, rotary_dim, RopePairTreatment::unchanged);
  RopeFrequencies f;
  f.base = static_cast<double>(b);
  for (std::size_t i = 0; i < rotary_dim / 2; ++i) {
    f.inv_freq.push_back(std::pow(b, -static_cast<long double>(2 * i) / r));
    f.treatment.push_back(RopePairTreatment::rebased);
  }
  return f;
}

// get_mscale of _compute_yarn_parameters: 0.1 * m * ln(s) + 1, 1 for s <= 1.
long double yarn_mscale(long double s, long double m) {
  return s <= 1.0L ? 1.0L : 0.1L * m * std::log(s) + 1.0L;
}

// YaRN's attention factor: the given one, else from mscale and mscale_all_dim when both are set
// and non-zero, else get_mscale(s).
long double yarn_attention_factor(const YarnScaling& y) {
  const long double s = y.factor;
  if (y.attention_factor) return *y.attention_factor;
  if (y.mscale.value_or(0.0) != 0.0 && y.mscale_all_dim.value_or(0.0) != 0.0) {
    return yarn_mscale(s, *y.mscale) / yarn_mscale(s, *y.mscale_all_dim);
  }
  return yarn_mscale(s, 1.0L);
}

// LongRoPE's attention factor: the given one, else sqrt(1 + ln s / ln L0) (1 for s <= 1).
long double longrope_attention_factor(const LongRopeScaling& l) {
  if (l.attention_factor) return *l.attention_factor;
  if (!(l.factor > 1.0)) return 1.0L;
  const long double l0 = static_cast<long double>(l.original_max_position_embeddings);
  return std::sqrt(1.0L + std::log(static_cast<long double>(l.factor)) / std::log(l0));
}

// The attention factor multiplies cos and sin in float: it must be a finite, non-zero float
// (1e300 passed as a double and the rotations came out infinite or NaN).
void check_attention_factor(const char* method, long double a, bool given) {
  constexpr long double kMax = std::numeric_limits<float>::max();
  if (!(std::isfinite(a) && a > 0.0L && a <= kMax && static_cast<float>(a) > 0.0f)) {
    refuse(method, "rope_scaling.attention_factor",
           (given ? "= " : "computed from the other parameters = ") + num(static_cast<double>(a)) +
               " must be > 0 and finite as a float (at most " + num(static_cast<double>(kMax)) +
               ", the attention factor multiplies cos and sin in float)");
  }
}

// _compute_yarn_parameters (with find_correction_dim, find_correction_range,
// linear_ramp_factor and get_mscale).
RopeFrequencies yarn(double base, std::size_t rotary_dim, const YarnScaling& y) {
  const long double dim = static_cast<long double>(rotary_dim);
  const long double s = y.factor;
  const long double l0 = static_cast<long double>(y.original_max_position_embeddings);
  const long double lnb = std::log(static_cast<long double>(base));
  // The (fractional) pair that turns `rotations` times over L0.
  auto correction_dim = [&](long double rotations) {
    return dim * std::log(l0 / (rotations * 2.0L * kPi)) / (2.0L * lnb);
  };
  long double low = correction_dim(y.beta_fast);
  long double high = correction_dim(y.beta_slow);
  if (y.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0L);
  high = std::min(high, dim - 1.0L);
  if (low == high) high += 0.001L;  // as linear_ramp_factor: no division by zero
  RopeFrequencies f;
  f.base = base;
  for (std::size_t i = 0; i < rotary_dim / 2; ++i) {
    const long double extrapolation = plain(base, i, rotary_dim);
    const long double interpolation = extrapolation / s;
    // ramp 0: extrapolation (the high frequencies), 1: interpolation.
    const long double ramp =
        std::clamp((static_cast<long double>(i) - low) / (high - low), 0.0L, 1.0L);
    const long double keep = 1.0L - ramp;  // inv_freq_extrapolation_factor
    f.inv_freq.push_back(interpolation * (1.0L - keep) + extrapolation * keep);
    f.treatment.push_back(ramp == 0.0L   ? RopePairTreatment::extrapolated
                          : ramp == 1.0L ? RopePairTreatment::interpolated
                                         : RopePairTreatment::blended);
  }
  f.attention_factor = static_cast<double>(yarn_attention_factor(y));
  return f;
}

// _compute_llama3_parameters.
RopeFrequencies llama3(double base, std::size_t rotary_dim, const Llama3Scaling& l) {
  const long double s = l.factor;
  const long double l0 = static_cast<long double>(l.original_max_position_embeddings);
  const long double low_wavelen = l0 / l.low_freq_factor;
  const long double high_wavelen = l0 / l.high_freq_factor;
  RopeFrequencies f;
  f.base = base;
  for (std::size_t i = 0; i < rotary_dim / 2; ++i) {
    const long double theta = plain(base, i, rotary_dim);
    const long double wavelen = 2.0L * kPi / theta;
    if (wavelen > low_wavelen) {
      f.inv_freq.push_back(theta / s);
      f.treatment.push_back(RopePairTreatment::interpolated);
    } else if (wavelen < high_wavelen) {
      f.inv_freq.push_back(theta);
      f.treatment.push_back(RopePairTreatment::extrapolated);
    } else {
      const long double smooth =
          (l0 / wavelen - l.low_freq_factor) / (l.high_freq_factor - l.low_freq_factor);
      f.inv_freq.push_back((1.0L - smooth) * theta / s + smooth * theta);
      f.treatment.push_back(RopePairTreatment::blended);
    }
  }
  return f;
}

// _compute_longrope_parameters (the long factors as dynamic_rope_update switches to them).
RopeFrequencies longrope(double base, std::size_t rotary_dim, const LongRopeScaling& l,
                         std::size_t seq_len) {
  RopeFrequencies f;
  f.base = base;
  f.long_factors = seq_len > l.original_max_position_embeddings;
  const std::vector<double>& ext = f.long_factors ? l.long_factor : l.short_factor;
  for (std::size_t i = 0; i < rotary_dim / 2; ++i) {
    f.inv_freq.push_back(plain(base, i, rotary_dim) / static_cast<long double>(ext[i]));
    f.treatment.push_back(RopePairTreatment::rescaled);
  }
  f.attention_factor = static_cast<double>(longrope_attention_factor(l));
  return f;
}

// The key a result out of range is blamed on: the base unscaled, else the scaling's factor (or
// factor list); with its value when it has one.
std::string blamed_key(const RopeScaling& scaling, const RopeFrequencies& f) {
  switch (rope_scaling_type(scaling)) {
    case RopeScalingType::none:
      return "rope_theta";
    case RopeScalingType::longrope:
      return f.long_factors ? "rope_scaling.long_factor" : "rope_scaling.short_factor";
    default:
      return "rope_scaling.factor";
  }
}
std::string blamed_value(const RopeScaling& scaling, double base) {
  return std::visit(
      [&](const auto& s) -> std::string {
        if constexpr (requires { s.factor; }) {
          if (rope_scaling_type(scaling) != RopeScalingType::longrope) return "= " + num(s.factor);
          return "";
        } else {
          return "= " + num(base);
        }
      },
      scaling);
}

// Every result finite and usable, or refused: each inverse frequency in [kMinInverseFrequency,
// kMaxInverseFrequency] (so its wavelength 2 pi / theta is a finite double too), its stretch and
// the base in effect finite doubles. A rope_theta of 5e-324 made frequencies of 1e303, a linear
// factor of 1e308 frequencies below the smallest normal double and wavelengths of infinity.
void check_results(const RopeScaling& scaling, double base, const RopeFrequencies& f) {
  const char* method = rope_scaling_name(rope_scaling_type(scaling)).data();
  const std::string given = "rope_theta = " + num(base);
  const std::string value = blamed_value(scaling, base);
  const auto with_value = [&](const std::string& problem) {
    return value.empty() ? problem : value + " " + problem;
  };
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    const long double v = f.inv_freq[i];
    if (!(v >= detail::kMinInverseFrequency && v <= detail::kMaxInverseFrequency)) {
      refuse(method, blamed_key(scaling, f),
             with_value("makes pair " + std::to_string(i) + "'s inverse frequency " +
                        num(static_cast<double>(v)) + " (with " + given +
                        "), outside the [1e-300, 1e300] radians per position posemb computes "
                        "with"));
    }
    if (!std::isfinite(static_cast<double>(f.stretch[i]))) {
      refuse(method, blamed_key(scaling, f),
             with_value("stretches pair " + std::to_string(i) + "'s wavelength " +
                        num(static_cast<double>(f.stretch[i])) + " times (with " + given +
                        "), past the largest double"));
    }
  }
  if (!std::isfinite(f.base) || !(f.base > 0.0)) {
    refuse(method, blamed_key(scaling, f),
           with_value("makes the base in effect " + num(f.base) + " (with " + given +
                      "), not a finite positive double"));
  }
}

struct Validate {
  std::size_t rotary_dim;
  double base;
  void operator()(const NoScaling&) const {}
  void operator()(const LinearScaling& l) const { check_factor("linear", l.factor); }
  void operator()(const NtkScaling& n) const {
    check_factor("ntk", n.factor);
    check_ntk_dim("ntk", rotary_dim);
  }
  void operator()(const DynamicNtkScaling& d) const {
    check_factor("dynamic", d.factor);
    check_length("dynamic", "max_position_embeddings", d.max_position_embeddings);
    check_ntk_dim("dynamic", rotary_dim);
  }
  void operator()(const YarnScaling& y) const {
    check_factor("yarn", y.factor);
    check_length("yarn", "rope_scaling.original_max_position_embeddings",
                 y.original_max_position_embeddings);
    check_positive("yarn", "beta_fast", y.beta_fast);
    check_positive("yarn", "beta_slow", y.beta_slow);
    if (y.attention_factor) check_positive("yarn", "attention_factor", *y.attention_factor);
    for (const auto& [key, m] :
         {std::pair{"mscale", y.mscale}, {"mscale_all_dim", y.mscale_all_dim}}) {
      if (m && !(std::isfinite(*m) && *m >= 0.0)) {
        refuse("yarn", std::string("rope_scaling.") + key,
               "= " + num(*m) + " must be finite and >= 0");
      }
    }
    if (!(base > 1.0)) {
      refuse("yarn", "rope_theta", "= " + num(base) + " must be > 1 (the ramp divides by ln b)");
    }
    check_attention_factor("yarn", yarn_attention_factor(y), y.attention_factor.has_value());
  }
  void operator()(const Llama3Scaling& l) const {
    check_factor("llama3", l.factor);
    check_positive("llama3", "low_freq_factor", l.low_freq_factor);
    check_positive("llama3", "high_freq_factor", l.high_freq_factor);
    if (!(l.high_freq_factor > l.low_freq_factor)) {
      refuse("llama3", "rope_scaling.high_freq_factor",
             "= " + num(l.high_freq_factor) +
                 " must be larger than low_freq_factor = " + num(l.low_freq_factor));
    }
    check_length("llama3", "rope_scaling.original_max_position_embeddings",
                 l.original_max_position_embeddings);
  }
  void operator()(const LongRopeScaling& l) const {
    check_list("longrope", "short_factor", l.short_factor, rotary_dim);
    check_list("longrope", "long_factor", l.long_factor, rotary_dim);
    check_length("longrope", "original_max_position_embeddings",
                 l.original_max_position_embeddings);
    check_positive("longrope", "factor", l.factor);
    if (l.attention_factor) check_positive("longrope", "attention_factor", *l.attention_factor);
    if (!l.attention_factor && l.factor > 1.0 && l.original_max_position_embeddings == 1) {
      refuse("longrope", "original_max_position_embeddings",
             "= 1 leaves the attention factor sqrt(1 + ln s / ln L0) undefined (ln 1 = 0) for "
             "factor = " +
                 num(l.factor) + " (give attention_factor, or L0 >= 2)");
    }
    check_attention_factor("longrope", longrope_attention_factor(l),
                           l.attention_factor.has_value());
  }
};

}  // namespace

RopeScalingError::RopeScalingError(std::string key, const std::string& message)
    : std::invalid_argument(message), key_(std::move(key)) {}

std::string_view rope_scaling_name(RopeScalingType type) {
  for (const auto& [t, name] : kRopeScalingNames) {
    if (t == type) return name;
  }
  return "unknown";
}

std::optional<RopeScalingType> rope_scaling_type_named(std::string_view name) {
  for (const auto& [t, n] : kRopeScalingNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

RopeScalingType rope_scaling_type(const RopeScaling& scaling) noexcept {
  return static_cast<RopeScalingType>(scaling.index());
}

std::string_view rope_pair_treatment_name(RopePairTreatment t) {
  switch (t) {
    case RopePairTreatment::unchanged:
      return "unchanged";
    case RopePairTreatment::interpolated:
      return "interpolated";
    case RopePairTreatment::extrapolated:
      return "extrapolated";
    case RopePairTreatment::blended:
      return "blended";
    case RopePairTreatment::rebased:
      return "rebased";
    case RopePairTreatment::rescaled:
      return "rescaled";
  }
  return "unknown";
}

void validate_rope_scaling(const RopeScaling& scaling, std::size_t rotary_dim, double base) {
  std::visit(Validate{rotary_dim, base}, scaling);
}

RopeFrequencies rope_frequencies(double base, std::size_t rotary_dim, const RopeScaling& scaling,
                                 std::size_t seq_len) {
  if (rotary_dim > kMaxRopeHeadDim) {
    throw std::invalid_argument("rope_frequencies: rotary_dim R = " + std::to_string(rotary_dim) +
                                " is more than the " + std::to_string(kMaxRopeHeadDim) +
                                " columns a head may have (kMaxRopeHeadDim)");
  }
  validate_rope_scaling(scaling, rotary_dim, base);
  RopeFrequencies f;
  if (const auto* l = std::get_if<LinearScaling>(&scaling)) {
    // _compute_linear_scaling_rope_parameters: the default frequencies / factor.
    f = with_base(base, rotary_dim, RopePairTreatment::interpolated);
    for (long double& v : f.inv_freq) v /= static_cast<long double>(l->factor);
  } else if (const auto* n = std::get_if<NtkScaling>(&scaling)) {
    f = rebased(base, rotary_dim, n->factor);
  } else if (const auto* d = std::get_if<DynamicNtkScaling>(&scaling)) {
    // _compute_dynamic_ntk_parameters: seq_len = max(seq_len, max_position_embeddings).
    // x = s*L/L0 - (s-1), written 1 + s*(L - L0)/L0: the same number without the cancellation
    // that made it 0 for a large s at L = L0 (s*1 - (s-1) rounds to 0 once s passes 2^64), and
    // a base of 0 made every inverse frequency infinite.
    const std::size_t l0 = d->max_position_embeddings;
    const std::size_t beyond = seq_len > l0 ? seq_len - l0 : 0;
    const long double s = d->factor;
    f = rebased(base, rotary_dim,
                1.0L + s * static_cast<long double>(beyond) / static_cast<long double>(l0));
  } else if (const auto* y = std::get_if<YarnScaling>(&scaling)) {
    f = yarn(base, rotary_dim, *y);
  } else if (const auto* l3 = std::get_if<Llama3Scaling>(&scaling)) {
    f = llama3(base, rotary_dim, *l3);
  } else if (const auto* lr = std::get_if<LongRopeScaling>(&scaling)) {
    f = longrope(base, rotary_dim, *lr, seq_len);
  } else {
    f = with_base(base, rotary_dim, RopePairTreatment::unchanged);  // the default
  }
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    f.stretch.push_back(plain(base, i, rotary_dim) / f.inv_freq[i]);
  }
  check_results(scaling, base, f);
  return f;
}

}  // namespace posemb
