#include "posemb/sinusoidal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "angles.hpp"
#include "posemb/parallel.hpp"
#include "sincos_kernels.hpp"

namespace posemb {
namespace {

void check_arguments(const char* op, std::size_t seq_len, std::size_t start,
                     const SinusoidalOptions& options) {
  if (!detail::usable_base(options.base)) {
    throw std::invalid_argument(std::string(op) + ": base = " + detail::number_text(options.base) +
                                " must be in [1e-300, 1e300] (finite and > 0, its inverse "
                                "frequencies base^-x normal doubles)");
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
  std::vector<double> inv_d;        // one per sine: base^(-exponent) rounded to double
  std::vector<long double> inv_ld;  // the same in long double (for angles of 2^24 and more)
  std::size_t cosines = 0;          // the first `cosines` frequencies also have one
  std::size_t dim = 0;
  bool interleaved = true;

  std::size_t sines() const { return inv_d.size(); }
  std::size_t sin_col(std::size_t i) const { return interleaved ? 2 * i : i; }
  std::size_t cos_col(std::size_t i) const { return interleaved ? 2 * i + 1 : sines() + i; }

  void add(const detail::InverseFrequency& f) {
    inv_d.push_back(f.d);
    inv_ld.push_back(f.ld);
  }
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
      plan.add(detail::inverse_frequency(options.base, expo));
    }
    plan.cosines = dim / 2;
  } else {
    // inv_freq_i = base^(-i/(h-1)), i < h = floor(dim/2); an odd dim's last column stays zero.
    const std::size_t h = dim / 2;
    const long double denom = h > 1 ? static_cast<long double>(h - 1) : 1.0L;
    for (std::size_t i = 0; i < h; ++i) {
      plan.add(detail::inverse_frequency(options.base, static_cast<long double>(i) / denom));
    }
    plan.cosines = h;
  }
  return plan;
}

// Frequencies per call of the sine-cosine kernel (its results wait on the stack).
constexpr std::size_t kBlock = 64;

template <class T>
void fill(MatrixView<T> out, std::size_t start, const SinusoidalOptions& options) {
  if (out.cols() == 0) return;  // nothing to write, however many rows (checked before: SIZE_MAX)
  const Plan plan = make_plan(out.cols(), options);
  const detail::SinCosAnglesFn sin_cos = detail::sin_cos_angles();  // may throw: before writing
  const std::size_t sines = plan.sines();
  parallel_for(out.rows(), 16, out.size(), [&](std::size_t r0, std::size_t r1) {
    double s[kBlock];
    double c[kBlock];
    for (std::size_t r = r0; r < r1; ++r) {
      const std::size_t p = start + r;
      T* row = out.row(r).data();
      if (plan.dim % 2 == 1 && plan.cosines == sines) row[plan.dim - 1] = T(0);
      for (std::size_t i0 = 0; i0 < sines; i0 += kBlock) {
        const std::size_t n = std::min(kBlock, sines - i0);
        sin_cos(p, plan.inv_d.data() + i0, plan.inv_ld.data() + i0, n, s, c);
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t i = i0 + k;
          row[plan.sin_col(i)] = static_cast<T>(s[k]);
          if (i < plan.cosines) row[plan.cos_col(i)] = static_cast<T>(c[k]);
        }
      }
    }
  });
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
