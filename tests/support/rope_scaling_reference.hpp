// Test support: the RoPE scaling methods' inverse frequencies and attention factors, written in
// double from their published formulas (not from posemb's code), for tests/core and tests/io.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

namespace posemb::reference {

// theta_i = 1 / base^(2i / R) (Su et al. 2021, eq. 15).
inline std::vector<double> rope_plain(double base, std::size_t R) {
  std::vector<double> t;
  for (std::size_t i = 0; i < R / 2; ++i) {
    t.push_back(1.0 / std::pow(base, (2.0 * static_cast<double>(i)) / static_cast<double>(R)));
  }
  return t;
}

// YaRN's reference implementation (jquesnelle/yarn, LlamaYaRNScaledRotaryEmbedding: the
// correction range, the linear ramp mask, the mscale 0.1 ln s + 1), in double.
struct YarnReference {
  std::vector<double> inv;
  double mscale;
};
inline YarnReference rope_yarn(double base, std::size_t dim, double scale, double l0,
                               double beta_fast = 32, double beta_slow = 1, bool truncate = true) {
  const double d = static_cast<double>(dim);
  auto correction_dim = [&](double rot) {
    return (d * std::log(l0 / (rot * 2 * std::numbers::pi))) / (2 * std::log(base));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, d - 1.0);
  if (low == high) high += 0.001;
  YarnReference r;
  for (std::size_t i = 0; i < dim / 2; ++i) {
    const double pos_freq = std::pow(base, (2.0 * static_cast<double>(i)) / d);
    const double extra = 1.0 / pos_freq, inter = 1.0 / (scale * pos_freq);
    const double ramp = std::min(1.0, std::max(0.0, (static_cast<double>(i) - low) / (high - low)));
    const double mask = 1.0 - ramp;  // 1: extrapolate
    r.inv.push_back(inter * (1.0 - mask) + extra * mask);
  }
  r.mscale = scale <= 1 ? 1.0 : 0.1 * std::log(scale) + 1.0;
  return r;
}

// Meta's apply_scaling (llama-models, Llama 3.1), in double.
inline std::vector<double> rope_llama3(double base, std::size_t dim, double scale, double low_ff,
                                       double high_ff, double l0) {
  std::vector<double> out;
  for (const double f : rope_plain(base, dim)) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen < l0 / high_ff) {
      out.push_back(f);
    } else if (wavelen > l0 / low_ff) {
      out.push_back(f / scale);
    } else {
      const double smooth = (l0 / wavelen - low_ff) / (high_ff - low_ff);
      out.push_back((1 - smooth) * f / scale + smooth * f);
    }
  }
  return out;
}

// LongRoPE (Phi-3's Phi3LongRoPEScaledRotaryEmbedding): theta_i / ext_i, and its scaling
// factor sqrt(1 + ln(s) / ln(L0)).
inline std::vector<double> rope_longrope(double base, std::size_t dim,
                                         const std::vector<double>& ext) {
  std::vector<double> out = rope_plain(base, dim);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = 1.0 / (ext[i] * (1.0 / out[i]));
  return out;
}
inline double longrope_attention(double scale, double l0) {
  return scale <= 1.0 ? 1.0 : std::sqrt(1 + std::log(scale) / std::log(l0));
}

// NTK-aware (bloc97) and dynamic NTK (emozilla): base * x^(d / (d - 2)).
inline double rope_ntk_base(double base, std::size_t dim, double x) {
  const double d = static_cast<double>(dim);
  return base * std::pow(x, d / (d - 2));
}

}  // namespace posemb::reference
