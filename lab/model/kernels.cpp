#include "lab/model/kernels.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/model/gemm.hpp"
#include "lab/model/kernels_simd.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {
namespace {

// Fixed work units: results never depend on how many threads share them.
constexpr std::size_t kRowChunk = 256;  // rows per sgemm call in the row-parallel products
constexpr std::size_t kTile = 32;       // dW tiles (kTile x kTile) in the weight gradients

std::size_t chunks(std::size_t n, std::size_t chunk) {
  return (n + chunk - 1) / chunk;
}

// parallel_for's work (elements) of a product of (m, k) and (k, n): a core does several
// multiply-adds in the time it streams one element, so m k n / 8.
std::size_t product_work(std::size_t m, std::size_t k, std::size_t n) {
  return m * k * n / 8;
}

// parallel_for's work of a streaming row kernel (a few operations per element) that reads and
// writes `floats` floats in all: counted in bytes (posemb::streaming_work).
std::size_t streaming_floats(std::size_t floats) {
  return streaming_work(floats * sizeof(float));
}

// Calls row_fn(r) for every row r of an (m, c) problem, rows in chunks of about 16K elements
// (parallel_for with `work`: on several threads when the problem is large enough; m * c for
// arithmetic per element, streaming_floats for loops the memory bus limits). Each row is
// computed the same way whichever thread runs it.
template <class F>
void for_rows(std::size_t m, std::size_t c, std::size_t work, F&& row_fn) {
  const std::size_t grain =
      std::max<std::size_t>(1, (std::size_t{1} << 14) / std::max<std::size_t>(c, 1));
  parallel_for(m, grain, work, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) row_fn(r);
  });
}

}  // namespace

namespace {

// Rows [r0, r0 + kRowChunk) of linear_forward: one gemm call.
void linear_forward_rows(MatrixView<float> y, MatrixView<const float> x, MatrixView<const float> w,
                         MatrixView<const float> b, std::size_t r0) {
  const std::size_t k = x.cols(), n = w.cols(), rows = std::min(kRowChunk, x.rows() - r0);
  float beta = 0.0f;
  if (!b.empty()) {
    for (std::size_t r = r0; r < r0 + rows; ++r) std::copy_n(b.data(), n, y.row(r).data());
    beta = 1.0f;
  }
  gemm(false, false, rows, n, k, 1.0f, x.data() + r0 * x.row_stride(), x.row_stride(), w.data(),
       w.row_stride(), beta, y.data() + r0 * y.row_stride(), y.row_stride());
}

// Rows [r0, r0 + kRowChunk) of dx (M, K) = dy (M, N) w^T (N, K): one gemm call.
void linear_backward_dx_rows(MatrixView<float> dx, MatrixView<const float> dy,
                             MatrixView<const float> w, bool accumulate, std::size_t r0) {
  const std::size_t k = dx.cols(), n = dy.cols(), rows = std::min(kRowChunk, dy.rows() - r0);
  gemm(false, true, rows, k, n, 1.0f, dy.data() + r0 * dy.row_stride(), dy.row_stride(), w.data(),
       w.row_stride(), accumulate ? 1.0f : 0.0f, dx.data() + r0 * dx.row_stride(), dx.row_stride());
}

// Tile (i0, j0) of dw (K, N) += x^T (K, M) dy (M, N): one gemm call summing all M rows.
void linear_backward_dw_tile(MatrixView<float> dw, MatrixView<const float> dy,
                             MatrixView<const float> x, std::size_t i0, std::size_t j0) {
  const std::size_t ki = std::min(kTile, dw.rows() - i0), nj = std::min(kTile, dw.cols() - j0);
  gemm(true, false, ki, nj, x.rows(), 1.0f, x.data() + i0, x.row_stride(), dy.data() + j0,
       dy.row_stride(), 1.0f, dw.data() + i0 * dw.row_stride() + j0, dw.row_stride());
}

// Columns [j0, j0 + kTile) of db (1, N) += the column sums of dy, rows in order.
void linear_backward_db_columns(MatrixView<float> db, MatrixView<const float> dy, std::size_t j0) {
  const std::size_t j1 = std::min(dy.cols(), j0 + kTile);
  float acc[kTile] = {};
  for (std::size_t r = 0; r < dy.rows(); ++r) {
    const float* row = dy.data() + r * dy.row_stride();
    for (std::size_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
  }
  for (std::size_t j = j0; j < j1; ++j) db(0, j) += acc[j - j0];
}

}  // namespace

void linear_forward(MatrixView<float> y, MatrixView<const float> x, MatrixView<const float> w,
                    MatrixView<const float> b) {
  const std::size_t m = x.rows(), k = x.cols(), n = w.cols();
  assert(w.rows() == k && y.rows() == m && y.cols() == n);
  assert(b.empty() || b.cols() == n);
  parallel_for(chunks(m, kRowChunk), 1, product_work(m, k, n), [&](std::size_t c0, std::size_t c1) {
    for (std::size_t ci = c0; ci < c1; ++ci) linear_forward_rows(y, x, w, b, ci * kRowChunk);
  });
}

void linear_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                     MatrixView<const float> dy, MatrixView<const float> x,
                     MatrixView<const float> w, bool accumulate_dx) {
  const std::size_t m = x.rows(), k = x.cols(), n = w.cols();
  assert(dy.rows() == m && dy.cols() == n && dw.rows() == k && dw.cols() == n);
  const std::size_t work = product_work(m, k, n);
  if (!dx.empty()) {
    parallel_for(chunks(m, kRowChunk), 1, work, [&](std::size_t c0, std::size_t c1) {
      for (std::size_t ci = c0; ci < c1; ++ci) {
        linear_backward_dx_rows(dx, dy, w, accumulate_dx, ci * kRowChunk);
      }
    });
  }
  // dw in fixed kTile x kTile tiles, then db in column ranges: one task each.
  const std::size_t tj = chunks(n, kTile), ntiles = chunks(k, kTile) * tj;
  const std::size_t nbias = db.empty() ? 0 : tj;
  parallel_for(ntiles + nbias, 1, work, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t task = t0; task < t1; ++task) {
      if (task < ntiles) {
        linear_backward_dw_tile(dw, dy, x, task / tj * kTile, task % tj * kTile);
      } else {
        linear_backward_db_columns(db, dy, (task - ntiles) * kTile);
      }
    }
  });
}

