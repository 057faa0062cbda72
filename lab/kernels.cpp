#include "lab/kernels.hpp"

#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/gemm.hpp"
#include "lab/kernels_simd.hpp"

namespace posemb::lab {
namespace {

// Fixed work units: results never depend on how many threads share them.
constexpr std::size_t kRowChunk = 256;  // rows per gemm call in the row-parallel products
constexpr std::size_t kTile = 32;       // dW tiles (kTile x kTile) in the weight gradients

std::size_t chunks(std::size_t n, std::size_t chunk) {
  return (n + chunk - 1) / chunk;
}

}  // namespace

void linear_forward(MatrixView<float> y, MatrixView<const float> x, MatrixView<const float> w,
                    MatrixView<const float> b) {
  const std::size_t m = x.rows(), k = x.cols(), n = w.cols();
  assert(w.rows() == k && y.rows() == m && y.cols() == n);
  assert(b.empty() || b.cols() == n);
  const auto nc = static_cast<std::int64_t>(chunks(m, kRowChunk));
#pragma omp parallel for schedule(static)
  for (std::int64_t ci = 0; ci < nc; ++ci) {
    const std::size_t r0 = static_cast<std::size_t>(ci) * kRowChunk;
    const std::size_t rows = std::min(kRowChunk, m - r0);
    float beta = 0.0f;
    if (!b.empty()) {
      for (std::size_t r = r0; r < r0 + rows; ++r) std::copy_n(b.data(), n, y.row(r).data());
      beta = 1.0f;
    }
    gemm(false, false, rows, n, k, 1.0f, x.data() + r0 * x.row_stride(), x.row_stride(), w.data(),
         w.row_stride(), beta, y.data() + r0 * y.row_stride(), y.row_stride());
  }
}

void linear_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                     MatrixView<const float> dy, MatrixView<const float> x,
                     MatrixView<const float> w, bool accumulate_dx) {
  const std::size_t m = x.rows(), k = x.cols(), n = w.cols();
  assert(dy.rows() == m && dy.cols() == n && dw.rows() == k && dw.cols() == n);
  if (!dx.empty()) {
    // dx (M, K) = dy (M, N) w^T (N, K), row chunks.
    const auto nc = static_cast<std::int64_t>(chunks(m, kRowChunk));
#pragma omp parallel for schedule(static)
    for (std::int64_t ci = 0; ci < nc; ++ci) {
      const std::size_t r0 = static_cast<std::size_t>(ci) * kRowChunk;
      const std::size_t rows = std::min(kRowChunk, m - r0);
      gemm(false, true, rows, k, n, 1.0f, dy.data() + r0 * dy.row_stride(), dy.row_stride(),
           w.data(), w.row_stride(), accumulate_dx ? 1.0f : 0.0f, dx.data() + r0 * dx.row_stride(),
           dx.row_stride());
    }
  }
  // dw (K, N) += x^T (K, M) dy (M, N), in fixed kTile x kTile tiles, each summing all M rows in
  // one call; db (1, N) += column sums of dy, one column range per task, rows in order.
  const std::size_t ti = chunks(k, kTile), tj = chunks(n, kTile);
  const auto ntiles = static_cast<std::int64_t>(ti * tj);
  const auto nbias = db.empty() ? std::int64_t{0} : static_cast<std::int64_t>(tj);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < ntiles + nbias; ++task) {
    if (task < ntiles) {
      const std::size_t i0 = static_cast<std::size_t>(task) / tj * kTile;
      const std::size_t j0 = static_cast<std::size_t>(task) % tj * kTile;
      const std::size_t ki = std::min(kTile, k - i0), nj = std::min(kTile, n - j0);
      gemm(true, false, ki, nj, m, 1.0f, x.data() + i0, x.row_stride(), dy.data() + j0,
           dy.row_stride(), 1.0f, dw.data() + i0 * dw.row_stride() + j0, dw.row_stride());
    } else {
      const std::size_t j0 = static_cast<std::size_t>(task - ntiles) * kTile;
      const std::size_t j1 = std::min(n, j0 + kTile);
      float acc[kTile] = {};
      for (std::size_t r = 0; r < m; ++r) {
        const float* row = dy.data() + r * dy.row_stride();
        for (std::size_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
      }
      for (std::size_t j = j0; j < j1; ++j) db(0, j) += acc[j - j0];
    }
  }
}

