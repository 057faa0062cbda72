// The angle precision report (posemb/rope_precision.hpp) against a plain loop written here:
// every format's largest error, where it is, the first position over the threshold, float16's
// overflow at 65520, the errors by length; the same result on 1 and 2 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "posemb/half.hpp"
#include "posemb/rope_precision.hpp"

namespace posemb {
namespace {

// The angle of pair i at p in format F: F(F(p) * F(theta)), held in a float.
float angle_in(AngleFormat f, std::size_t p, long double theta) {
  if (f == AngleFormat::float32) return static_cast<float>(p) * static_cast<float>(theta);
  if (f == AngleFormat::bfloat16) {
    const float a = bfloat16(static_cast<float>(p)), b = bfloat16(static_cast<float>(theta));
    return bfloat16(a * b);
  }
  const float a = float16(static_cast<float>(p)), b = float16(static_cast<float>(theta));
  return float16(a * b);
}

struct Expected {
  double max_error = 0;
  std::size_t first_over, first_overflow;
};

Expected reference(const Rope& rope, AngleFormat f, std::size_t positions, double threshold) {
  const long double two_pi = 2.0L * std::numbers::pi_v<long double>;
  Expected e{0.0, positions, positions};
  for (std::size_t p = 0; p < positions; ++p) {
    for (const long double theta : rope.frequencies().inv_freq) {
      const float a = angle_in(f, p, theta);
      double err = std::numbers::pi;
      if (std::isfinite(a)) {
        const long double d = static_cast<long double>(a) - static_cast<long double>(p) * theta;
        err = static_cast<double>(std::fabs(d - two_pi * std::nearbyint(d / two_pi)));
      } else if (e.first_overflow == positions) {
        e.first_overflow = p;
      }
      e.max_error = std::max(e.max_error, err);
      if (err > threshold && e.first_over == positions) e.first_over = p;
    }
  }
  return e;
}

TEST(RopePrecision, MatchesAPlainLoop) {
  const Rope rope(16, RopeLayout::half, {.base = 10000});
  const std::size_t n = 70000;  // past float16's largest finite position, 65504
  const auto report = rope_angle_precision(rope, n, 1e-3);
  ASSERT_EQ(report.size(), 3u);
  for (const AnglePrecision& a : report) {
    SCOPED_TRACE(std::string(angle_format_name(a.format)));
    const Expected e = reference(rope, a.format, n, 1e-3);
    EXPECT_NEAR(a.max_error, e.max_error, 1e-12);
    EXPECT_EQ(a.first_over, e.first_over);
    EXPECT_EQ(a.first_overflow, e.first_overflow);
    ASSERT_FALSE(a.by_length.empty());
    EXPECT_EQ(a.by_length.back().upto, n);
    EXPECT_EQ(a.by_length.back().max_error, a.max_error);
    for (std::size_t k = 1; k < a.by_length.size(); ++k) {
      EXPECT_EQ(a.by_length[k].upto,
                2 * a.by_length[k - 1].upto < n ? 2 * a.by_length[k - 1].upto : n);
      EXPECT_GE(a.by_length[k].max_error, a.by_length[k - 1].max_error);
    }
    // by_length[0] is [0, 1024): the reference over those positions alone.
    EXPECT_NEAR(a.by_length[0].max_error, reference(rope, a.format, 1024, 1e-3).max_error, 1e-12);
  }
  EXPECT_EQ(report[2].first_overflow, 65520u);  // float16(65520) is infinite
  EXPECT_EQ(report[0].first_overflow, n);
  // float32 angles are exact below 2^24 positions up to the product's rounding: tiny here.
  EXPECT_LT(report[0].max_error, 1e-2);
  // bfloat16 keeps 8 bits: position 257 is already 256 or 258.
  EXPECT_LT(report[1].first_over, 300u);
  EXPECT_NEAR(report[1].max_error, std::numbers::pi, 0.1);
}

TEST(RopePrecision, SameOnOneAndTwoThreads) {
  const Rope rope(128, RopeLayout::half, {.base = 500000});
  omp_set_num_threads(1);
  const auto one = rope_angle_precision(rope, 40000);
  omp_set_num_threads(2);
  const auto two = rope_angle_precision(rope, 40000);
  for (std::size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(one[f].max_error, two[f].max_error);
    EXPECT_EQ(one[f].worst_position, two[f].worst_position);
    EXPECT_EQ(one[f].worst_pair, two[f].worst_pair);
    EXPECT_EQ(one[f].first_over, two[f].first_over);
  }
}

TEST(RopePrecision, RefusesNothingToCheck) {
  const Rope rope(8, RopeLayout::half);
  EXPECT_THROW(rope_angle_precision(rope, 0), std::invalid_argument);
  EXPECT_THROW(rope_angle_precision(rope, 10, -1.0), std::invalid_argument);
  EXPECT_THROW(rope_angle_precision(rope, 10, NAN), std::invalid_argument);
}

}  // namespace
}  // namespace posemb