void layernorm_forward(MatrixView<float> y, std::span<float> mean, std::span<float> rstd,
                       MatrixView<const float> x, MatrixView<const float> w,
                       MatrixView<const float> b) {
  const std::size_t c = x.cols();
  const auto row = simd::layernorm_forward_row();
  // x read, y written (streaming).
  for_rows(x.rows(), c, streaming_floats(2 * x.rows() * c), [&](std::size_t r) {
    row(y.row(r).data(), &mean[r], &rstd[r], x.row(r).data(), w.data(), b.data(), c);
  });
}

void layernorm_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                        MatrixView<const float> dy, MatrixView<const float> x,
                        std::span<const float> mean, std::span<const float> rstd,
                        MatrixView<const float> w) {
  const std::size_t m = x.rows(), c = x.cols();
  // dx, row by row: dx += rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)).
  const auto row = simd::layernorm_backward_row();
  // dy and x read, dx written (streaming).
  for_rows(m, c, streaming_floats(3 * m * c), [&](std::size_t r) {
    row(dx.row(r).data(), dy.row(r).data(), x.row(r).data(), mean[r], rstd[r], w.data(), c);
  });
  // dw, db: column sums over the rows in row order, one column range per task (dy and x read:
  // streaming).
  const auto columns = simd::layernorm_param_columns();
  const std::size_t sums = streaming_floats(2 * m * c);
  parallel_for(chunks(c, kTile), 1, sums, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t ti = t0; ti < t1; ++ti) {
      const std::size_t j0 = ti * kTile, j1 = std::min(c, j0 + kTile);
      float aw[kTile] = {}, ab[kTile] = {};
      columns(aw, ab, dy.data() + j0, dy.row_stride(), x.data() + j0, x.row_stride(), mean.data(),
              rstd.data(), m, j1 - j0);
      for (std::size_t j = j0; j < j1; ++j) {
        dw(0, j) += aw[j - j0];
        db(0, j) += ab[j - j0];
      }
    }
  });
}

void gelu_forward(MatrixView<float> y, MatrixView<float> th, MatrixView<const float> x) {
  const std::size_t c = x.cols();
  const bool keep = !th.empty();
  const auto row = simd::gelu_forward_row();
  for_rows(x.rows(), c, x.rows() * c, [&](std::size_t r) {
    row(y.row(r).data(), keep ? th.row(r).data() : nullptr, x.row(r).data(), c);
  });
}

void gelu_backward(MatrixView<float> dx, MatrixView<const float> dy, MatrixView<const float> x,
                   MatrixView<const float> th) {
  const std::size_t c = x.cols();
  const auto row = simd::gelu_backward_row();
  for_rows(x.rows(), c, x.rows() * c, [&](std::size_t r) {
    row(dx.row(r).data(), dy.row(r).data(), x.row(r).data(), th.row(r).data(), c);
  });
}

void add_into(MatrixView<float> x, MatrixView<const float> y) {
  const std::size_t c = x.cols();
  const auto row = simd::add_row();
  // x and y read, x written (streaming).
  for_rows(x.rows(), c, streaming_floats(3 * x.rows() * c),
           [&](std::size_t r) { row(x.row(r).data(), y.row(r).data(), c); });
}

double softmax_cross_entropy(MatrixView<float> dlogits, std::span<float> losses,
                             MatrixView<const float> logits, std::span<const std::int32_t> targets,
                             std::size_t normalizer) {
  const std::size_t m = logits.rows(), v = logits.cols();
  std::size_t count = normalizer;
  if (count == 0) {
    for (std::size_t r = 0; r < m; ++r) count += targets[r] >= 0 ? 1 : 0;
  }
  const float inv = count == 0 ? 0.0f : 1.0f / static_cast<float>(count);
  const auto row = simd::softmax_row();
  for_rows(m, v, m * v, [&](std::size_t r) {
    float* d = dlogits.row(r).data();
    if (targets[r] < 0) {
      std::fill_n(d, v, 0.0f);
      losses[r] = 0.0f;
      return;
    }
    const float* l = logits.row(r).data();
    const auto tgt = static_cast<std::size_t>(targets[r]);
    const simd::SoftmaxSums sums = row(d, l, v, tgt, inv);
    losses[r] = std::log(sums.sum) + sums.max - l[tgt];
  });
  double total = 0.0;
  for (std::size_t r = 0; r < m; ++r) total += losses[r];
  return count == 0 ? 0.0 : total / static_cast<double>(count);
}

bool all_finite(std::span<const float> x) {
  // Infinity and NaN have every exponent bit set. An OR of integers (a float sum could not be
  // reordered, so it would not vectorize).
  std::uint32_t non_finite = 0;
  for (const float v : x) {
    non_finite |= (std::bit_cast<std::uint32_t>(v) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  return non_finite == 0;
}

std::size_t argmax(std::span<const float> row) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

}  // namespace posemb::lab