void layernorm_forward(MatrixView<float> y, std::span<float> mean, std::span<float> rstd,
                       MatrixView<const float> x, MatrixView<const float> w,
                       MatrixView<const float> b) {
  const std::size_t m = x.rows(), c = x.cols();
  const auto mi = static_cast<std::int64_t>(m);
  const auto row = simd::layernorm_forward_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    row(y.row(r).data(), &mean[r], &rstd[r], x.row(r).data(), w.data(), b.data(), c);
  }
}

void layernorm_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                        MatrixView<const float> dy, MatrixView<const float> x,
                        std::span<const float> mean, std::span<const float> rstd,
                        MatrixView<const float> w) {
  const std::size_t m = x.rows(), c = x.cols();
  const auto mi = static_cast<std::int64_t>(m);
  // dx, row by row: dx += rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)).
  const auto row = simd::layernorm_backward_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    row(dx.row(r).data(), dy.row(r).data(), x.row(r).data(), mean[r], rstd[r], w.data(), c);
  }
  // dw, db: column sums over the rows in row order, one column range per task.
  const auto columns = simd::layernorm_param_columns();
  const auto nt = static_cast<std::int64_t>(chunks(c, kTile));
#pragma omp parallel for schedule(static)
  for (std::int64_t ti = 0; ti < nt; ++ti) {
    const std::size_t j0 = static_cast<std::size_t>(ti) * kTile, j1 = std::min(c, j0 + kTile);
    float aw[kTile] = {}, ab[kTile] = {};
    columns(aw, ab, dy.data() + j0, dy.row_stride(), x.data() + j0, x.row_stride(), mean.data(),
            rstd.data(), m, j1 - j0);
    for (std::size_t j = j0; j < j1; ++j) {
      dw(0, j) += aw[j - j0];
      db(0, j) += ab[j - j0];
    }
  }
}

void gelu_forward(MatrixView<float> y, MatrixView<float> th, MatrixView<const float> x) {
  const auto mi = static_cast<std::int64_t>(x.rows());
  const std::size_t c = x.cols();
  const bool keep = !th.empty();
  const auto row = simd::gelu_forward_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    row(y.row(r).data(), keep ? th.row(r).data() : nullptr, x.row(r).data(), c);
  }
}

void gelu_backward(MatrixView<float> dx, MatrixView<const float> dy, MatrixView<const float> x,
                   MatrixView<const float> th) {
  const auto mi = static_cast<std::int64_t>(x.rows());
  const std::size_t c = x.cols();
  const auto row = simd::gelu_backward_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    row(dx.row(r).data(), dy.row(r).data(), x.row(r).data(), th.row(r).data(), c);
  }
}

void add_into(MatrixView<float> x, MatrixView<const float> y) {
  const auto mi = static_cast<std::int64_t>(x.rows());
  const std::size_t c = x.cols();
  const auto row = simd::add_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    row(x.row(r).data(), y.row(r).data(), c);
  }
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
  const auto mi = static_cast<std::int64_t>(m);
  const auto row = simd::softmax_row();
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < mi; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    float* d = dlogits.row(r).data();
    if (targets[r] < 0) {
      std::fill_n(d, v, 0.0f);
      losses[r] = 0.0f;
      continue;
    }
    const float* l = logits.row(r).data();
    const auto tgt = static_cast<std::size_t>(targets[r]);
    const simd::SoftmaxSums sums = row(d, l, v, tgt, inv);
    losses[r] = std::log(sums.sum) + sums.max - l[tgt];
  }
  double total = 0.0;
  for (std::size_t r = 0; r < m; ++r) total += losses[r];
  return count == 0 ? 0.0 : total / static_cast<double>(count);
}

std::size_t argmax(std::span<const float> row) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

}  // namespace posemb::lab
