#include "posemb/sinusoidal.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "angles.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

void check_arguments(const char* op, std::size_t seq_len, std::size_t start,
                     const SinusoidalOptions& options) {
  if (!(std::isfinite(options.base) && options.base > 0.0)) {
    throw std::invalid_argument(std::string(op) + ": base must be finite and > 0, got " +
                                std::to_string(options.base));
  }
  if (options.layout != SinusoidalLayout::interleaved &&
      options.layout != SinusoidalLayout::concatenated) {
    throw std::invalid_argument(std::string(op) + ": layout " +
                                std::to_string(static_cast<int>(options.layout)) +
                                " is neither interleaved nor concatenated");
  }
  if (options.frequencies != SinusoidalFrequencies::vaswani &&
      options.frequencies != SinusoidalFrequencies::tensor2tensor) {
    throw std::invalid_argument(std::string(op) + ": frequencies " +
                                std::to_string(static_cast<int>(options.frequencies)) +
                                " is neither vaswani nor tensor2tensor");
  }
  if (seq_len != 0 && start > std::numeric_limits<std::size_t>::max() - (seq_len - 1)) {
    throw std::out_of_range(std::string(op) + ": positions [" + std::to_string(start) +
                            ", start + " + std::to_string(seq_len) + ") overflow std::size_t");
  }
}

// Where frequency i's sine and cosine go in a row of `dim` columns, and the frequencies.
struct Plan {
  std::vector<detail::InverseFrequency> inv;  // one per sine
  std::size_t cosines = 0;                    // the first `cosines` frequencies also have one
  std::size_t dim = 0;
  bool interleaved = true;

  std::size_t sin_col(std::size_t i) const { return interleaved ? 2 * i : i; }
  std::size_t cos_col(std::size_t i) const { return interleaved ? 2 * i + 1 : inv.size() + i; }
};

Plan make_plan(std::size_t dim, const SinusoidalOptions& options) {
  Plan plan;
  plan.dim = dim;
  plan.interleaved = options.layout == SinusoidalLayout::interleaved;
  if (options.frequencies == SinusoidalFrequencies::vaswani) {
    // inv_freq_i = base^(-2i/dim), i < ceil(dim/2); the last one has no cosine when dim is odd.
    const std::size_t sines = (dim + 1) / 2;
    for (std::size_t i = 0; i < sines; ++i) {
      const long double expo = static_cast<long double>(2 * i) / static_cast<long double>(dim);
      plan.inv.push_back(detail::inverse_frequency(options.base, expo));
    }
    plan.cosines = dim / 2;
  } else {
    // inv_freq_i = base^(-i/(h-1)), i < h = floor(dim/2); an odd dim's last column stays zero.
    const std::size_t h = dim / 2;
    const long double denom = h > 1 ? static_cast<long double>(h - 1) : 1.0L;
    for (std::size_t i = 0; i < h; ++i) {
      plan.inv.push_back(
          detail::inverse_frequency(options.base, static_cast<long double>(i) / denom));
    }
    plan.cosines = h;
  }
  return plan;
}

template <class T>
void fill(MatrixView<T> out, std::size_t start, const SinusoidalOptions& options) {
  const Plan plan = make_plan(out.cols(), options);
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(out.rows());
#pragma omp parallel for schedule(static) if (worth_parallel(out.size()))
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const std::size_t p = start + static_cast<std::size_t>(r);
    T* row = out.row(static_cast<std::size_t>(r)).data();
    if (plan.dim % 2 == 1 && plan.cosines == plan.inv.size()) row[plan.dim - 1] = T(0);
    for (std::size_t i = 0; i < plan.inv.size(); ++i) {
      double s;
      double c;
      detail::sin_cos(p, plan.inv[i], s, c);
      row[plan.sin_col(i)] = static_cast<T>(s);
      if (i < plan.cosines) row[plan.cos_col(i)] = static_cast<T>(c);
    }
  }
}

}  // namespace

Matrix<float> sinusoidal_positional_encoding(std::size_t seq_len, std::size_t embed_dim,
                                             std::size_t start, const SinusoidalOptions& options) {
  check_arguments("sinusoidal_positional_encoding", seq_len, start, options);
  Matrix<float> out(seq_len, embed_dim);
  fill(out.view(), start, options);
  return out;
}

void sinusoidal_positional_encoding_into(MatrixView<float> out, std::size_t start,
                                         const SinusoidalOptions& options) {
  check_arguments("sinusoidal_positional_encoding_into", out.rows(), start, options);
  fill(out, start, options);
}

void sinusoidal_positional_encoding_into(MatrixView<double> out, std::size_t start,
                                         const SinusoidalOptions& options) {
  check_arguments("sinusoidal_positional_encoding_into", out.rows(), start, options);
  fill(out, start, options);
}

}  // namespace posemb
