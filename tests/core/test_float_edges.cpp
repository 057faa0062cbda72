// Every factor, scale, base and theta a configuration can carry, at the edges of float: 0, -0,
// the smallest subnormal, a subnormal, 1e-300, 1e300, 1e308, the largest double, infinities, NaN
// and negatives, in every parameter of every rotary scaling, in the sinusoidal base and in a
// config.json. Each is refused (std::invalid_argument, naming the key) or gives a rotation whose
// every number is finite: inverse frequencies, stretches, the attention factor, the base in
// effect, and the rotated values at positions near and far. Dynamic NTK with a factor of 1e20
// once computed a base of 0 and wrote NaN; linear with 1e308 made wavelengths of infinity.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/matrix.hpp"
#include "posemb/positions.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_config.hpp"
#include "posemb/rope_scaling.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb {
namespace {

using L = std::numeric_limits<double>;
const std::vector<double> kEdges = {0.0,
                                    -0.0,
                                    L::denorm_min(),
                                    1e-310,
                                    1e-300,
                                    1e-30,
                                    0.5,
                                    1.0,
                                    4.0,
                                    1e20,
                                    1e300,
                                    1e308,
                                    L::max(),
                                    L::infinity(),
                                    -L::infinity(),
                                    L::quiet_NaN(),
                                    -1.0,
                                    -1e-300};

constexpr std::size_t kDim = 64;  // the rotary dimension (32 pairs)
constexpr std::size_t kTrained = 4096;

// Every number of the frequencies finite, the inverse frequencies positive.
void expect_finite(const RopeFrequencies& f, const std::string& what) {
  ASSERT_FALSE(f.inv_freq.empty()) << what;
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    const auto v = static_cast<double>(f.inv_freq[i]);
    EXPECT_TRUE(std::isfinite(v) && v > 0.0 && std::isnormal(v))
        << what << " pair " << i << ": " << v;
    EXPECT_TRUE(std::isfinite(2 * std::numbers::pi / v)) << what << " wavelength of pair " << i;
    EXPECT_TRUE(std::isfinite(static_cast<double>(f.stretch[i]))) << what << " stretch " << i;
  }
  EXPECT_TRUE(std::isfinite(f.attention_factor) && f.attention_factor > 0.0) << what;
  EXPECT_TRUE(std::isfinite(f.base) && f.base > 0.0) << what;
}

// x rotated at positions 0, 1, 2^20 and 2^40 (the far ones past the trained length) is finite.
void expect_finite_rotation(const Rope& rope, const std::string& what) {
  Matrix<float> x(4, rope.head_dim());
  for (float& v : x.flat()) v = 0.5f;
  Matrix<std::int64_t> ids(1, 4);
  const std::int64_t p[] = {0, 1, std::int64_t{1} << 20, std::int64_t{1} << 40};
  for (std::size_t t = 0; t < 4; ++t) ids(0, t) = p[t];
  rope_forward(x, 1, 1, 4, PositionSource::explicit_ids(ids.cview()), rope);
  for (const float v : x.flat()) ASSERT_TRUE(std::isfinite(v)) << what;
}

// Computes (or refuses) scaling with base at the lengths a run may ask for; a result must be
// finite, a refusal a std::invalid_argument. Returns the number of refusals.
int try_scaling(const RopeScaling& s, double base, const std::string& what) {
  int refused = 0;
  for (const std::size_t seq_len :
       {std::size_t{0}, kTrained, 2 * kTrained, std::size_t{1} << 40, std::size_t{1} << 62}) {
    const std::string at = what + " at seq_len " + std::to_string(seq_len);
    try {
      expect_finite(rope_frequencies(base, kDim, s, seq_len), at);
      expect_finite_rotation(Rope(kDim, RopeLayout::half, {base, 0, s, seq_len}), at);
    } catch (const std::invalid_argument& e) {
      std::string w = e.what();
      for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      EXPECT_NE(w.find("rope"), std::string::npos) << at << ": " << e.what();  // names the op
      ++refused;
    }
  }
  return refused;
}

TEST(FloatEdges, EveryScalingParameterIsRefusedOrGivesFiniteRotations) {
  int refused = 0, accepted = 0;
  auto run = [&](const RopeScaling& s, double base, const std::string& what) {
    const int r = try_scaling(s, base, what);
    refused += r;
    accepted += 5 - r;
  };
  for (const double v : kEdges) {
    char text[32];
    std::snprintf(text, sizeof text, " = %.17g", v);
    const std::string tag = text;
    run(NoScaling{}, v, "rope_theta" + tag);
    run(LinearScaling{v}, 10000.0, "linear factor" + tag);
    run(NtkScaling{v}, 10000.0, "ntk factor" + tag);
    run(DynamicNtkScaling{v, kTrained}, 10000.0, "dynamic factor" + tag);
    run(DynamicNtkScaling{4.0, kTrained}, v, "dynamic rope_theta" + tag);
    YarnScaling y{4.0, kTrained};
    for (double YarnScaling::*field :
         {&YarnScaling::factor, &YarnScaling::beta_fast, &YarnScaling::beta_slow}) {
      YarnScaling z = y;
      z.*field = v;
      run(z, 10000.0, "yarn" + tag);
    }
    for (auto field :
         {&YarnScaling::attention_factor, &YarnScaling::mscale, &YarnScaling::mscale_all_dim}) {
      YarnScaling z = y;
      z.*field = v;
      if (field != &YarnScaling::attention_factor) {
        z.mscale = z.mscale.value_or(1.0);
        z.mscale_all_dim = z.mscale_all_dim.value_or(1.0);
      }
      run(z, 10000.0, "yarn optional" + tag);
    }
    run(y, v, "yarn rope_theta" + tag);
    for (double Llama3Scaling::*field : {&Llama3Scaling::factor, &Llama3Scaling::low_freq_factor,
                                         &Llama3Scaling::high_freq_factor}) {
      Llama3Scaling l;
      l.*field = v;
      run(l, 500000.0, "llama3" + tag);
    }
    LongRopeScaling lr{std::vector<double>(kDim / 2, 1.0), std::vector<double>(kDim / 2, 4.0),
                       kTrained, 4.0};
    for (const std::size_t at : {std::size_t{0}, kDim / 2 - 1}) {
      LongRopeScaling s = lr, l = lr;
      s.short_factor[at] = v;
      l.long_factor[at] = v;
      run(s, 10000.0, "longrope short_factor" + tag);
      run(l, 10000.0, "longrope long_factor" + tag);
    }
    LongRopeScaling f = lr;
    f.factor = v;
    run(f, 10000.0, "longrope factor" + tag);
    f = lr;
    f.attention_factor = v;
    run(f, 10000.0, "longrope attention_factor" + tag);
  }
  // Both outcomes occur: the edges are not all refused, nor all taken.
  EXPECT_GT(refused, 100);
  EXPECT_GT(accepted, 100);
}

