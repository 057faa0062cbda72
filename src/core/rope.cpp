#include "posemb/rope.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "angles.hpp"
#include "posemb/parallel.hpp"
#include "resolve_positions.hpp"
#include "rope_kernels.hpp"
#include "sincos_kernels.hpp"

namespace posemb {
namespace {

std::string remedy_for_cache(std::size_t positions) {
  return "The position table here is a RopeCache of " + std::to_string(positions) +
         " positions: reserve() the rows named above, or rotate with the Rope itself, which "
         "computes any position";
}

// Pairs per call of the sine-cosine kernel (its results wait on the stack).
constexpr std::size_t kAngleBlock = 64;

constexpr std::size_t kMaxPosition =
    static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());

// Validates x against (heads, batch, seq_len) and the rope, then resolves the positions, all
// before anything is written.
Matrix<std::int64_t> prepare(const char* op, MatrixView<const float> x, std::size_t heads,
                             std::size_t batch, std::size_t seq_len,
                             const PositionSource& positions, const Rope& rope, std::size_t limit,
                             const std::string& remedy) {
  const std::size_t D = rope.head_dim();
  if (heads == 0) throw std::invalid_argument(std::string(op) + ": heads is 0");
  if (batch != 0 && seq_len != 0 && (x.rows() % seq_len != 0 || x.rows() / seq_len != batch)) {
    throw std::invalid_argument(std::string(op) + ": x has " + std::to_string(x.rows()) +
                                " rows, expected B*T = " + std::to_string(batch) + "*" +
                                std::to_string(seq_len));
  }
  if (x.cols() % heads != 0 || x.cols() / heads != D) {
    std::string why = x.cols() % heads != 0
                          ? " are not divisible by " + std::to_string(heads) + " heads"
                          : " are " + std::to_string(heads) + " heads of dimension " +
                                std::to_string(x.cols() / heads);
    throw std::invalid_argument(
        std::string(op) + ": x has " + std::to_string(x.cols()) + " columns, which" + why +
        ", but the rotation is for heads of "
        "dimension D = " +
        std::to_string(D) + " (x must be (B*T, H*D) = (" + std::to_string(batch) + "*" +
        std::to_string(seq_len) + ", " + std::to_string(heads) + "*" + std::to_string(D) + "))");
  }
  return detail::resolve_positions(positions, batch, seq_len, limit, op, remedy);
}

detail::RopeGeometry geometry(const Rope& rope, std::size_t heads) {
  return {heads, rope.head_dim(), rope.pairs(), rope.layout() == RopeLayout::interleaved};
}

template <bool Inverse>
void rotate_cached(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const RopeCache& cache) {
  const Matrix<std::int64_t> pos = prepare(op, x, heads, batch, seq_len, positions, cache.rope(),
                                           cache.positions(), remedy_for_cache(cache.positions()));
  const detail::RopeGeometry g = geometry(cache.rope(), heads);
  const detail::RotateRowFn rotate_row = detail::rotate_row(Inverse);  // may throw: before writing
  const MatrixView<const float> cs = cache.cos(), sn = cache.sin();
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(x.rows());
#pragma omp parallel for schedule(static) if (worth_parallel(x.size()))
  for (std::ptrdiff_t ri = 0; ri < rows; ++ri) {
    const std::int64_t p = pos.data()[ri];
    if (p < 0) continue;  // a pad: no position, no rotation
    const auto up = static_cast<std::size_t>(p);
    rotate_row(x.row(static_cast<std::size_t>(ri)).data(), cs.row(up).data(), sn.row(up).data(), g);
  }
}

template <bool Inverse>
void rotate_direct(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const Rope& rope) {
  const Matrix<std::int64_t> pos =
      prepare(op, x, heads, batch, seq_len, positions, rope, kMaxPosition,
              "The rotary embedding takes positions below 2^63 - 1");
  const detail::RopeGeometry g = geometry(rope, heads);
  // Both kernels chosen here, where an invalid POSEMB_SIMD can still throw (not in the region).
  const detail::RotateRowFn rotate_row = detail::rotate_row(Inverse);
  (void)detail::sin_cos_angles();
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(x.rows());
  // Each thread's cos and sin, allocated before the parallel region: an exception cannot leave
  // an OpenMP region (it would end the process), and x is untouched if the allocation fails.
  const bool parallel = worth_parallel(x.size());
  const auto threads = static_cast<std::size_t>(parallel ? omp_get_max_threads() : 1);
  std::vector<float> scratch(2 * g.pairs * threads);
#pragma omp parallel if (parallel)
  {
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num()) % threads;
    const std::span<float> c(scratch.data() + 2 * g.pairs * t, g.pairs);
    const std::span<float> s(scratch.data() + 2 * g.pairs * t + g.pairs, g.pairs);
#pragma omp for schedule(static)
    for (std::ptrdiff_t ri = 0; ri < rows; ++ri) {
      const std::int64_t p = pos.data()[ri];
      if (p < 0) continue;
      rope.angles(static_cast<std::size_t>(p), c, s);  // sizes right: does not throw
      rotate_row(x.row(static_cast<std::size_t>(ri)).data(), c.data(), s.data(), g);
    }
  }
}

}  // namespace

