#include "posemb/rope.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "angles.hpp"
#include "core/overlap.hpp"
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

// A task (a chunk of parallel_for) rotates about this many bytes of x (without a cache, this
// many of each of its batch rows): enough to amortize taking it, small enough that a thread
// which lost its core leaves little for the others to wait on.
constexpr std::size_t kTaskBytes = std::size_t{96} << 10;
// Without a cache, at most this many batch rows share a task's angles (computed once for them),
// and the tasks go in at most this many chunks (each chunk has its own scratch for the angles).
constexpr std::size_t kMaxBatchPerTask = 8;
constexpr std::size_t kMaxChunks = 256;

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// parallel_for's work: the rotation is a streaming loop, counted in bytes (posemb::
// streaming_work): x read and written once. Without a cache, each pair's angle (a sine and a
// cosine in double) counts as this many bytes: the 32K angles of 1024 positions took 0.08 ms
// (uncached against cached rotation on GPT-2's queries, docs/layer.md), the time to stream 4 MB.
constexpr std::size_t kAngleBytes = 128;

std::size_t rotated_bytes(MatrixView<const float> x) {
  return 2 * x.size() * sizeof(float);
}

// Which rows a call rotates with which angles, and how they are cut into tasks.
//
// Contiguous positions need no array: a task is a block of positions [t0, t1) of a block of
// batch rows, visited batch row by batch row, each row's positions in order, so that the task
// walks through x in memory order (rows of one batch row are contiguous; visiting the batch rows
// at one position instead, whose rows are T * H * D floats apart, often a multiple of 4 KiB,
// makes every load wait on the store to the same offset of the previous batch row: 4K
// aliasing). With a cache, a task is one batch row (the angles are rows of the cache, in L1 or
// L2); without one, up to kMaxBatchPerTask batch rows, and the task computes the angles of its
// positions once for all of them, each batch row's positions a run as long as a one-row task's.
// Other sources: a task is a block of rows in order, each row at its own position.
struct RopePlan {
  bool contiguous = false;
  std::size_t start = 0;     // contiguous: position of t = 0
  Matrix<std::int64_t> pos;  // other sources: (B, T), -1 for pads
  std::size_t B = 0, T = 0;
  std::size_t t_per_task = 0, b_per_task = 0, t_tasks = 0;  // contiguous
  std::size_t rows_per_task = 0;                            // other sources
  std::size_t tasks = 0;
  // Tasks go in pairs, task j with task j + pairs() (run_plan).
  std::size_t pairs() const { return ceil_div(tasks, 2); }
};

