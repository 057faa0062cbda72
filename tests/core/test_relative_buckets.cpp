// T5's bucket function (posemb/relative_bias.hpp): against HF's formula written out here in plain
// float32 steps (its log through long double, another route than the library's); against the
// exact mathematics in long double wherever the float32 formula is not within a hair of a
// bucket boundary; the published boundaries of T5's (32, 128); monotonicity, the halves and the
// cap as properties over random bucketings; the bulk function in place and its refusals; every
// bucketing T5's formula cannot compute refused with the numbers named.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "posemb/relative_bias.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::expect_invalid;

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// HF T5Attention._relative_position_bucket for one relative position, step by step as its torch
// expression computes it: int64 positions, float32 tensors, Python's double for
// math.log(max_distance / max_exact), rounded to float32 where it meets the tensor.
std::int64_t hf_bucket(std::int64_t relative_position, bool bidirectional, std::int64_t num_buckets,
                       std::int64_t max_distance) {
  std::int64_t relative_buckets = 0;
  std::int64_t n = relative_position;
  if (bidirectional) {
    num_buckets /= 2;
    relative_buckets += (n > 0 ? 1 : 0) * num_buckets;
    n = n < 0 ? -n : n;
  } else {
    n = -std::min<std::int64_t>(n, 0);
  }
  const std::int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return relative_buckets + n;
  const float a = static_cast<float>(n) / static_cast<float>(max_exact);
  const float l = static_cast<float>(std::log(static_cast<long double>(a)));
  const float c = static_cast<float>(
      std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  const float x = (l / c) * static_cast<float>(num_buckets - max_exact);
  const std::int64_t large = std::min(max_exact + static_cast<std::int64_t>(x), num_buckets - 1);
  return relative_buckets + large;
}

struct Bucketing {
  std::size_t num_buckets, max_distance;
  bool bidirectional;
};

// T5's own, the ones of LongT5-style models, and small, odd and awkward ones.
const Bucketing kBucketings[] = {
    {32, 128, true},     {32, 128, false}, {64, 256, true},   {64, 256, false}, {32, 64, true},
    {16, 32, false},     {8, 16, true},    {4, 5, true},      {2, 3, false},    {3, 10, false},
    {5, 6, true},        {33, 100, true},  {33, 100, false},  {128, 128, true}, {1000, 4096, false},
    {32, 1000000, true}, {7, 4, false},    {256, 2048, true},
};

RelativeBuckets config(const Bucketing& b) {
  return {.num_buckets = b.num_buckets,
          .max_distance = b.max_distance,
          .bidirectional = b.bidirectional};
}

std::string describe(const Bucketing& b) {
  return std::to_string(b.num_buckets) + " buckets, max_distance " +
         std::to_string(b.max_distance) + (b.bidirectional ? ", bidirectional" : ", causal");
}

TEST(RelativeBucket, EqualsHuggingFacesFormulaStepByStep) {
  for (const Bucketing& b : kBucketings) {
    SCOPED_TRACE(describe(b));
    const RelativeBuckets cfg = config(b);
    for (std::int64_t r = -20000; r <= 20000; ++r) {
      ASSERT_EQ(static_cast<std::int64_t>(t5_relative_bucket(r, cfg)),
                hf_bucket(r, b.bidirectional, static_cast<std::int64_t>(b.num_buckets),
                          static_cast<std::int64_t>(b.max_distance)))
          << "relative position " << r;
    }
    for (std::int64_t r : {std::int64_t{1} << 24, (std::int64_t{1} << 24) + 1,
                           std::int64_t{1} << 40, kMax, kMin + 1, -(std::int64_t{1} << 40)}) {
      EXPECT_EQ(static_cast<std::int64_t>(t5_relative_bucket(r, cfg)),
                hf_bucket(r, b.bidirectional, static_cast<std::int64_t>(b.num_buckets),
                          static_cast<std::int64_t>(b.max_distance)))
          << r;
    }
  }
}

// The exact mathematics, max_exact + floor(log(n / max_exact) / log(ratio) * steps), agrees with
// the float32 formula except where its value is within a hair of an integer (a boundary that
// falls on a distance: n = max_exact * ratio^(s / steps) exactly, such as 16 for bidirectional
// (32, 128)); there the float32 roundings decide between the two buckets, and the library's
// choice is HF's.
TEST(RelativeBucket, IsTheExactLogSpacingAwayFromBoundaries) {
  std::size_t boundary_cases = 0;
  for (const Bucketing& b : kBucketings) {
    SCOPED_TRACE(describe(b));
    const std::size_t half = b.bidirectional ? b.num_buckets / 2 : b.num_buckets;
    const std::size_t max_exact = half / 2;
    const long double steps = static_cast<long double>(half - max_exact);
    const long double log_ratio = std::log(static_cast<long double>(b.max_distance) / max_exact);
    for (std::int64_t n = 0; n <= 3 * static_cast<std::int64_t>(b.max_distance) + 50; ++n) {
      const std::size_t got = t5_relative_bucket(-n, config(b));
      if (static_cast<std::size_t>(n) < max_exact) {
        ASSERT_EQ(got, static_cast<std::size_t>(n));
        continue;
      }
      const long double x = std::log(static_cast<long double>(n) / max_exact) / log_ratio * steps;
      // The float32 formula's error: a few roundings of x, and 2^-24 of log(a) scaled by
      // steps / log(ratio).
      const long double error = 0x1p-21L * (x + steps / log_ratio + 1);
      if (std::fabs(x - std::round(x)) < error) {
        // On a boundary: the bucket it starts, or (float32 landing just below) the one before,
        // as HF's roundings decide.
        ++boundary_cases;
        const std::size_t at =
            std::min<std::size_t>(half - 1, max_exact + static_cast<std::size_t>(std::llround(x)));
        ASSERT_TRUE(got == at || got + 1 == at) << "distance " << n << ": " << got << ", " << at;
        ASSERT_EQ(static_cast<std::int64_t>(got),
                  hf_bucket(-n, b.bidirectional, static_cast<std::int64_t>(b.num_buckets),
                            static_cast<std::int64_t>(b.max_distance)));
        continue;
      }
      const auto want = std::min<std::size_t>(half - 1, max_exact + static_cast<std::size_t>(x));
      ASSERT_EQ(got, want) << "distance " << n;
    }
  }
  // The boundaries exactly on a distance were met (max_exact itself, 16 for bidirectional
  // (32, 128), max_distance, ...: 77 of them).
  EXPECT_GE(boundary_cases, std::size(kBucketings));
}

TEST(RelativeBucket, HasT5sPublishedBoundaries) {
  // (32, 128) causal: max_exact 16, the last bucket from 16 * 8^(15/16) = 112.99; bidirectional:
  // 8 exact buckets a side, the last from 8 * 16^(7/8) = 90.5; keys after the query in 16..31.
  const RelativeBuckets causal{.num_buckets = 32, .max_distance = 128, .bidirectional = false};
  const RelativeBuckets bidi{};
  EXPECT_EQ(t5_relative_bucket(-15, causal), 15u);
  EXPECT_EQ(t5_relative_bucket(-16, causal), 16u);
  EXPECT_EQ(t5_relative_bucket(-112, causal), 30u);
  EXPECT_EQ(t5_relative_bucket(-113, causal), 31u);
  EXPECT_EQ(t5_relative_bucket(5, causal), 0u);  // a later key: the query's own bucket
  EXPECT_EQ(t5_relative_bucket(-90, bidi), 14u);
  EXPECT_EQ(t5_relative_bucket(-91, bidi), 15u);
  EXPECT_EQ(t5_relative_bucket(91, bidi), 31u);
  EXPECT_EQ(t5_relative_bucket(1, bidi), 17u);
  EXPECT_EQ(t5_relative_bucket(0, bidi), 0u);
  // 16 = 8 * 16^(2/8) exactly: log(2) / log(16) * 8 is 2 in exact arithmetic and in float32.
  EXPECT_EQ(t5_relative_bucket(-16, bidi), 10u);
  EXPECT_EQ(t5_relative_bucket(-15, bidi), 9u);
}

TEST(RelativeBucket, FarthestPositionsTakeTheLastBucketOfTheirSide) {
  const RelativeBuckets bidi{};
  const RelativeBuckets causal{.bidirectional = false};
  EXPECT_EQ(t5_relative_bucket(kMin, bidi), 15u);  // |INT64_MIN| = 2^63: the farthest
  EXPECT_EQ(t5_relative_bucket(kMax, bidi), 31u);
  EXPECT_EQ(t5_relative_bucket(kMin, causal), 31u);
  EXPECT_EQ(t5_relative_bucket(kMax, causal), 0u);
}

RC_GTEST_PROP(RelativeBucketProperty, IsMonotoneInEachDirectionAndReachesTheCap, ()) {
  const bool bidirectional = *rc::gen::arbitrary<bool>();
  const auto num_buckets = *rc::gen::inRange<std::size_t>(bidirectional ? 4 : 2, 600);
  const std::size_t half = bidirectional ? num_buckets / 2 : num_buckets;
  const std::size_t max_exact = half / 2;
  const auto max_distance = *rc::gen::inRange<std::size_t>(max_exact + 1, max_exact + 5000);
  const RelativeBuckets cfg{num_buckets, max_distance, bidirectional};
  std::size_t before = 0;
  for (std::int64_t n = 0; n <= static_cast<std::int64_t>(max_distance) + 2; ++n) {
    const std::size_t below = t5_relative_bucket(-n, cfg);
    RC_ASSERT(below < half);
    RC_ASSERT(below >= before);
    if (static_cast<std::size_t>(n) < max_exact) RC_ASSERT(below == static_cast<std::size_t>(n));
    before = below;
    const std::size_t above = t5_relative_bucket(n, cfg);
    if (!bidirectional || n == 0) {
      RC_ASSERT(above == 0u);
    } else {
      RC_ASSERT(above == half + t5_relative_bucket(-n, cfg));
    }
  }
  // Past max_distance every key shares the last bucket (for bucketings whose float32 steps are
  // exact: half - max_exact < 2^24).
  RC_ASSERT(t5_relative_bucket(-static_cast<std::int64_t>(max_distance), cfg) == half - 1);
  RC_ASSERT(t5_relative_bucket(kMin, cfg) == half - 1);
}

TEST(RelativeBuckets, BulkEqualsOneByOneAndWorksInPlace) {
  std::vector<std::int64_t> rel;
  for (std::int64_t r = -3000; r <= 3000; r += 7) rel.push_back(r);
  rel.push_back(kMin);
  rel.push_back(kMax);
  for (const Bucketing& b : kBucketings) {
    SCOPED_TRACE(describe(b));
    std::vector<std::int64_t> out(rel.size(), -1);
    t5_relative_buckets(out, rel, config(b));
    for (std::size_t k = 0; k < rel.size(); ++k) {
      ASSERT_EQ(out[k], static_cast<std::int64_t>(t5_relative_bucket(rel[k], config(b))));
    }
    std::vector<std::int64_t> in_place = rel;
    t5_relative_buckets(in_place, in_place, config(b));
    EXPECT_EQ(in_place, out);
  }
  // Enough values to run on several threads: the same.
  std::vector<std::int64_t> many(1 << 16);
  for (std::size_t k = 0; k < many.size(); ++k) many[k] = static_cast<std::int64_t>(k) - 30000;
  std::vector<std::int64_t> out(many.size());
  t5_relative_buckets(out, many);
  for (std::size_t k = 0; k < many.size(); k += 97) {
    ASSERT_EQ(out[k], static_cast<std::int64_t>(t5_relative_bucket(many[k])));
  }
}

// --- bad input ------------------------------------------------------------------------------

TEST(RelativeBucket, RefusesWhatT5sFormulaCannotCompute) {
  for (std::size_t nb : {0, 1}) {
    expect_invalid("num_buckets = " + std::to_string(nb) +
                       " leaves no bucket for exact distances (max_exact = num_buckets / 2 = 0",
                   [&] {
                     (void)t5_relative_bucket(3, {nb, 128, false});
                   });
  }
  for (std::size_t nb : {0, 1, 2, 3}) {
    expect_invalid("num_buckets = " + std::to_string(nb) +
                       " leaves no bucket for exact distances in each direction",
                   [&] {
                     (void)t5_relative_bucket(3, {nb, 128, true});
                   });
  }
  // max_distance at or below max_exact: log(1) = 0 as a divisor, or a negative one.
  expect_invalid("max_distance = 8 must be above max_exact = 8 (num_buckets 32 / 4", [] {
    (void)t5_relative_bucket(-9, {32, 8, true});
  });
  expect_invalid("which is 0 here", [] { (void)t5_relative_bucket(-9, {32, 8, true}); });
  expect_invalid("max_distance = 15 must be above max_exact = 16 (num_buckets 32 / 2, causal)", [] {
    (void)t5_relative_bucket(-9, {32, 15, false});
  });
  expect_invalid("max_distance = 0 must be above max_exact = 1", [] {
    (void)t5_relative_bucket(0, {2, 0, false});
  });
  expect_invalid("num_buckets = 2147483649 is above 2^31", [] {
    (void)t5_relative_bucket(0, {(std::size_t{1} << 31) + 1, 1u << 31, true});
  });
  expect_invalid("max_distance = 9007199254740993 is above 2^53", [] {
    (void)t5_relative_bucket(0, {32, (std::size_t{1} << 53) + 1, true});
  });
  expect_invalid("max_distance = 18446744073709551615 is above 2^53", [] {
    (void)t5_relative_bucket(0, {32, SIZE_MAX, true});
  });
  // The largest accepted: 2^31 buckets, max_distance 2^53.
  EXPECT_EQ(t5_relative_bucket(kMin, {std::size_t{1} << 31, std::size_t{1} << 53, false}),
            (std::size_t{1} << 31) - 1);
  EXPECT_EQ(t5_relative_bucket(-5, {std::size_t{1} << 31, std::size_t{1} << 53, true}), 5u);
}

TEST(RelativeBuckets, RefusesMismatchedOrOverlappingSpansAndWritesNothing) {
  std::vector<std::int64_t> rel = {-3, 0, 4, 9}, out(3, -1);
  expect_invalid("buckets holds 3 values for 4 relative positions",
                 [&] { t5_relative_buckets(out, rel); });
  EXPECT_EQ(out, std::vector<std::int64_t>(3, -1));
  std::vector<std::int64_t> buf = {-3, 0, 4, 9, 11};
  const std::vector<std::int64_t> before = buf;
  expect_invalid("overlaps relative_positions without being the same array", [&] {
    t5_relative_buckets(std::span(buf).subspan(1, 4), std::span(buf).first(4));
  });
  expect_invalid("leaves no bucket", [&] { t5_relative_buckets(buf, buf, {3, 10, true}); });
  EXPECT_EQ(buf, before);
}

}  // namespace
}  // namespace posemb
