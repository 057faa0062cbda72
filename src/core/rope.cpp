#include "posemb/rope.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// A task (a chunk of parallel_for) rotates about this many bytes of x: enough to amortize taking
// it, small enough that a thread which lost its core leaves little for the others to wait on.
constexpr std::size_t kTaskBytes = std::size_t{96} << 10;
// At most this many batch rows per task: they are T rows apart, often a multiple of 4 KiB, which
// maps them onto the same L1 sets.
constexpr std::size_t kMaxBatchPerTask = 8;

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// Which rows a call rotates with which angles, and how they are cut into tasks. Contiguous
// positions need no array: a task is a block of positions t by a block of batch rows b, t outer
// and b inner, so that each position's cos and sin (cached or computed) serve the task's batch
// rows while in L1, and its rows are a few sequential streams. Other sources: a task is a block
// of rows in order, each at its own position.
struct RopePlan {
  bool contiguous = false;
  std::size_t start = 0;     // contiguous: position of t = 0
  Matrix<std::int64_t> pos;  // other sources: (B, T), -1 for pads
  std::size_t B = 0, T = 0;
  std::size_t t_per_task = 0, b_per_task = 0, b_tasks = 0;  // contiguous
  std::size_t rows_per_task = 0;                            // other sources
  std::size_t tasks = 0;
};

// Validates x against (heads, batch, seq_len) and the rope, then the positions (resolved into an
// array unless contiguous), all before anything is written.
RopePlan prepare(const char* op, MatrixView<const float> x, std::size_t heads, std::size_t batch,
                 std::size_t seq_len, const PositionSource& positions, const Rope& rope,
                 std::size_t limit, const std::string& remedy) {
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
  RopePlan plan;
  plan.B = batch;
  plan.T = seq_len;
  const std::size_t rows = std::max<std::size_t>(1, kTaskBytes / (x.cols() * sizeof(float)));
  if (positions.kind() == PositionSource::Kind::contiguous) {
    detail::check_contiguous_positions(positions.start(), batch, seq_len, limit, op, remedy);
    plan.contiguous = true;
    plan.start = positions.start();
    plan.b_per_task = std::min({batch, rows, kMaxBatchPerTask});
    plan.t_per_task = std::max<std::size_t>(1, rows / plan.b_per_task);
    plan.b_tasks = ceil_div(batch, plan.b_per_task);
    plan.tasks = ceil_div(seq_len, plan.t_per_task) * plan.b_tasks;
  } else {
    plan.pos = detail::resolve_positions(positions, batch, seq_len, limit, op, remedy);
    plan.rows_per_task = rows;
    plan.tasks = ceil_div(batch * seq_len, rows);
  }
  return plan;
}

detail::RopeGeometry geometry(const Rope& rope, std::size_t heads) {
  return {heads, rope.head_dim(), rope.pairs(), rope.layout() == RopeLayout::interleaved};
}

// Runs the plan's tasks over parallel_for: angles(p, task) gives the cosines and sines of
// position p (a task's own scratch may hold them), rotate(row, n, stride, c, s) rotates n rows.
template <class Angles>
void run_plan(const RopePlan& plan, MatrixView<float> x, detail::RotateRowsFn rotate,
              const detail::RopeGeometry& g, const Angles& angles) {
  const std::size_t stride = x.row_stride();
  parallel_for(plan.tasks, 1, x.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      if (plan.contiguous) {
        const std::size_t t0 = (k / plan.b_tasks) * plan.t_per_task;
        const std::size_t t1 = std::min(plan.T, t0 + plan.t_per_task);
        const std::size_t b0 = (k % plan.b_tasks) * plan.b_per_task;
        const std::size_t nb = std::min(plan.B - b0, plan.b_per_task);
        for (std::size_t t = t0; t < t1; ++t) {
          const auto [c, s] = angles(plan.start + t, begin);
          rotate(x.row(b0 * plan.T + t).data(), plan.T * stride, nb, c, s, g);
        }
      } else {
        const std::size_t r0 = k * plan.rows_per_task;
        const std::size_t r1 = std::min(plan.B * plan.T, r0 + plan.rows_per_task);
        for (std::size_t r = r0; r < r1; ++r) {
          const std::int64_t p = plan.pos.data()[r];
          if (p < 0) continue;  // a pad: no position, no rotation
          const auto [c, s] = angles(static_cast<std::size_t>(p), begin);
          rotate(x.row(r).data(), stride, 1, c, s, g);
        }
      }
    }
  });
}

