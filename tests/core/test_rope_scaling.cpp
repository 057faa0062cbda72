// RoPE scaling (posemb/rope_scaling.hpp): the inverse frequencies and attention factors of every
// method against references written here in double from the published formulas (Su et al.;
// Chen et al.'s position interpolation; bloc97's NTK-aware base; emozilla's dynamic NTK; YaRN's
// reference code, Peng et al. 2023; Meta's apply_scaling of Llama 3.1; LongRoPE / Phi-3), for
// configurations shaped like Llama 2, Llama 3.1 8B, YaRN x4 and x8, Phi-3-128k, GPT-NeoX's
// partial rotation and a wide head; the attention factor in the Rope's cos and sin (cache and
// direct); the sequence length of dynamic and longrope; every bad parameter refused with its
// key named.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "posemb/rope.hpp"
#include "posemb/rope_scaling.hpp"
#include "rope_scaling_reference.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

// The floor is 1e-6. posemb (long double, rounded once) and these double references
// evaluate the same formulas; they differ by pow's and log's rounding in double, a few ulp
// times |exponent * ln base| <= 30: 1e-12 leaves a wide margin and still fails on any error in
// a formula.
constexpr double kRelTol = 1e-12;

using reference::rope_llama3;
using reference::rope_plain;
using reference::rope_yarn;

void expect_close(const std::vector<long double>& got, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    EXPECT_LE(std::abs(g - want[i]), kRelTol * std::abs(want[i]))
        << what << " pair " << i << ": " << g << " vs " << want[i];
  }
}

void expect_factor(double got, double want, const std::string& what) {
  EXPECT_LE(std::abs(got - want), kRelTol * std::abs(want))
      << what << ": " << got << " vs " << want;
}

TEST(RopeScaling, Llama2DefaultIsThePlainRope) {
  const RopeFrequencies f = rope_frequencies(10000, 128, NoScaling{});
  expect_close(f.inv_freq, rope_plain(10000, 128), "llama-2");
  EXPECT_EQ(f.attention_factor, 1.0);
  for (const auto t : f.treatment) EXPECT_EQ(t, RopePairTreatment::unchanged);
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  const RopeFrequencies f = rope_frequencies(10000, 128, LinearScaling{4});
  std::vector<double> want = rope_plain(10000, 128);
  for (double& v : want) v /= 4;
  expect_close(f.inv_freq, want, "linear x4");
  EXPECT_EQ(f.attention_factor, 1.0);
  for (const auto s : f.stretch) EXPECT_NEAR(static_cast<double>(s), 4.0, 4 * kRelTol);
}

TEST(RopeScaling, NtkRaisesTheBase) {
  const double b = 10000 * std::pow(4.0, 128.0 / 126.0);  // bloc97: base * s^(d/(d-2))
  const RopeFrequencies f = rope_frequencies(10000, 128, NtkScaling{4});
  expect_close(f.inv_freq, rope_plain(b, 128), "ntk x4");
  expect_factor(f.base, b, "ntk base");
  EXPECT_EQ(f.inv_freq[0], 1.0L);  // the fastest pair keeps its frequency
}

TEST(RopeScaling, DynamicDependsOnTheSequenceLength) {
  const DynamicNtkScaling d{2.0, 4096};
  // Up to the trained length: the plain frequencies, bit for bit.
  for (const std::size_t n : {0u, 100u, 4096u}) {
    const RopeFrequencies f = rope_frequencies(10000, 128, d, n);
    const RopeFrequencies p = rope_frequencies(10000, 128, NoScaling{});
    EXPECT_EQ(f.inv_freq, p.inv_freq) << n;
  }
  // Past it: base * (s * L / L0 - (s - 1))^(d / (d - 2)).
  const double b = 10000 * std::pow(2.0 * 10000 / 4096 - 1.0, 128.0 / 126.0);
  expect_close(rope_frequencies(10000, 128, d, 10000).inv_freq, rope_plain(b, 128),
               "dynamic at 10000");
  const Rope short_rope(128, RopeLayout::half, {.base = 10000, .scaling = d});
  const Rope long_rope = short_rope.with_seq_len(10000);
  EXPECT_EQ(long_rope.seq_len(), 10000u);
  expect_factor(long_rope.frequencies().base, b, "with_seq_len's base");
}

