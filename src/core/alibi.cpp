#include "posemb/alibi.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/overlap.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

// Largest start accepted: start + queries and every distance stay far inside int64.
constexpr std::size_t kMaxStart = std::size_t{1} << 62;
// Rows per chunk of parallel_for: about 64 KiB of scores at Tk = 1024.
constexpr std::size_t kChunkElements = std::size_t{1} << 14;

// 2^(-numerator / denominator), the quotient exact (denominator a power of two), rounded once.
float power_of_half(std::size_t numerator, std::size_t denominator) {
  const long double e = static_cast<long double>(numerator) / static_cast<long double>(denominator);
  return static_cast<float>(std::exp2l(-e));
}

struct Geometry {
  std::size_t heads, batch, queries, keys, start;
  bool causal;
  // Query row r: its head and its position.
  std::size_t head(std::size_t r) const { return (r / queries) % heads; }
  std::size_t position(std::size_t r) const { return start + r % queries; }
};

// Every check of forward and backward, before anything is written.
Geometry validate(const char* op, MatrixView<const float> scores, std::size_t heads,
                  std::size_t batch, std::size_t queries, const AlibiOptions& o) {
  if (heads == 0) throw std::invalid_argument(std::string(op) + ": no heads (0 slopes)");
  if (batch == 0 || queries == 0) {
    throw std::invalid_argument(std::string(op) + ": empty batch (B = " + std::to_string(batch) +
                                ", Tq = " + std::to_string(queries) + ")");
  }
  if (o.form != AlibiForm::causal && o.form != AlibiForm::symmetric) {
    throw std::invalid_argument(std::string(op) + ": form " +
                                std::to_string(static_cast<int>(o.form)) +
                                " is neither causal nor symmetric");
  }
  if (o.start > kMaxStart) {
    throw std::invalid_argument(std::string(op) + ": start " + std::to_string(o.start) +
                                " is past 2^62");
  }
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  const bool fits = heads <= max / batch && queries <= max / (heads * batch);
  if (!fits || scores.rows() != batch * heads * queries) {
    throw std::invalid_argument(std::string(op) + ": scores has " + std::to_string(scores.rows()) +
                                " rows, expected B*H*Tq = " + std::to_string(batch) + "*" +
                                std::to_string(heads) + "*" + std::to_string(queries) +
                                " (one row per query of each head)");
  }
  return {heads, batch, queries, scores.cols(), o.start, o.form == AlibiForm::causal};
}

// The first key after query position q (keys [end, Tk) are masked in the causal form).
std::size_t unmasked_end(const Geometry& g, std::size_t q) {
  if (!g.causal) return g.keys;
  return q < g.keys ? q + 1 : g.keys;
}

// |q - j| as float, the one rounding of the exact distance (exact below 2^24).
inline float distance(std::size_t q, std::size_t j) {
  const std::size_t d = q >= j ? q - j : j - q;
  return d < (std::size_t{1} << 31) ? static_cast<float>(static_cast<std::int32_t>(d))
                                    : static_cast<float>(d);
}

// Row r of the forward: the bias -(m * |d|) added into keys [0, end), -inf over the rest.
void forward_row(float* row, const Geometry& g, float m, std::size_t q) {
  const std::size_t end = unmasked_end(g, q);
  if (q < (std::size_t{1} << 31) && g.keys <= (std::size_t{1} << 31)) {
    // Distances in int32: the conversion vectorizes; the same values as below.
    const auto qi = static_cast<std::int32_t>(q);
    for (std::size_t j = 0; j < end; ++j) {
      const std::int32_t d = qi - static_cast<std::int32_t>(j);
      row[j] += -(m * static_cast<float>(d < 0 ? -d : d));
    }
  } else {
    for (std::size_t j = 0; j < end; ++j) row[j] += -(m * distance(q, j));
  }
  for (std::size_t j = end; j < g.keys; ++j) row[j] = -std::numeric_limits<float>::infinity();
}

}  // namespace

