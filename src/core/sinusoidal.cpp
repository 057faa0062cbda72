#include "posemb/sinusoidal.hpp"
#include "posemb/parallel.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace posemb {
namespace {

// Below this angle a double evaluation is within ~2e-9 of exact (angle * 2^-52); above it the
// angle is formed and reduced in long double (64-bit mantissa).
constexpr double kDoubleAngleLimit = 16777216.0;  // 2^24

void check_arguments(const char* op, std::size_t seq_len, std::size_t start, double base) {
  if (!(std::isfinite(base) && base > 0.0)) {
    throw std::invalid_argument(std::string(op) + ": base must be finite and > 0, got " +
                                std::to_string(base));
  }
  if (seq_len != 0 && start > std::numeric_limits<std::size_t>::max() - (seq_len - 1)) {
    throw std::out_of_range(std::string(op) + ": positions [" + std::to_string(start) +
                            ", start + " + std::to_string(seq_len) + ") overflow std::size_t");
  }
}

template <class T>
void fill(MatrixView<T> out, std::size_t start, double base) {
  const std::size_t dim = out.cols();
  const std::size_t pairs = (dim + 1) / 2;
  // inv_freq_i = base^(-2i/dim), formed in long double; the double copy serves small angles.
  std::vector<long double> inv_ld(pairs);
  std::vector<double> inv_d(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    const long double expo = -static_cast<long double>(2 * i) / static_cast<long double>(dim);
    inv_ld[i] = std::pow(static_cast<long double>(base), expo);
    inv_d[i] = static_cast<double>(inv_ld[i]);
  }
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(out.rows());
#pragma omp parallel for schedule(static) if (worth_parallel(out.size()))
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const std::size_t p = start + static_cast<std::size_t>(r);
    const double pd = static_cast<double>(p);
    const long double pld = static_cast<long double>(p);
    T* row = out.row(static_cast<std::size_t>(r)).data();
    for (std::size_t i = 0; i < pairs; ++i) {
      double s;
      double c;
      if (pd * inv_d[i] < kDoubleAngleLimit) {
        const double angle = pd * inv_d[i];
        s = std::sin(angle);
        c = std::cos(angle);
      } else {
        const long double angle = pld * inv_ld[i];
        s = static_cast<double>(std::sin(angle));
        c = static_cast<double>(std::cos(angle));
      }
      row[2 * i] = static_cast<T>(s);
      if (2 * i + 1 < dim) row[2 * i + 1] = static_cast<T>(c);
    }
  }
}

}  // namespace

Matrix<float> sinusoidal_positional_encoding(std::size_t seq_len, std::size_t embed_dim,
                                             std::size_t start, double base) {
  check_arguments("sinusoidal_positional_encoding", seq_len, start, base);
  Matrix<float> out(seq_len, embed_dim);
  fill(out.view(), start, base);
  return out;
}

void sinusoidal_positional_encoding_into(MatrixView<float> out, std::size_t start, double base) {
  check_arguments("sinusoidal_positional_encoding_into", out.rows(), start, base);
  fill(out, start, base);
}

void sinusoidal_positional_encoding_into(MatrixView<double> out, std::size_t start, double base) {
  check_arguments("sinusoidal_positional_encoding_into", out.rows(), start, base);
  fill(out, start, base);
}

}  // namespace posemb
