// Internal (core): T5's bucketing of relative positions, checked once and then evaluated for one
// relative position or for a whole range of them (posemb/relative_bias.hpp states the rule).
//
//   const detail::BucketRule rule = detail::BucketRule::checked("relative_bias_forward", buckets);
//   rule.bucket(-5);                                   // one relative position
//   auto runs = rule.runs(d_first, count);             // the buckets of d_first, d_first + 1, ...
//
// The log-spaced part is monotone in the distance (every step of HF's float32 formula is), so a
// range is taken run by run: each run of equal buckets ends where the next bucket begins, found
// from the exact boundary max_exact * (max_distance / max_exact)^(step / steps) and confirmed
// with the formula itself. A range costs a few logarithms per bucket it crosses, not one per
// relative position, and is described by at most one run per bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "posemb/relative_bias.hpp"

namespace posemb::detail {

// Relative positions [begin, the next run's begin) of a range share `bucket`.
struct BucketRun {
  std::size_t begin;  // offset into the range
  std::uint32_t bucket;
};

class BucketRule {
 public:
  // The rule of `buckets`, or std::invalid_argument naming `op` and the numbers for a bucketing
  // T5's formula cannot compute.
  static BucketRule checked(const char* op, const RelativeBuckets& buckets);

  // The bucket of relative position r = key - query.
  std::uint32_t bucket(std::int64_t r) const noexcept;
  // The runs of equal buckets of the relative positions first, first + 1, ..., first + count - 1
  // (count >= 1; no overflow of int64), in order, the first at offset 0. A bucket is one run at
  // most: the buckets fall towards relative position 0 and rise after it, each side in buckets
  // of its own.
  std::vector<BucketRun> runs(std::int64_t first, std::size_t count) const;

  // The bucket of distance n inside one direction's buckets, in [0, half).
  std::uint32_t of_distance(std::uint64_t n) const noexcept;
  // The smallest distance above `from` (whose bucket is m, max_exact <= m < half - 1) with a
  // bucket above m; 2^63 + 1 when there is none.
  std::uint64_t next_boundary(std::uint32_t m, std::uint64_t from) const noexcept;

  std::uint32_t half() const noexcept { return half_; }
  std::uint32_t max_exact() const noexcept { return max_exact_; }
  bool bidirectional() const noexcept { return bidirectional_; }

 private:
  BucketRule() = default;

  std::uint32_t half_ = 0;       // buckets of one direction (num_buckets, or / 2 bidirectional)
  std::uint32_t max_exact_ = 0;  // half / 2: distances below it have a bucket each
  float log_ratio_ = 0;          // float(log(max_distance / max_exact)), HF's divisor
  float steps_ = 0;              // float(half - max_exact), HF's factor
  double ratio_ = 0;             // max_distance / max_exact, for the boundaries' estimates
  bool bidirectional_ = true;
};

}  // namespace posemb::detail
