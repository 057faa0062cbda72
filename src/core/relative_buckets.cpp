// T5's bucketing of relative positions (relative_buckets.hpp; the rule in
// posemb/relative_bias.hpp) and the two public bucket functions.
#include "core/relative_buckets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "posemb/parallel.hpp"

namespace posemb::detail {
namespace {

constexpr std::size_t kMaxBuckets = std::size_t{1} << 31;
constexpr std::size_t kMaxDistance = std::size_t{1} << 53;
// The farthest distance there is: |INT64_MIN|.
constexpr std::uint64_t kFarthest = std::uint64_t{1} << 63;

std::string n(std::size_t v) {
  return std::to_string(v);
}

}  // namespace

BucketRule BucketRule::checked(const char* op, const RelativeBuckets& b) {
  const std::string where = std::string(op) + ": ";
  if (b.num_buckets > kMaxBuckets) {
    throw std::invalid_argument(where + "num_buckets = " + n(b.num_buckets) +
                                " is above 2^31 (T5 uses 32)");
  }
  const std::size_t half = b.bidirectional ? b.num_buckets / 2 : b.num_buckets;
  const std::size_t max_exact = half / 2;
  if (max_exact == 0) {
    throw std::invalid_argument(
        where + "num_buckets = " + n(b.num_buckets) + " leaves no bucket for exact distances" +
        (b.bidirectional ? " in each direction (max_exact = num_buckets / 4 = 0, a division "
                           "by zero in T5's formula): a bidirectional bucketing needs "
                           "num_buckets >= 4"
                         : " (max_exact = num_buckets / 2 = 0, a division by zero in T5's "
                           "formula): a causal bucketing needs num_buckets >= 2") +
        " (T5 uses 32)");
  }
  if (b.max_distance <= max_exact) {
    throw std::invalid_argument(
        where + "max_distance = " + n(b.max_distance) +
        " must be above max_exact = " + n(max_exact) + " (num_buckets " + n(b.num_buckets) +
        (b.bidirectional ? " / 4, bidirectional" : " / 2, causal") +
        "): the log-spaced buckets cover the distances from max_exact to max_distance, and T5's "
        "formula divides by log(max_distance / max_exact)" +
        (b.max_distance == max_exact ? ", which is 0 here" : ", negative here") +
        "; T5 uses 128 with 32 buckets");
  }
  if (b.max_distance > kMaxDistance) {
    throw std::invalid_argument(where + "max_distance = " + n(b.max_distance) +
                                " is above 2^53, where it is no longer exact in double as T5's "
                                "max_distance / max_exact needs it");
  }
  BucketRule r;
  r.half_ = static_cast<std::uint32_t>(half);
  r.max_exact_ = static_cast<std::uint32_t>(max_exact);
  // Python's max_distance / max_exact (both exact in double: one rounding) and math.log, then
  // the float32 the tensor expression makes of it.
  r.ratio_ = static_cast<double>(b.max_distance) / static_cast<double>(max_exact);
  r.log_ratio_ = static_cast<float>(std::log(r.ratio_));
  r.steps_ = static_cast<float>(half - max_exact);
  r.bidirectional_ = b.bidirectional;
  return r;
}

std::uint32_t BucketRule::of_distance(std::uint64_t n) const noexcept {
  if (n < max_exact_) return static_cast<std::uint32_t>(n);
  // HF: max_exact + (log(n.float() / max_exact) / log_ratio * steps).to(long), capped. Each
  // operation rounds to float32 once; the log is the float32 nearest to the double logarithm.
  const float a = static_cast<float>(n) / static_cast<float>(max_exact_);
  const float l = static_cast<float>(std::log(static_cast<double>(a)));
  const float x = (l / log_ratio_) * steps_;  // >= 0: a >= 1, log_ratio_ > 0
  const std::uint32_t last = half_ - 1 - max_exact_;
  if (static_cast<double>(x) >= static_cast<double>(last)) return half_ - 1;
  return max_exact_ + static_cast<std::uint32_t>(x);
}

std::uint64_t BucketRule::next_boundary(std::uint32_t m, std::uint64_t from) const noexcept {
  // of_distance(n) > m exactly when max_exact + trunc(x) >= m + 1, i.e. x >= s: in exact
  // arithmetic n >= max_exact * ratio^(s / steps). The float formula may put the boundary a
  // distance or so away: the estimate is confirmed, or else searched for.
  // (In double: an estimate, confirmed below.)
  const double s = static_cast<double>(m + 1 - max_exact_);
  const double steps = static_cast<double>(half_ - max_exact_);
  const double exact = static_cast<double>(max_exact_) * std::pow(ratio_, s / steps);
  std::uint64_t e = from + 1;
  if (exact > static_cast<double>(from + 1)) {
    e = exact >= static_cast<double>(kFarthest) ? kFarthest
                                                : static_cast<std::uint64_t>(std::ceil(exact));
  }
  const bool above = of_distance(e) > m;
  if (above && (e - 1 == from || of_distance(e - 1) <= m)) return e;
  // [lo, hi): of_distance(lo) <= m < of_distance(hi).
  std::uint64_t lo = from, hi = e;
  if (!above) {
    lo = e;
    for (std::uint64_t step = 1;; step *= 2) {
      if (lo == kFarthest) return kFarthest + 1;  // no farther distance: the run goes on
      hi = kFarthest - lo > step ? lo + step : kFarthest;
      if (of_distance(hi) > m) break;
      lo = hi;
    }
  }
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (of_distance(mid) > m ? hi : lo) = mid;
  }
  return hi;
}