// Validates x against (heads, batch, seq_len) and the rope, then the positions (resolved into an
// array unless contiguous), all before anything is written. `share` batch rows at most share a
// task (contiguous positions).
RopePlan prepare(const char* op, MatrixView<const float> x, std::size_t heads, std::size_t batch,
                 std::size_t seq_len, const PositionSource& positions, const Rope& rope,
                 std::size_t limit, const std::string& remedy, std::size_t share) {
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
    plan.b_per_task = std::min({batch, rows, share});
    // Every batch row of a task gets a run of `rows` positions, however many share it: with
    // shorter runs (GPT-2's queries in 24 KiB pieces, 4 batch rows x 8 positions) the uncached
    // rotation was slower, most clearly at two threads (0.49-0.55 ms against 0.60-0.65 ms in
    // alternating runs; docs/layer.md).
    plan.t_per_task = std::min(seq_len, rows);
    plan.t_tasks = ceil_div(seq_len, plan.t_per_task);
    plan.tasks = plan.t_tasks * ceil_div(batch, plan.b_per_task);
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

// Runs the plan's tasks over parallel_for, `work` deciding whether on several threads. The tasks
// go in pairs: pair j is task j and task j + pairs (when there is one), rotated together row by
// row, so that a thread reads x as two streams half the call apart. One core reads two such
// streams faster than one after the other: 1.14-1.2x for GPT-2's queries at one thread in a test
// program, while two streams a few rows apart were slower than one (docs/layer.md). Each row is
// rotated alone, so the order changes no bits. The pairs go in chunks of `grain`.
//
// The angles: angles.block(p0, p1, chunk, slot) gives the cosines and sines of positions
// [p0, p1) as (cos, sin, stride), position p0 + n at cos + n * stride; `chunk` (the index of the
// body's first chunk, different for every call running at once) and `slot` (0 or 1, the task of
// the pair) name a scratch area.
template <class Angles>
void run_plan(const RopePlan& plan, MatrixView<float> x, detail::RotateRowsFn rotate,
              const detail::RopeGeometry& g, Angles& angles, std::size_t grain, std::size_t work) {
  const std::size_t stride = x.row_stride();
  const std::size_t pairs = plan.pairs();
  parallel_for(pairs, grain, work, [&](std::size_t begin, std::size_t end) {
    const std::size_t chunk = begin / grain;
    for (std::size_t j = begin; j < end; ++j) {
      const std::size_t n = j + pairs < plan.tasks ? 2 : 1;
      const std::size_t task[2] = {j, j + pairs};
      detail::RopeRows now[2];
      if (plan.contiguous) {
        // A task: the positions [t0, t1) of the batch rows [b0, b1), batch row by batch row.
        std::size_t t0[2], b0[2], b1[2], cs_stride = 0, batch_rows = 0;
        for (std::size_t i = 0; i < n; ++i) {
          t0[i] = (task[i] % plan.t_tasks) * plan.t_per_task;
          const std::size_t t1 = std::min(plan.T, t0[i] + plan.t_per_task);
          b0[i] = (task[i] / plan.t_tasks) * plan.b_per_task;
          b1[i] = std::min(plan.B, b0[i] + plan.b_per_task);
          const auto [c, s, cstr] = angles.block(plan.start + t0[i], plan.start + t1, chunk, i);
          now[i] = {nullptr, c, s, t1 - t0[i]};
          cs_stride = cstr;  // the same for both tasks
          batch_rows = std::max(batch_rows, b1[i] - b0[i]);
        }
        for (std::size_t m = 0; m < batch_rows; ++m) {
          detail::RopeRows blocks[2];
          std::size_t k = 0;
          for (std::size_t i = 0; i < n; ++i) {
            if (b0[i] + m >= b1[i]) continue;
            blocks[k] = now[i];
            blocks[k++].x = x.row((b0[i] + m) * plan.T + t0[i]).data();
          }
          rotate(blocks, k, stride, cs_stride, g);
        }
      } else {
        // A task: the rows [r0, r1) in order, each at its own position (-1: a pad, left alone).
        const std::size_t rows = plan.B * plan.T;
        for (std::size_t m = 0; m < plan.rows_per_task; ++m) {
          std::size_t k = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const std::size_t r = task[i] * plan.rows_per_task + m;
            if (r >= rows || plan.pos.data()[r] < 0) continue;
            const auto up = static_cast<std::size_t>(plan.pos.data()[r]);
            const auto [c, s, cstr] = angles.block(up, up + 1, chunk, i);
            (void)cstr;  // one row
            now[k++] = {x.row(r).data(), c, s, 1};
          }
          if (k != 0) rotate(now, k, stride, 0, g);
        }
      }
    }
  });
}

// The angles of a RopeCache: its rows.
struct CachedAngles {
  MatrixView<const float> cos, sin;
  std::tuple<const float*, const float*, std::size_t> block(std::size_t p0, std::size_t,
                                                            std::size_t, std::size_t) const {
    return {cos.row(p0).data(), sin.row(p0).data(), cos.row_stride()};
  }
};

// The angles of a Rope, computed for each block of positions into a scratch slot of the call:
// two slots (one per task of a pair) of `per_task` positions of cos and sin (pairs each).
struct ComputedAngles {
  const Rope& rope;
  std::size_t pairs, per_task;
  std::vector<float> scratch;  // (chunks, 2, per_task, 2, pairs)
  static std::size_t floats(std::size_t chunks, std::size_t per_task, std::size_t pairs) {
    return chunks * 2 * per_task * 2 * pairs;
  }
  float* at(std::size_t chunk, std::size_t slot, std::size_t i) {
    return scratch.data() + ((chunk * 2 + slot) * per_task + i) * 2 * pairs;
  }
  std::tuple<const float*, const float*, std::size_t> block(std::size_t p0, std::size_t p1,
                                                            std::size_t chunk, std::size_t slot) {
    for (std::size_t p = p0; p < p1; ++p) {
      float* c = at(chunk, slot, p - p0);
      rope.angles(p, {c, pairs}, {c + pairs, pairs});  // sizes right: does not throw
    }
    const float* c = at(chunk, slot, 0);
    return {c, c + pairs, 2 * pairs};
  }
};

