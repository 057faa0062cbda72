#include "posemb/rope_precision.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "posemb/half.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

constexpr long double kTwoPi = 6.283185307179586476925286766559005768L;
constexpr double kPi = 3.141592653589793238462643383279502884;
constexpr std::size_t kFormats = kAngleFormats.size();
constexpr std::size_t kSamplesPerChunk = 1024;

// x rounded to the format (held in a float; float16 past 65504: infinity).
float round_to(AngleFormat f, float x) {
  switch (f) {
    case AngleFormat::bfloat16:
      return static_cast<float>(bfloat16(x));
    case AngleFormat::float16:
      return static_cast<float>(float16(x));
    case AngleFormat::float32:
      break;
  }
  return x;
}

// The sampled positions: every one below kAnglePrecisionDense, then as many more spread up to
// positions - 1 (see the header).
struct Samples {
  std::size_t positions;
  std::size_t count() const {
    return positions <= kAnglePrecisionDense ? positions : 2 * kAnglePrecisionDense;
  }
  std::size_t at(std::size_t k) const {
    if (k < kAnglePrecisionDense || positions <= kAnglePrecisionDense) return k;
    const std::size_t j = k - kAnglePrecisionDense + 1;  // 1 .. kAnglePrecisionDense
    const long double span = static_cast<long double>(positions - 1 - kAnglePrecisionDense);
    const auto step = static_cast<std::size_t>(span * static_cast<long double>(j) /
                                               static_cast<long double>(kAnglePrecisionDense));
    return j == kAnglePrecisionDense ? positions - 1 : kAnglePrecisionDense + step;
  }
};

// The checkpoints of by_length: 1024, 2048, ... below positions, then positions.
std::vector<std::size_t> checkpoints(std::size_t positions) {
  std::vector<std::size_t> c;
  for (std::size_t u = 1024; u < positions && u <= std::numeric_limits<std::size_t>::max() / 2;
       u *= 2) {
    c.push_back(u);
  }
  c.push_back(positions);
  return c;
}

struct Partial {
  double max_error = -1.0;
  std::size_t worst_position = 0, worst_pair = 0;
  std::size_t first_over = std::numeric_limits<std::size_t>::max();
  std::size_t first_overflow = std::numeric_limits<std::size_t>::max();
  std::vector<double> bucket_max;  // per checkpoint: the largest error of positions below it
                                   // and at or past the one before
};

struct Job {
  const Rope* rope;
  Samples samples;
  double threshold;
  std::vector<std::size_t> marks;                     // checkpoints
  std::array<std::vector<float>, kFormats> theta;     // F(theta_i)
  std::vector<std::array<Partial, kFormats>>* parts;  // per chunk

  void run(std::size_t chunk) const {
    std::array<Partial, kFormats>& out = (*parts)[chunk];
    for (Partial& p : out) p.bucket_max.assign(marks.size(), 0.0);
    const std::size_t k0 = chunk * kSamplesPerChunk;
    const std::size_t k1 = std::min(samples.count(), k0 + kSamplesPerChunk);
    const std::vector<long double>& exact_theta = rope->frequencies().inv_freq;
    std::size_t bucket = 0;
    for (std::size_t k = k0; k < k1; ++k) {
      const std::size_t p = samples.at(k);
      while (p >= marks[bucket]) ++bucket;
      for (std::size_t f = 0; f < kFormats; ++f) {
        const float pf = round_to(kAngleFormats[f], static_cast<float>(p));
        Partial& r = out[f];
        for (std::size_t i = 0; i < exact_theta.size(); ++i) {
          const long double exact = static_cast<long double>(p) * exact_theta[i];
          // The product of two values of F is exact in double (float32) or float (16 bits).
          const double prod = static_cast<double>(pf) * static_cast<double>(theta[f][i]);
          const float angle = round_to(kAngleFormats[f], static_cast<float>(prod));
          double e = kPi;
          if (std::isfinite(angle)) {
            long double d = static_cast<long double>(angle) - exact;
            // rint, not nearbyint: the same value, but one x87 instruction instead of a libm
            // call that saves and restores the floating-point environment (about 90 ns here, most
            // of the time of a long check).
            if (std::fabs(d) > kPi) d -= kTwoPi * std::rint(d / kTwoPi);
            e = static_cast<double>(std::fabs(d));
          } else {
            r.first_overflow = std::min(r.first_overflow, p);
          }
          if (e > r.max_error) {
            r.max_error = e;
            r.worst_position = p;
            r.worst_pair = i;
          }
          if (e > threshold) r.first_over = std::min(r.first_over, p);
          r.bucket_max[bucket] = std::max(r.bucket_max[bucket], e);
        }
      }
    }
  }
};

}  // namespace

