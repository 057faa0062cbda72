#include "posemb/table_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

// Dot product of n floats with 8 independent partial sums added in a fixed order (so the
// compiler may vectorize it without changing a bit).
float dot(const float* a, const float* b, std::size_t n) {
  float acc[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  }
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float v : acc) s += v;
  return s;
}

double squared_norm(std::span<const float> row) {
  double sq = 0;
  for (float v : row) sq += static_cast<double>(v) * v;
  return sq;
}

// Rows 0, step, 2 step, ... of table, each times 1 / |row| in double, rounded to float:
// (ceil(rows / step), dim).
Matrix<float> thinned_unit_rows(MatrixView<const float> table, std::size_t step) {
  const std::size_t n = (table.rows() + step - 1) / step, dim = table.cols();
  Matrix<float> unit(n, dim);
  for (std::size_t i = 0; i < n; ++i) {
    const auto row = table.row(i * step);
    const double sq = squared_norm(row);
    const double inv = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
    for (std::size_t k = 0; k < dim; ++k) unit(i, k) = static_cast<float>(row[k] * inv);
  }
  return unit;
}

}  // namespace

std::vector<double> row_norms(MatrixView<const float> table) {
  // One double per row, even without columns: checked against the budget (2^40 rows of none
  // ended in std::bad_alloc).
  check_allocation("row_norms", saturating_mul(table.rows(), sizeof(double)));
  std::vector<double> norms(table.rows());
  for (std::size_t r = 0; r < table.rows(); ++r) norms[r] = std::sqrt(squared_norm(table.row(r)));
  return norms;
}

RowNormStats row_norm_stats(MatrixView<const float> table) {
  RowNormStats s;
  // No rows, or rows without columns (every norm 0): all 0, without a pass over the rows (or
  // row_norms' one double per row, which refused 2^40 rows of none with MemoryLimitExceeded).
  if (table.rows() == 0 || table.cols() == 0) return s;
  s.min = INFINITY;
  s.max = -INFINITY;
  double sum = 0, sum2 = 0;
  for (const double n : row_norms(table)) {
    s.min = std::min(s.min, n);
    s.max = std::max(s.max, n);
    sum += n;
    sum2 += n * n;
  }
  const auto rows = static_cast<double>(table.rows());
  s.mean = sum / rows;
  s.stddev = std::sqrt(std::max(0.0, sum2 / rows - s.mean * s.mean));
  return s;
}

Matrix<float> unit_rows(MatrixView<const float> table) {
  Matrix<float> u(table);
  if (u.cols() == 0) return u;  // nothing to scale, however many rows
  for (std::size_t r = 0; r < u.rows(); ++r) {
    const double n2 = squared_norm(u.row(r));
    if (n2 == 0) continue;
    const auto inv = static_cast<float>(1.0 / std::sqrt(n2));
    for (float& v : u.row(r)) v *= inv;
  }
  return u;
}

Matrix<float> cosine_similarity(MatrixView<const float> table, std::size_t step) {
  if (step == 0) throw std::invalid_argument("cosine_similarity: step must be >= 1");
  const std::size_t n = (table.rows() + step - 1) / step, dim = table.cols();
  check_allocation(
      "cosine_similarity",
      saturating_mul(saturating_add(saturating_mul(n, n), saturating_mul(n, dim)), sizeof(float)));
  const Matrix<float> unit = thinned_unit_rows(table, step);  // (n, dim)
  Matrix<float> sim(n, n);
  // Symmetric: row i computes j >= i and writes (i, j) and (j, i); rows of chunks are disjoint,
  // so no two chunks write the same cell. Small chunks: row i's work shrinks as i grows.
  parallel_for(n, 4, saturating_mul(saturating_mul(n, n), dim) / 2,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t i = begin; i < end; ++i) {
                   for (std::size_t j = i; j < n; ++j) {
                     const float s =
                         std::clamp(dot(unit.row(i).data(), unit.row(j).data(), dim), -1.0f, 1.0f);
                     sim(i, j) = s;
                     sim(j, i) = s;
                   }
                 }
               });
  return sim;
}

std::vector<OffsetSimilarity> distance_profile(MatrixView<const float> table) {
  const Matrix<float> unit = unit_rows(table);
  std::vector<OffsetSimilarity> out;
  if (unit.cols() == 0) {
    // Rows without columns: every cosine is 0 (a zero row has similarity 0 with everything),
    // so each offset's mean is 0, found without a pass over the rows.
    for (std::size_t d = 1; d < unit.rows(); d *= 2) {
      out.push_back({d, 0.0});
      if (d > unit.rows() / 2) break;  // d * 2 would pass the rows (or wrap)
    }
    return out;
  }
  for (std::size_t d = 1; d < unit.rows(); d *= 2) {
    double sum = 0;
    const std::size_t n = unit.rows() - d;
    for (std::size_t i = 0; i < n; ++i) {
      sum += dot(unit.row(i).data(), unit.row(i + d).data(), unit.cols());
    }
    out.push_back({d, sum / static_cast<double>(n)});
  }
  return out;
}

std::size_t likely_reserved_rows(MatrixView<const float> table) {
  if (table.cols() == 0) return 0;  // every row is all zeros: no sign of reserved rows
  auto zero = [&](std::size_t r) {
    for (float v : table.row(r)) {
      if (v != 0.0f) return false;
    }
    return true;
  };
  const std::size_t scan = std::min(kReservedRowScan, table.rows());
  std::size_t last_zero = scan;
  for (std::size_t r = 0; r < scan; ++r) {
    if (zero(r)) last_zero = r;
  }
  if (last_zero == scan) return 0;
  for (std::size_t r = last_zero + 1; r < table.rows(); ++r) {
    if (!zero(r)) return last_zero + 1;
  }
  return 0;  // zeros from there on: an all-zero table says nothing about reserved rows
}

std::optional<std::size_t> unstated_reserved_rows(const PositionTable& table,
                                                  bool caller_gave_them) {
  if (caller_gave_them || table.reserved_rows_recorded) return std::nullopt;
  const std::size_t k = likely_reserved_rows(table.values);
  if (k <= table.reserved_rows) return std::nullopt;
  return k;
}

}  // namespace posemb