Rope::Rope(std::size_t head_dim, RopeLayout layout, const RopeOptions& options)
    : head_dim_(head_dim),
      rotary_dim_(options.rotary_dim == 0 ? head_dim : options.rotary_dim),
      layout_(layout),
      base_(options.base),
      scaling_(options.scaling),
      seq_len_(options.seq_len) {
  if (head_dim == 0 || head_dim % 2 != 0) {
    throw std::invalid_argument("Rope: head_dim D = " + std::to_string(head_dim) +
                                " must be even and at least 2 (columns rotate in pairs)");
  }
  if (rotary_dim_ % 2 != 0 || rotary_dim_ > head_dim) {
    throw std::invalid_argument("Rope: rotary_dim R = " + std::to_string(options.rotary_dim) +
                                " must be even and at most head_dim D = " +
                                std::to_string(head_dim) + " (0: all D columns)");
  }
  if (!(std::isfinite(options.base) && options.base > 0.0)) {
    throw std::invalid_argument("Rope: base must be finite and > 0, got " +
                                std::to_string(options.base));
  }
  if (layout != RopeLayout::interleaved && layout != RopeLayout::half) {
    throw std::invalid_argument("Rope: layout " + std::to_string(static_cast<int>(layout)) +
                                " is neither interleaved nor half");
  }
  // The unscaled theta_i are detail::inverse_frequency(base, 2i/R), as before scalings existed.
  freq_ = rope_frequencies(base_, rotary_dim_, scaling_, seq_len_);
  for (const long double v : freq_.inv_freq) inv_freq_d_.push_back(static_cast<double>(v));
}

Rope Rope::with_seq_len(std::size_t seq_len) const {
  return Rope(head_dim_, layout_, RopeOptions{base_, rotary_dim_, scaling_, seq_len});
}

void Rope::angles(std::size_t position, std::span<float> cos, std::span<float> sin) const {
  if (cos.size() != pairs() || sin.size() != pairs()) {
    throw std::invalid_argument("Rope::angles: cos and sin need " + std::to_string(pairs()) +
                                " values each, got " + std::to_string(cos.size()) + " and " +
                                std::to_string(sin.size()));
  }
  const detail::SinCosAnglesFn sin_cos = detail::sin_cos_angles();
  const double a = freq_.attention_factor;  // 1 exactly unless the scaling sets it
  double s[kAngleBlock];
  double c[kAngleBlock];
  for (std::size_t i0 = 0; i0 < pairs(); i0 += kAngleBlock) {
    const std::size_t n = std::min(kAngleBlock, pairs() - i0);
    sin_cos(position, inv_freq_d_.data() + i0, freq_.inv_freq.data() + i0, n, s, c);
    for (std::size_t k = 0; k < n; ++k) {
      cos[i0 + k] = static_cast<float>(c[k] * a);  // a * cos in double, rounded once
      sin[i0 + k] = static_cast<float>(s[k] * a);
    }
  }
}

RopeCache::RopeCache(const Rope& rope, std::size_t positions) : rope_(rope) {
  reserve(positions);
}

void RopeCache::reserve(std::size_t positions) {
  const std::size_t have = cos_.rows();
  if (positions <= have) return;
  const std::size_t pairs = rope_.pairs();
  Matrix<float> c(positions, pairs), s(positions, pairs);
  if (have != 0) {
    std::memcpy(c.data(), cos_.data(), have * pairs * sizeof(float));
    std::memcpy(s.data(), sin_.data(), have * pairs * sizeof(float));
  }
  const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(have);
  const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(positions);
  const Rope& rope = rope_;
  (void)detail::sin_cos_angles();  // may throw (POSEMB_SIMD): here, not in the parallel region
#pragma omp parallel for schedule(static) if (worth_parallel((positions - have) * pairs))
  for (std::ptrdiff_t p = first; p < last; ++p) {
    const auto up = static_cast<std::size_t>(p);
    rope.angles(up, c.row(up), s.row(up));
  }
  cos_ = std::move(c);
  sin_ = std::move(s);
}

void rope_forward(MatrixView<float> x, std::size_t heads, std::size_t batch, std::size_t seq_len,
                  const PositionSource& positions, const RopeCache& cache) {
  rotate_cached<false>("rope_forward", x, heads, batch, seq_len, positions, cache);
}

void rope_forward(MatrixView<float> x, std::size_t heads, std::size_t batch, std::size_t seq_len,
                  const PositionSource& positions, const Rope& rope) {
  rotate_direct<false>("rope_forward", x, heads, batch, seq_len, positions, rope);
}

void rope_backward(MatrixView<float> dx, std::size_t heads, std::size_t batch, std::size_t seq_len,
                   const PositionSource& positions, const RopeCache& cache) {
  rotate_cached<true>("rope_backward", dx, heads, batch, seq_len, positions, cache);
}

void rope_backward(MatrixView<float> dx, std::size_t heads, std::size_t batch, std::size_t seq_len,
                   const PositionSource& positions, const Rope& rope) {
  rotate_direct<true>("rope_backward", dx, heads, batch, seq_len, positions, rope);
}

}  // namespace posemb