std::string_view angle_format_name(AngleFormat f) {
  switch (f) {
    case AngleFormat::float32:
      return "float32";
    case AngleFormat::bfloat16:
      return "bfloat16";
    case AngleFormat::float16:
      return "float16";
  }
  return "unknown";
}

std::size_t rope_angle_precision_work(const Rope& rope, std::size_t positions) noexcept {
  return saturating_mul(Samples{positions}.count(), rope.pairs());
}

std::vector<AnglePrecision> rope_angle_precision(const Rope& rope, std::size_t positions,
                                                 double threshold) {
  if (positions == 0) {
    throw std::invalid_argument("rope_angle_precision: positions is 0 (nothing to check)");
  }
  if (!(std::isfinite(threshold) && threshold >= 0.0)) {
    throw std::invalid_argument("rope_angle_precision: threshold must be finite and >= 0, got " +
                                std::to_string(threshold));
  }
  if (const std::size_t work = rope_angle_precision_work(rope, positions);
      work > kAnglePrecisionMaxWork) {
    throw std::invalid_argument(
        "rope_angle_precision: " + std::to_string(positions) + " positions (" +
        std::to_string(Samples{positions}.count()) + " of them checked) of " +
        std::to_string(rope.pairs()) + " pairs are " + std::to_string(work) +
        " angle checks, more than the " + std::to_string(kAnglePrecisionMaxWork) +
        " (2^31, about a minute) it takes on; check fewer positions");
  }
  Job job{&rope, Samples{positions}, threshold, checkpoints(positions), {}, nullptr};
  for (std::size_t f = 0; f < kFormats; ++f) {
    for (const long double t : rope.frequencies().inv_freq) {
      job.theta[f].push_back(round_to(kAngleFormats[f], static_cast<float>(t)));
    }
  }
  const std::size_t n = job.samples.count();
  const std::size_t chunks = (n + kSamplesPerChunk - 1) / kSamplesPerChunk;
  std::vector<std::array<Partial, kFormats>> parts(chunks);
  job.parts = &parts;
  parallel_for(chunks, 1, n * rope.pairs(), [&job](std::size_t c0, std::size_t c1) {
    for (std::size_t c = c0; c < c1; ++c) job.run(c);
  });
  // Merged in chunk order: the same result whichever thread ran which chunk.
  std::vector<AnglePrecision> out;
  for (std::size_t f = 0; f < kFormats; ++f) {
    AnglePrecision a;
    a.format = kAngleFormats[f];
    a.first_over = a.first_overflow = positions;
    std::vector<double> buckets(job.marks.size(), 0.0);
    for (const auto& part : parts) {
      const Partial& r = part[f];
      if (r.max_error > a.max_error) {
        a.max_error = r.max_error;
        a.worst_position = r.worst_position;
        a.worst_pair = r.worst_pair;
      }
      a.first_over = std::min(a.first_over, r.first_over);
      a.first_overflow = std::min(a.first_overflow, r.first_overflow);
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        buckets[b] = std::max(buckets[b], r.bucket_max[b]);
      }
    }
    double running = 0.0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      running = std::max(running, buckets[b]);
      a.by_length.push_back({job.marks[b], running});
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace posemb
