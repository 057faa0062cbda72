#include "lab/model/attention.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/model/kernels_simd.hpp"
#include "posemb/matrix.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {

namespace {

// Scratch for the head kernels' transposes, one slice per slot of the coming parallel loop
// (allocated before it: nothing may throw inside).
struct HeadScratch {
  std::size_t slots, per_slot;
  std::vector<float> buf;
  HeadScratch(std::size_t hd, std::size_t T)
      : slots(parallel_threads()),
        per_slot(simd::HeadScratchFloats(hd, T)),
        buf(per_slot * slots) {}
  float* slot(std::size_t s) { return buf.data() + per_slot * s; }
};

// parallel_for's work (elements) of the attention of `tasks` heads over T tokens of hd
// columns: the T * T / 2 score rows of hd multiply-adds, twice (scores, then the weighted sum).
std::size_t attention_work(std::size_t tasks, std::size_t T, std::size_t hd) {
  return tasks * T * T * hd / 8;
}

// The head kernels' layout of a bias by distance for a query at position `last` against keys
// 0..last: row h holds bias(h, last - j) at column j, then `pad` zeros; a query t < last reads
// its bias for key s at column last - t + s. An empty bias: an empty matrix.
Matrix<float> kernel_bias(MatrixView<const float> bias, std::size_t last, std::size_t pad) {
  if (bias.rows() == 0) return {};
  Matrix<float> rows(bias.rows(), last + 1 + pad);
  for (std::size_t h = 0; h < bias.rows(); ++h) {
    float* row = rows.row(h).data();
    for (std::size_t j = 0; j <= last; ++j) row[j] = bias(h, last - j);
    std::fill(row + last + 1, row + last + 1 + pad, 0.0f);
  }
  return rows;
}

// A bias (or its gradient) of H rows covering `distances` distances, or empty.
template <class T>
void check_bias(MatrixView<T> bias, std::size_t heads, std::size_t distances, const char* op) {
  if (bias.rows() == 0 && bias.cols() == 0) return;
  if (bias.rows() != heads || bias.cols() < distances) {
    throw std::invalid_argument(std::string(op) + ": a bias of " + std::to_string(bias.rows()) +
                                " x " + std::to_string(bias.cols()) + " for " +
                                std::to_string(heads) + " heads and " + std::to_string(distances) +
                                " distances (it needs H rows of at least that many)");
  }
}

}  // namespace

void attention_forward(MatrixView<float> y, std::span<float> probs, MatrixView<const float> qkv,
                       std::size_t batch, std::size_t seq_len, std::size_t heads,
                       MatrixView<const float> by_distance) {
  const std::size_t c = y.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(probs.size() >= batch * heads * T * T);
  check_bias(by_distance, heads, T, "attention_forward");
  const auto attend_head = simd::attend_head();
  HeadScratch scratch(hd, T);
  // The head kernel reads whole vectors past a row's last key: ScratchColumns(T) of padding.
  const Matrix<float> bias = kernel_bias(by_distance, T == 0 ? 0 : T - 1, simd::ScratchColumns(T));
  const std::size_t tasks = batch * heads;
  // Head h of sequence b (task b * heads + h), k transposed into kt.
  const auto one_head = [&](std::size_t task, float* kt) {
    const std::size_t b = task / heads;
    const std::size_t h = task % heads;
    simd::AttendHeadJob job{};
    job.y = y.data() + b * T * y.row_stride() + h * hd;
    job.y_stride = y.row_stride();
    job.probs = probs.data() + task * T * T;
    job.qkv = qkv.data() + b * T * qkv.row_stride() + h * hd;
    job.qkv_stride = qkv.row_stride();
    job.kt = kt;
    job.seq_len = T;
    job.c = c;
    job.hd = hd;
    job.scale = scale;
    job.bias = bias.rows() == 0 ? nullptr : bias.row(h).data();
    attend_head(job);
  };
  parallel_for_slots(tasks, 1, attention_work(tasks, T, hd), scratch.slots,
                     [&](std::size_t t0, std::size_t t1, std::size_t slot) {
                       for (std::size_t task = t0; task < t1; ++task) {
                         one_head(task, scratch.slot(slot));
                       }
                     });
}

void attention_backward(MatrixView<float> dqkv, MatrixView<float> dbias, MatrixView<const float> dy,
                        std::span<const float> probs, MatrixView<const float> qkv,
                        std::size_t batch, std::size_t seq_len, std::size_t heads) {
  const std::size_t c = dy.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  check_bias(dbias, heads, T, "attention_backward");
  const auto head = simd::attention_backward_head();
  HeadScratch transposes(hd, T);
  const std::size_t tasks = batch * heads;
  // Each head of each sequence sums its bias gradient into its own row (nothing shared between
  // the parallel tasks); the rows are added into dbias after, sequences in order.
  const bool with_bias = dbias.rows() != 0;
  std::vector<float> per_task(with_bias ? tasks * T : 0, 0.0f);
  // Head h of sequence b (task b * heads + h), its transposes in vt.
  const auto one_head = [&](std::size_t task, float* vt) {
    const std::size_t b = task / heads;
    const std::size_t h = task % heads;
    // The head's columns of sequence b: q at +0, k at +c, v at +2c.
    simd::AttentionHeadJob job{};
    job.dqkv = dqkv.data() + b * T * dqkv.row_stride() + h * hd;
    job.dqkv_stride = dqkv.row_stride();
    job.dy = dy.data() + b * T * dy.row_stride() + h * hd;
    job.dy_stride = dy.row_stride();
    job.qkv = qkv.data() + b * T * qkv.row_stride() + h * hd;
    job.qkv_stride = qkv.row_stride();
    job.probs = probs.data() + task * T * T;
    job.vt = vt;
    job.seq_len = T;
    job.c = c;
    job.hd = hd;
    job.scale = scale;
    job.dbias = with_bias ? per_task.data() + task * T : nullptr;
    head(job);
  };
  parallel_for_slots(tasks, 1, 2 * attention_work(tasks, T, hd), transposes.slots,
                     [&](std::size_t t0, std::size_t t1, std::size_t slot) {
                       for (std::size_t task = t0; task < t1; ++task) {
                         one_head(task, transposes.slot(slot));
                       }
                     });
  if (!with_bias) return;
  for (std::size_t h = 0; h < heads; ++h) {
    float* out = dbias.row(h).data();
    for (std::size_t b = 0; b < batch; ++b) {
      const float* mine = per_task.data() + (b * heads + h) * T;
      for (std::size_t d = 0; d < T; ++d) out[d] += mine[d];
    }
  }
}

void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads,
                    MatrixView<const float> by_distance) {
  const std::size_t c = y.cols(), hd = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(scratch.size() >= batch * heads * (t + 1));
  check_bias(by_distance, heads, t + 1, "attention_step");
  const Matrix<float> bias = kernel_bias(by_distance, t, 0);
  const auto attend_row = simd::attend_row();
  const std::size_t tasks = batch * heads;
  parallel_for(tasks, 1, tasks * (t + 1) * hd / 4, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t task = t0; task < t1; ++task) {
      const std::size_t b = task / heads;
      const std::size_t h = task % heads;
      float* p = scratch.data() + task * (t + 1);
      const float* seq = qkv.data() + b * cap * qkv.row_stride() + h * hd;
      attend_row(y.data() + b * y.row_stride() + h * hd, p, seq + t * qkv.row_stride(), seq,
                 qkv.row_stride(), c, hd, t, scale,
                 bias.rows() == 0 ? nullptr : bias.row(h).data());
    }
  });
}

}  // namespace posemb::lab