namespace {

// emit(a, b, m): distances n + [a, b) are in bucket m (of one direction), for [0, count) in order.
template <class Emit>
void distance_runs(const BucketRule& rule, std::uint64_t n, std::size_t count, Emit&& emit) {
  std::size_t k = 0;
  for (; k < count && n + k < rule.max_exact(); ++k) {
    emit(k, k + 1, static_cast<std::uint32_t>(n + k));
  }
  while (k < count) {
    const std::uint32_t m = rule.of_distance(n + k);
    std::size_t end = count;
    if (m + 1 < rule.half()) {
      const std::uint64_t boundary = rule.next_boundary(m, n + k);  // > n + k
      if (boundary - n < count) end = static_cast<std::size_t>(boundary - n);
    }
    emit(k, end, m);
    k = end;
  }
}

}  // namespace

std::uint32_t BucketRule::bucket(std::int64_t r) const noexcept {
  if (r < 0) return of_distance(std::uint64_t{0} - static_cast<std::uint64_t>(r));
  if (r == 0 || !bidirectional_) return 0;
  return half_ + of_distance(static_cast<std::uint64_t>(r));
}

std::vector<BucketRun> BucketRule::runs(std::int64_t first, std::size_t count) const {
  std::vector<BucketRun> out;
  auto add = [&out](std::size_t begin, std::uint32_t b) {
    if (out.empty() || out.back().bucket != b) out.push_back({begin, b});
  };
  // Relative positions below 0: distances n = -r, descending as r ascends.
  std::size_t negative = 0;
  if (first < 0) {
    const std::uint64_t below = std::uint64_t{0} - static_cast<std::uint64_t>(first);
    negative = below < count ? static_cast<std::size_t>(below) : count;
    const std::uint64_t nearest =
        std::uint64_t{0} -
        static_cast<std::uint64_t>(first + static_cast<std::int64_t>(negative - 1));
    struct Span {
      std::size_t a, b;
      std::uint32_t m;
    };
    std::vector<Span> near_first;
    distance_runs(*this, nearest, negative, [&](std::size_t a, std::size_t b, std::uint32_t m) {
      near_first.push_back({a, b, m});
    });
    // Distance nearest + o is at offset negative - 1 - o.
    for (auto it = near_first.rbegin(); it != near_first.rend(); ++it) add(negative - it->b, it->m);
  }
  std::size_t k = negative;
  if (k == count) return out;
  if (first + static_cast<std::int64_t>(k) == 0) add(k++, 0);
  if (k == count) return out;
  if (!bidirectional_) {
    add(k, 0);  // keys after the query: the query's own bucket
    return out;
  }
  distance_runs(*this, static_cast<std::uint64_t>(first + static_cast<std::int64_t>(k)), count - k,
                [&](std::size_t a, std::size_t, std::uint32_t m) { add(k + a, half_ + m); });
  return out;
}

}  // namespace posemb::detail

namespace posemb {

std::size_t t5_relative_bucket(std::int64_t relative_position, const RelativeBuckets& buckets) {
  return detail::BucketRule::checked("t5_relative_bucket", buckets).bucket(relative_position);
}

void t5_relative_buckets(std::span<std::int64_t> buckets,
                         std::span<const std::int64_t> relative_positions,
                         const RelativeBuckets& buckets_of) {
  constexpr const char* op = "t5_relative_buckets";
  const detail::BucketRule rule = detail::BucketRule::checked(op, buckets_of);
  if (buckets.size() != relative_positions.size()) {
    throw std::invalid_argument(
        std::string(op) + ": buckets holds " + std::to_string(buckets.size()) + " values for " +
        std::to_string(relative_positions.size()) + " relative positions (one each)");
  }
  const std::size_t count = buckets.size();
  const auto out = reinterpret_cast<std::uintptr_t>(buckets.data());
  const auto in = reinterpret_cast<std::uintptr_t>(relative_positions.data());
  const std::size_t bytes = count * sizeof(std::int64_t);
  if (count != 0 && out != in && out < in + bytes && in < out + bytes) {
    throw std::invalid_argument(std::string(op) +
                                ": buckets overlaps relative_positions without being the same "
                                "array; pass the same array (in place) or separate ones");
  }
  // A logarithm costs about as much as moving 16 elements.
  parallel_for(count, std::size_t{1} << 12, count * 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      buckets[k] = static_cast<std::int64_t>(rule.bucket(relative_positions[k]));
    }
  });
}

}  // namespace posemb