TEST(RopeScaling, Llama31Matches) {
  const Llama3Scaling s{8, 1, 4, 8192};
  const RopeFrequencies f = rope_frequencies(500000, 128, s);
  expect_close(f.inv_freq, rope_llama3(500000, 128, 8, 1, 4, 8192), "llama 3.1 8B");
  EXPECT_EQ(f.attention_factor, 1.0);
  EXPECT_EQ(f.treatment.front(), RopePairTreatment::extrapolated);
  EXPECT_EQ(f.treatment.back(), RopePairTreatment::interpolated);
  std::size_t blended = 0;
  for (const auto t : f.treatment) blended += t == RopePairTreatment::blended;
  EXPECT_GT(blended, 0u);
}

TEST(RopeScaling, YarnX4AndX8Match) {
  struct Case {
    double base;
    std::size_t dim;
    double scale, l0;
  } cases[] = {{1e6, 128, 4, 32768}, {10000, 128, 8, 4096}, {10000, 64, 8, 2048}};
  for (const Case& c : cases) {
    const std::string what = "yarn x" + std::to_string(c.scale) + " dim " + std::to_string(c.dim);
    const reference::YarnReference r = rope_yarn(c.base, c.dim, c.scale, c.l0);
    YarnScaling y;
    y.factor = c.scale;
    y.original_max_position_embeddings = static_cast<std::size_t>(c.l0);
    const RopeFrequencies f = rope_frequencies(c.base, c.dim, y);
    expect_close(f.inv_freq, r.inv, what);
    expect_factor(f.attention_factor, r.mscale, what + " attention factor");
    EXPECT_EQ(f.treatment.front(), RopePairTreatment::extrapolated) << what;
    EXPECT_EQ(f.treatment.back(), RopePairTreatment::interpolated) << what;
  }
}

TEST(RopeScaling, YarnOptions) {
  YarnScaling y;
  y.factor = 8;
  y.original_max_position_embeddings = 4096;
  y.beta_fast = 16;
  y.beta_slow = 2;
  y.truncate = false;
  expect_close(rope_frequencies(10000, 128, y).inv_freq,
               rope_yarn(10000, 128, 8, 4096, 16, 2, false).inv,
               "yarn untruncated, betas 16 and 2");
  // DeepSeek's mscale: (0.1 m ln s + 1) / (0.1 m_all ln s + 1).
  y.mscale = 1.0;
  y.mscale_all_dim = 0.8;
  expect_factor(rope_frequencies(10000, 128, y).attention_factor,
                (0.1 * std::log(8.0) + 1) / (0.08 * std::log(8.0) + 1), "mscale");
  y.mscale_all_dim = 0.0;  // one of them 0: transformers' `if mscale and mscale_all_dim` fails
  expect_factor(rope_frequencies(10000, 128, y).attention_factor, 0.1 * std::log(8.0) + 1,
                "mscale without mscale_all_dim");
  y.attention_factor = 1.25;  // given: used as is
  EXPECT_EQ(rope_frequencies(10000, 128, y).attention_factor, 1.25);
}

// Phi-3-mini-128k's shape: head_dim 96, 4096 trained positions, 131072 in all; its factor lists
// replaced by others of the same length.
LongRopeScaling phi3_like() {
  LongRopeScaling l;
  for (std::size_t i = 0; i < 48; ++i) {
    l.short_factor.push_back(1.0 + 0.01 * static_cast<double>(i));
    l.long_factor.push_back(1.0 + 1.5 * static_cast<double>(i));
  }
  l.original_max_position_embeddings = 4096;
  l.factor = 131072.0 / 4096.0;
  return l;
}

TEST(RopeScaling, LongRopeSwitchesAtTheTrainedLength) {
  const LongRopeScaling l = phi3_like();
  const std::vector<double> theta = rope_plain(10000, 96);
  for (const std::size_t n : {0u, 1u, 4096u, 4097u, 131072u}) {
    const bool use_long = n > 4096;
    std::vector<double> want;
    for (std::size_t i = 0; i < 48; ++i) {
      want.push_back(1.0 / ((use_long ? l.long_factor[i] : l.short_factor[i]) / theta[i]));
    }
    const RopeFrequencies f = rope_frequencies(10000, 96, l, n);
    expect_close(f.inv_freq, want, "longrope at " + std::to_string(n));
    EXPECT_EQ(f.long_factors, use_long) << n;
    // LongRoPE's attention factor: sqrt(1 + ln(s) / ln(L0)), the same at every length.
    expect_factor(f.attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), "af");
  }
  LongRopeScaling given = l;
  given.attention_factor = 1.1;
  EXPECT_EQ(rope_frequencies(10000, 96, given).attention_factor, 1.1);
  given.attention_factor.reset();
  given.factor = 1.0;  // no extension: no factor
  EXPECT_EQ(rope_frequencies(10000, 96, given).attention_factor, 1.0);
}