template <bool Inverse>
void rotate_cached(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const RopeCache& cache) {
  const RopePlan plan = prepare(op, x, heads, batch, seq_len, positions, cache.rope(),
                                cache.positions(), remedy_for_cache(cache.positions()));
  const detail::RopeGeometry g = geometry(cache.rope(), heads);
  const detail::RotateRowsFn rotate = detail::rotate_rows(Inverse);  // may throw: before writing
  const MatrixView<const float> cs = cache.cos(), sn = cache.sin();
  run_plan(plan, x, rotate, g, [&](std::size_t p, std::size_t) {
    return std::pair{cs.row(p).data(), sn.row(p).data()};
  });
}

template <bool Inverse>
void rotate_direct(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const Rope& rope) {
  const RopePlan plan = prepare(op, x, heads, batch, seq_len, positions, rope, kMaxPosition,
                                "The rotary embedding takes positions below 2^63 - 1");
  const detail::RopeGeometry g = geometry(rope, heads);
  // Both kernels chosen here, where an invalid POSEMB_SIMD can still throw (not in a task).
  const detail::RotateRowsFn rotate = detail::rotate_rows(Inverse);
  (void)detail::sin_cos_angles();
  // The cos and sin of each call of the body (it runs tasks [begin, end) on one thread; begins
  // differ), allocated before any task runs: a task must not throw, and x is untouched if the
  // allocation fails.
  const std::size_t P = g.pairs;
  std::vector<float> scratch(2 * P * plan.tasks);
  run_plan(plan, x, rotate, g, [&](std::size_t p, std::size_t begin) {
    float* c = scratch.data() + 2 * P * begin;
    rope.angles(p, {c, P}, {c + P, P});  // sizes right: does not throw
    return std::pair<const float*, const float*>{c, c + P};
  });
}

}  // namespace

Rope::Rope(std::size_t head_dim, RopeLayout layout, const RopeOptions& options)
    : head_dim_(head_dim),
      rotary_dim_(options.rotary_dim == 0 ? head_dim : options.rotary_dim),
      layout_(layout),
      base_(options.base) {
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
  for (std::size_t i = 0; i < pairs(); ++i) {
    const long double expo =
        static_cast<long double>(2 * i) / static_cast<long double>(rotary_dim_);
    const detail::InverseFrequency f = detail::inverse_frequency(base_, expo);
    inv_freq_ld_.push_back(f.ld);
    inv_freq_d_.push_back(f.d);
  }
}

void Rope::angles(std::size_t position, std::span<float> cos, std::span<float> sin) const {
  if (cos.size() != pairs() || sin.size() != pairs()) {
    throw std::invalid_argument("Rope::angles: cos and sin need " + std::to_string(pairs()) +
                                " values each, got " + std::to_string(cos.size()) + " and " +
                                std::to_string(sin.size()));
  }
  const detail::SinCosAnglesFn sin_cos = detail::sin_cos_angles();
  double s[kAngleBlock];
  double c[kAngleBlock];
  for (std::size_t i0 = 0; i0 < pairs(); i0 += kAngleBlock) {
    const std::size_t n = std::min(kAngleBlock, pairs() - i0);
    sin_cos(position, inv_freq_d_.data() + i0, inv_freq_ld_.data() + i0, n, s, c);
    for (std::size_t k = 0; k < n; ++k) {
      cos[i0 + k] = static_cast<float>(c[k]);
      sin[i0 + k] = static_cast<float>(s[k]);
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
  const Rope& rope = rope_;
  (void)detail::sin_cos_angles();  // may throw (POSEMB_SIMD): here, not in a task
  // Rows in chunks of 16 (each row's angles are computed alone: the same bits on any thread).
  parallel_for(positions - have, 16, (positions - have) * pairs,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t p = have + begin; p < have + end; ++p) {
                   rope.angles(p, c.row(p), s.row(p));
                 }
               });
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
