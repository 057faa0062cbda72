#include "table_report.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <stb_image_write.h>
#include "posemb/atomic_file.hpp"

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

void append_png(void* ctx, void* data, int size) {
  auto* out = static_cast<std::vector<unsigned char>*>(ctx);
  const auto* p = static_cast<const unsigned char*>(data);
  out->insert(out->end(), p, p + size);
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
  const std::size_t n = (unit.rows() + step - 1) / step;
  if (n == 0) throw std::invalid_argument("inspect: the table has no rows to plot");
  std::vector<unsigned char> rgb(n * n * 3);
  const auto ni = static_cast<long long>(n);
#pragma omp parallel for schedule(dynamic, 16)
  for (long long i = 0; i < ni; ++i) {
    const auto ui = static_cast<std::size_t>(i);
    // The matrix is symmetric: compute j >= i and write both pixels.
    for (std::size_t j = ui; j < n; ++j) {
      const float c = std::clamp(
          dot(unit.row(ui * step).data(), unit.row(j * step).data(), unit.cols()), -1.0f, 1.0f);
      // Diverging map: -1 blue (0,0,255), 0 white, +1 red (255,0,0).
      const auto fade = static_cast<unsigned char>(std::lround(255.0f * (1.0f - std::fabs(c))));
      for (unsigned char* px : {&rgb[(ui * n + j) * 3], &rgb[(j * n + ui) * 3]}) {
        px[0] = c >= 0 ? 255 : fade;
        px[1] = fade;
        px[2] = c <= 0 ? 255 : fade;
      }
    }
  }
  std::vector<unsigned char> png;
  stbi_write_png_compression_level = 2;  // fast: a heatmap is smooth, it compresses anyway
  const int side = static_cast<int>(n);
  if (stbi_write_png_to_func(append_png, &png, side, side, 3, rgb.data(), side * 3) == 0) {
    throw std::runtime_error("inspect: PNG encoding of the " + std::to_string(n) + " x " +
                             std::to_string(n) + " heatmap failed");
  }
  write_file_atomically(path, "inspect --plot",
                        [&](FileSink& sink) { sink.write(png.data(), png.size()); });
  return n;
}

}  // namespace posemb::cli