TEST(RopeScaling, PartialRotationAndWideHeads) {
  // GPT-NeoX (Pythia): rotary_pct 0.25 of 128 columns, so theta_i = base^(-2i/32).
  const Rope neox(128, RopeLayout::half, {.base = 10000, .rotary_dim = 32});
  expect_close(neox.frequencies().inv_freq, rope_plain(10000, 32), "gpt-neox partial 0.25");
  // A 256-column head (Gemma's head_dim) with linear scaling.
  const Rope wide(256, RopeLayout::half, {.base = 10000, .scaling = LinearScaling{8}});
  std::vector<double> want = rope_plain(10000, 256);
  for (double& v : want) v /= 8;
  expect_close(wide.frequencies().inv_freq, want, "head_dim 256, linear x8");
}

// a * cos and a * sin, in both the cache and the direct path: within float's rounding of the
// exact long double values.
TEST(RopeScaling, AttentionFactorMultipliesCosAndSin) {
  YarnScaling y;
  y.factor = 4;
  y.original_max_position_embeddings = 2048;
  const Rope rope(64, RopeLayout::half, {.base = 10000, .scaling = y});
  const double a = 0.1 * std::log(4.0) + 1;
  ASSERT_NEAR(rope.attention_factor(), a, 1e-15);
  const RopeCache cache(rope, 3000);
  std::vector<float> c(32), s(32);
  for (const std::size_t p : {0u, 1u, 2047u, 2999u}) {
    rope.angles(p, c, s);
    for (std::size_t i = 0; i < 32; ++i) {
      const long double angle = static_cast<long double>(p) * rope.frequencies().inv_freq[i];
      const double want_c = static_cast<double>(std::cos(angle)) * a;
      const double want_s = static_cast<double>(std::sin(angle)) * a;
      // float rounding (2^-24 relative) plus the sine kernel's 2^-52 of a.
      const double tol = a * (std::ldexp(1.0, -24) + 1e-15);
      EXPECT_NEAR(c[i], want_c, tol) << p << " " << i;
      EXPECT_NEAR(s[i], want_s, tol) << p << " " << i;
      EXPECT_EQ(cache.cos()(p, i), c[i]);  // the cache holds the same bits
      EXPECT_EQ(cache.sin()(p, i), s[i]);
    }
  }
  // rope_forward scales each rotated pair by a: |(a', b')| = a |(a, b)|.
  Matrix<float> x(1, 64);
  for (std::size_t j = 0; j < 64; ++j) x(0, j) = 1.0f;
  rope_forward(x.view(), 1, 1, 1, PositionSource::contiguous(1000), cache);
  for (std::size_t i = 0; i < 32; ++i) {
    const double n = std::hypot(x(0, i), x(0, 32 + i));
    EXPECT_NEAR(n, a * std::sqrt(2.0), 1e-6) << i;
  }
}

TEST(RopeScaling, NamesAreOneTable) {
  for (const auto& [t, name] : kRopeScalingNames) {
    EXPECT_EQ(rope_scaling_name(t), name);
    EXPECT_EQ(rope_scaling_type_named(name), t);
  }
  EXPECT_FALSE(rope_scaling_type_named("su").has_value());
  EXPECT_EQ(rope_scaling_type(RopeScaling{Llama3Scaling{}}), RopeScalingType::llama3);
  EXPECT_EQ(rope_scaling_type(RopeScaling{LongRopeScaling{}}), RopeScalingType::longrope);
}