std::vector<float> alibi_slopes(std::size_t heads) {
  if (heads == 0) throw std::invalid_argument("alibi_slopes: heads is 0 (need at least 1)");
  check_allocation("alibi_slopes", saturating_mul(heads, sizeof(float)));
  std::size_t n = 1;  // the largest power of two <= heads
  while (n <= heads / 2) n *= 2;
  std::vector<float> slopes;
  slopes.reserve(heads);
  for (std::size_t h = 1; h <= n; ++h) slopes.push_back(power_of_half(8 * h, n));
  // The odd-numbered slopes of 2n: 2^(-8k / 2n), k = 1, 3, 5, ...
  for (std::size_t k = 1; slopes.size() < heads; k += 2) slopes.push_back(power_of_half(4 * k, n));
  return slopes;
}

void alibi_forward(MatrixView<float> scores, std::span<const float> slopes, std::size_t batch,
                   std::size_t queries, const AlibiOptions& options) {
  const Geometry g = validate("alibi_forward", scores, slopes.size(), batch, queries, options);
  // The slopes are read while the scores are written: a view of the scores would change them.
  detail::check_no_overlap("alibi_forward", "scores", scores, "slopes", detail::as_row(slopes));
  for (std::size_t h = 0; h < slopes.size(); ++h) {
    if (!std::isfinite(slopes[h])) {
      throw std::invalid_argument("alibi_forward: slope " + std::to_string(h) + " is " +
                                  std::to_string(slopes[h]) + ", not a finite number");
    }
  }
  if (g.keys == 0) return;
  const std::size_t grain = std::max<std::size_t>(1, kChunkElements / g.keys);
  parallel_for(scores.rows(), grain, scores.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      forward_row(scores.row(r).data(), g, slopes[g.head(r)], g.position(r));
    }
  });
}

void alibi_backward(MatrixView<float> dscores, std::span<float> dslopes, std::size_t heads,
                    std::size_t batch, std::size_t queries, const AlibiOptions& options) {
  const Geometry g = validate("alibi_backward", dscores, heads, batch, queries, options);
  if (!dslopes.empty() && dslopes.size() != heads) {
    throw std::invalid_argument(
        "alibi_backward: dslopes holds " + std::to_string(dslopes.size()) +
        " values, expected 0 (slopes not trained) or H = " + std::to_string(heads));
  }
  // dslopes is added into from the rows of dscores, which are written over (the masked keys):
  // a view of one into the other would read what was written.
  detail::check_no_overlap("alibi_backward", "dslopes", detail::as_row(dslopes), "dscores",
                           dscores);
  if (g.keys == 0) return;
  // Each row's sum of dscores * -|d| over its unmasked keys, in double, then per head in row
  // order: the same sums on any number of threads.
  std::vector<double> row_sums(dslopes.empty() ? 0 : dscores.rows());
  const std::size_t grain = std::max<std::size_t>(1, kChunkElements / g.keys);
  parallel_for(dscores.rows(), grain, dscores.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      float* row = dscores.row(r).data();
      const std::size_t q = g.position(r);
      const std::size_t stop = unmasked_end(g, q);
      if (!row_sums.empty()) {
        double sum = 0;
        for (std::size_t j = 0; j < stop; ++j) {
          sum += static_cast<double>(row[j]) * -static_cast<double>(distance(q, j));
        }
        row_sums[r] = sum;
      }
      for (std::size_t j = stop; j < g.keys; ++j) row[j] = 0.0f;
    }
  });
  if (dslopes.empty()) return;
  std::vector<double> per_head(heads, 0.0);
  for (std::size_t r = 0; r < row_sums.size(); ++r) per_head[g.head(r)] += row_sums[r];
  for (std::size_t h = 0; h < heads; ++h) dslopes[h] += static_cast<float>(per_head[h]);
}

}  // namespace posemb