TEST(FloatEdges, TheIssuesCasesAreRefusedOrFinite) {
  // Dynamic NTK, factor 1e20: s*L/L0 - (s-1) rounded to 0 at L = L0 (base 0, every frequency
  // infinite); now 1 + s*(L - L0)/L0, exactly 1 there.
  const RopeFrequencies d = rope_frequencies(10000.0, kDim, DynamicNtkScaling{1e20, kTrained}, 0);
  expect_finite(d, "dynamic 1e20");
  EXPECT_EQ(d.base, 10000.0);
  // Linear 1e308: frequencies below the smallest normal double, refused naming the factor.
  try {
    (void)rope_frequencies(10000.0, kDim, LinearScaling{1e308}, 0);
    ADD_FAILURE() << "linear 1e308 was not refused";
  } catch (const RopeScalingError& e) {
    EXPECT_EQ(e.key(), "rope_scaling.factor");
    EXPECT_NE(std::string(e.what()).find("1e+308"), std::string::npos) << e.what();
  }
}

TEST(FloatEdges, TheSinusoidalBaseIsRefusedOrGivesFiniteValues) {
  for (const double v : kEdges) {
    try {
      const Matrix<float> pe =
          sinusoidal_positional_encoding(3, 16, std::size_t{1} << 40, {.base = v});
      for (const float x : pe.flat()) ASSERT_TRUE(std::isfinite(x)) << "base " << v;
      EXPECT_TRUE(v >= 1e-300 && v <= 1e300) << v;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("base = "), std::string::npos) << e.what();
      EXPECT_FALSE(v >= 1e-300 && v <= 1e300) << v;
    }
  }
}

// The numbers a config.json can hold (JSON has no infinity or NaN: 1e400 is refused as an
// overflow), in every key of every scaling.
TEST(FloatEdges, ConfigValuesAtTheEdgesAreRefusedOrFinite) {
  const std::vector<std::string> numbers = {
      "0",     "-0",    "4.9406564584124654e-324", "1e-310", "1e-300", "0.5", "1", "4", "1e20",
      "1e300", "1e308", "1.7976931348623157e308",  "-1",     "1e400"};
  const std::string top =
      R"("hidden_size": 128, "num_attention_heads": 2, "max_position_embeddings": 4096, )";
  std::vector<std::string> configs;
  for (const std::string& n : numbers) {
    configs.push_back("{" + top + R"("rope_theta": )" + n + "}");
    configs.push_back("{" + top + R"("partial_rotary_factor": )" + n + "}");
    for (const char* type : {"linear", "dynamic", "ntk"}) {
      configs.push_back("{" + top + R"("rope_scaling": {"rope_type": ")" + type +
                        R"(", "factor": )" + n + "}}");
    }
    for (const char* key : {"factor", "beta_fast", "beta_slow", "attention_factor", "mscale"}) {
      configs.push_back("{" + top + R"("rope_scaling": {"rope_type": "yarn", "factor": 4, )" +
                        R"("mscale_all_dim": 1, ")" + key + R"(": )" + n + "}}");
    }
    for (const char* key : {"factor", "low_freq_factor", "high_freq_factor"}) {
      std::string block = R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, )"
                          R"("high_freq_factor": 4, "original_max_position_embeddings": 1024})";
      const std::string k = std::string("\"") + key + "\": ";
      const std::size_t at = block.find(k) + k.size();
      block.replace(at, block.find_first_of(",}", at) - at, n);
      configs.push_back("{" + top + R"("rope_scaling": )" + block + "}");
    }
    std::string list = "[" + n;
    for (int i = 1; i < 32; ++i) list += ", 1";
    list += "]";
    configs.push_back("{" + top + R"("original_max_position_embeddings": 1024, "rope_scaling": )" +
                      R"({"rope_type": "longrope", "short_factor": )" + list +
                      R"(, "long_factor": )" + list + "}}");
  }
  int refused = 0;
  for (const std::string& text : configs) {
    try {
      const RopeConfig c = parse_rope_config(text, "config.json");
      for (const std::size_t seq_len : {std::size_t{0}, c.extended_length()}) {
        const Rope rope = c.rope(RopeLayout::half, seq_len);
        expect_finite(rope.frequencies(), text);
        expect_finite_rotation(rope, text);
      }
    } catch (const FileFormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("'config.json': ", 0), 0u) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 20);
  EXPECT_LT(refused, static_cast<int>(configs.size()));
}

}  // namespace
}  // namespace posemb