template <bool Inverse>
void rotate_cached(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const RopeCache& cache) {
  const RopePlan plan = prepare(op, x, heads, batch, seq_len, positions, cache.rope(),
                                cache.positions(), remedy_for_cache(cache.positions()), 1);
  const detail::RopeGeometry g = geometry(cache.rope(), heads);
  const detail::RotateRowsFn rotate = detail::rotate_rows(Inverse);  // may throw: before writing
  CachedAngles angles{cache.cos(), cache.sin()};
  // A streaming loop: x read and written, the cache's rows read.
  const std::size_t rows = plan.contiguous ? std::min(seq_len, cache.positions()) : x.rows();
  run_plan(plan, x, rotate, g, angles, 1,
           streaming_work(rotated_bytes(x) + 2 * rows * g.pairs * sizeof(float)));
}

template <bool Inverse>
void rotate_direct(const char* op, MatrixView<float> x, std::size_t heads, std::size_t batch,
                   std::size_t seq_len, const PositionSource& positions, const Rope& rope) {
  const RopePlan plan =
      prepare(op, x, heads, batch, seq_len, positions, rope, kMaxPosition,
              "The rotary embedding takes positions below 2^63 - 1", kMaxBatchPerTask);
  const detail::RopeGeometry g = geometry(rope, heads);
  // Both kernels chosen here, where an invalid POSEMB_SIMD can still throw (not in a task).
  const detail::RotateRowsFn rotate = detail::rotate_rows(Inverse);
  (void)detail::sin_cos_angles();
  // Scratch for the cos and sin of each chunk of task pairs (a call of the body uses the scratch
  // of its first chunk), allocated before any task runs: a task must not throw, and x is
  // untouched if the allocation fails. At most kMaxChunks chunks, so the scratch stays small
  // beside x.
  const std::size_t grain = std::max<std::size_t>(1, ceil_div(plan.pairs(), kMaxChunks));
  const std::size_t per_task = plan.contiguous ? plan.t_per_task : 1;
  ComputedAngles angles{rope, g.pairs, per_task, {}};
  angles.scratch.resize(ComputedAngles::floats(ceil_div(plan.pairs(), grain), per_task, g.pairs));
  // x read and written, and the angles computed (once per block of batch rows).
  const std::size_t angle_pairs =
      (plan.contiguous ? ceil_div(batch, plan.b_per_task) * seq_len : x.rows()) * g.pairs;
  run_plan(plan, x, rotate, g, angles, grain,
           streaming_work(rotated_bytes(x) + kAngleBytes * angle_pairs));
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
  if (head_dim > kMaxRopeHeadDim) {
    throw std::invalid_argument("Rope: head_dim D = " + std::to_string(head_dim) +
                                " is more than the " + std::to_string(kMaxRopeHeadDim) +
                                " columns a head may have (kMaxRopeHeadDim)");
  }
  if (rotary_dim_ % 2 != 0 || rotary_dim_ > head_dim) {
    throw std::invalid_argument("Rope: rotary_dim R = " + std::to_string(options.rotary_dim) +
                                " must be even and at most head_dim D = " +
                                std::to_string(head_dim) + " (0: all D columns)");
  }
  if (!detail::usable_base(options.base)) {
    throw std::invalid_argument("Rope: base = " + detail::number_text(options.base) +
                                " must be in [1e-300, 1e300] (finite and > 0, its inverse "
                                "frequencies base^-x normal doubles)");
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
  detail::check_no_overlap("Rope::angles", "cos", detail::as_row(cos), "sin", detail::as_row(sin));
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
