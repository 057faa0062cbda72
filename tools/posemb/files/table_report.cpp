#include "table_report.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "viz/heatmap.hpp"

namespace posemb::cli {
namespace {

// Dot product with 8 independent partial sums (so the compiler can vectorize it).
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

}  // namespace

RowNormStats row_norm_stats(MatrixView<const float> table) {
  RowNormStats s;
  if (table.rows() == 0) return s;
  s.min = INFINITY;
  s.max = -INFINITY;
  double sum = 0, sum2 = 0;
  for (std::size_t r = 0; r < table.rows(); ++r) {
    double n2 = 0;
    for (float v : table.row(r)) n2 += static_cast<double>(v) * v;
    const double n = std::sqrt(n2);
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
  for (std::size_t r = 0; r < u.rows(); ++r) {
    double n2 = 0;
    for (float v : u.row(r)) n2 += static_cast<double>(v) * v;
    if (n2 == 0) continue;
    const auto inv = static_cast<float>(1.0 / std::sqrt(n2));
    for (float& v : u.row(r)) v *= inv;
  }
  return u;
}

std::vector<std::pair<std::size_t, double>> mean_cosine_by_distance(MatrixView<const float> unit) {
  std::vector<std::pair<std::size_t, double>> out;
  for (std::size_t d = 1; d < unit.rows(); d *= 2) {
    double sum = 0;
    const std::size_t n = unit.rows() - d;
    for (std::size_t i = 0; i < n; ++i) {
      sum += dot(unit.row(i).data(), unit.row(i + d).data(), unit.cols());
    }
    out.emplace_back(d, sum / static_cast<double>(n));
  }
  return out;
}

std::size_t write_cosine_heatmap(MatrixView<const float> unit, std::size_t step,
                                 const std::string& path) {
  if (step == 0) step = 1;
  if (unit.rows() == 0) throw std::invalid_argument("inspect: the table has no rows to plot");
  const Matrix<float> sim = viz::cosine_similarity(unit, step);
  viz::HeatmapOptions o;
  o.title = "cosine similarity between positions" +
            (step > 1 ? " (every " + std::to_string(step) + "th)" : std::string());
  o.index_step = step;
  write_file_atomically(path, "inspect --plot", viz::heatmap_png(sim, o));
  return sim.rows();
}

void warn(const std::string& text) {
  fmt::print(stderr, "posemb: warning: {}\n", text);
}

std::string looks_reserved(const PositionTable& table, bool flag_given) {
  if (flag_given || table.reserved_rows_recorded) return {};
  const std::size_t k = likely_reserved_rows(table.values);
  if (k <= table.reserved_rows) return {};
  return "row " + std::to_string(k - 1) + " of " + quote_untrusted(table.source_tensor) +
         " is all zeros, so its first " + std::to_string(k) +
         " rows look reserved (RoBERTa's table reserves 2, its padding row 1 all zeros: position "
         "p is row p + 2) and the file does not say";
}

std::string squeeze_note(const PositionTable& table) {
  if (table.stored_shape.size() <= 2) return {};
  return "tensor " + quote_untrusted(table.source_tensor) + " is stored as " +
         shape_string(table.stored_shape) + " (ViT style): read as a " +
         std::to_string(table.values.rows()) + " x " + std::to_string(table.values.cols()) +
         " table (positions x dim, the leading 1s squeezed) and written back with its leading 1s; "
         "in a ViT, row 0 is the class token (--reserved-rows 1) and the rest a 2-D grid of "
         "patches, which posemb resizes as one sequence";
}

}  // namespace posemb::cli