void expect_refused(const RopeScaling& s, std::size_t R, double base, const std::string& key) {
  try {
    (void)rope_frequencies(base, R, s);
    ADD_FAILURE() << "accepted; expected an error naming " << key;
  } catch (const RopeScalingError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
  // The Rope refuses it too, as a std::invalid_argument.
  EXPECT_THROW(Rope(R == 0 ? 2 : R, RopeLayout::half, {.base = base, .scaling = s}),
               std::invalid_argument);
}

TEST(RopeScaling, BadParametersAreRefusedByKey) {
  expect_refused(LinearScaling{0.5}, 64, 10000, "rope_scaling.factor");
  expect_refused(LinearScaling{NAN}, 64, 10000, "rope_scaling.factor");
  expect_refused(NtkScaling{2}, 2, 10000, "rotary_dim");
  expect_refused(DynamicNtkScaling{2, 0}, 64, 10000, "max_position_embeddings");
  YarnScaling y;
  y.factor = 4;
  expect_refused(y, 64, 10000, "rope_scaling.original_max_position_embeddings");
  y.original_max_position_embeddings = 4096;
  expect_refused(y, 64, 1.0, "rope_theta");
  y.beta_fast = -1;
  expect_refused(y, 64, 10000, "rope_scaling.beta_fast");
  y.beta_fast = 32;
  y.mscale = -1;
  expect_refused(y, 64, 10000, "rope_scaling.mscale");
  y.mscale.reset();
  y.attention_factor = 0;
  expect_refused(y, 64, 10000, "rope_scaling.attention_factor");
  expect_refused(Llama3Scaling{8, 4, 1, 8192}, 64, 500000, "rope_scaling.high_freq_factor");
  expect_refused(Llama3Scaling{8, 1, 4, 0}, 64, 500000,
                 "rope_scaling.original_max_position_embeddings");
  LongRopeScaling l = phi3_like();
  expect_refused(l, 64, 10000, "rope_scaling.short_factor");  // 48 values, 32 pairs
  l.short_factor[3] = 0;
  expect_refused(l, 96, 10000, "rope_scaling.short_factor[3]");
  l = phi3_like();
  l.long_factor.pop_back();
  expect_refused(l, 96, 10000, "rope_scaling.long_factor");
}

// The attention factor multiplies cos and sin in float: a factor that is infinite as a float,
// given or computed, is refused (YaRN took 1e300 and the rotations came out NaN; LongRoPE with
// L0 = 1 divided by ln 1 = 0 and its factor was inf).
TEST(RopeScaling, AttentionFactorsThatAreNotFiniteFloatsAreRefused) {
  YarnScaling y;
  y.factor = 4;
  y.original_max_position_embeddings = 4096;
  for (const double a : {1e300, 1e39, 3.5e38, 1e-300}) {
    y.attention_factor = a;
    expect_refused(y, 64, 10000, "rope_scaling.attention_factor");
  }
  y.attention_factor = 3e38;  // a float, so still taken
  EXPECT_NEAR(rope_frequencies(10000, 64, y).attention_factor, 3e38, 1e23);
  // Computed from mscale / mscale_all_dim: 0.1 * 1e300 * ln 4 + 1 over 1.
  y.attention_factor.reset();
  y.mscale = 1e300;
  y.mscale_all_dim = 1e-300;
  expect_refused(y, 64, 10000, "rope_scaling.attention_factor");
  LongRopeScaling l = phi3_like();
  l.original_max_position_embeddings = 1;  // factor 32: sqrt(1 + ln 32 / ln 1)
  expect_refused(l, 96, 10000, "original_max_position_embeddings");
  l.factor = 4;
  expect_refused(l, 96, 10000, "original_max_position_embeddings");
  l.factor = 1;  // no extension: factor 1, nothing divided
  EXPECT_EQ(rope_frequencies(10000, 96, l).attention_factor, 1.0);
  l.factor = 4;
  l.attention_factor = 1.5;  // given: ln L0 is not needed
  EXPECT_EQ(rope_frequencies(10000, 96, l).attention_factor, 1.5);
  l.attention_factor = 1e300;
  expect_refused(l, 96, 10000, "rope_scaling.attention_factor");
}

// The headers' examples as written, built with -Wextra -Werror like every test: designated
// initializers that leave out the std::optional members (YaRN's attention_factor, mscale,
// mscale_all_dim; LongRoPE's lists and attention_factor) failed with
// -Werror=missing-field-initializers (g++ 12) until those members had default initializers.
TEST(RopeScaling, HeaderExamplesCompileWithEveryWarning) {
  // posemb/rope.hpp:
  posemb::Rope yarn(
      128, posemb::RopeLayout::half,
      {.base = 1e6,
       .scaling = posemb::YarnScaling{.factor = 4, .original_max_position_embeddings = 32768}});
  EXPECT_NEAR(yarn.attention_factor(), 0.1 * std::log(4.0) + 1, 1e-12);
  // posemb/rope_scaling.hpp:
  posemb::RopeScaling s = posemb::Llama3Scaling{.factor = 8,
                                                .low_freq_factor = 1,
                                                .high_freq_factor = 4,
                                                .original_max_position_embeddings = 8192};
  EXPECT_EQ(posemb::rope_frequencies(500000, 128, s).inv_freq.size(), 64u);
  const LongRopeScaling l{.original_max_position_embeddings = 4096, .factor = 1};
  EXPECT_TRUE(l.short_factor.empty() && !l.attention_factor);
}

}  // namespace
}  // namespace posemb
