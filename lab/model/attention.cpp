#include "lab/model/attention.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/model/kernels_simd.hpp"
#include "posemb/alibi.hpp"
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

// The ALiBi bias of each head for a query at position `last` against keys 0..last (the library's
// posemb::alibi_forward, causal, start = last): row h holds -(m_h (last - j)) at column j, then
// `pad` zeros. A query t < last reads its bias for key s at column last - t + s. Empty slopes:
// an empty matrix.
Matrix<float> alibi_rows(std::span<const float> slopes, std::size_t last, std::size_t pad) {
  if (slopes.empty()) return {};
  Matrix<float> rows(slopes.size(), last + 1 + pad);
  alibi_forward(rows.view().subcols(0, last + 1), slopes, 1, 1, {.start = last});
  return rows;
}

void check_slopes(std::span<const float> slopes, std::size_t heads, const char* op) {
  if (!slopes.empty() && slopes.size() != heads) {
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(slopes.size()) +
                                " ALiBi slopes for " + std::to_string(heads) + " heads");
  }
}

}  // namespace

void attention_forward(MatrixView<float> y, std::span<float> probs, MatrixView<const float> qkv,
                       std::size_t batch, std::size_t seq_len, std::size_t heads,
                       std::span<const float> slopes) {
  const std::size_t c = y.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(probs.size() >= batch * heads * T * T);
  check_slopes(slopes, heads, "attention_forward");
  const auto attend_head = simd::attend_head();
  HeadScratch scratch(hd, T);
  // The head kernel reads whole vectors past a row's last key: ScratchColumns(T) of padding.
  const Matrix<float> bias = alibi_rows(slopes, T == 0 ? 0 : T - 1, simd::ScratchColumns(T));
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

void attention_backward(MatrixView<float> dqkv, MatrixView<const float> dy,
                        std::span<const float> probs, MatrixView<const float> qkv,
                        std::size_t batch, std::size_t seq_len, std::size_t heads) {
  const std::size_t c = dy.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const auto head = simd::attention_backward_head();
  HeadScratch transposes(hd, T);
  const std::size_t tasks = batch * heads;
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
    head(job);
  };
  parallel_for_slots(tasks, 1, 2 * attention_work(tasks, T, hd), transposes.slots,
                     [&](std::size_t t0, std::size_t t1, std::size_t slot) {
                       for (std::size_t task = t0; task < t1; ++task) {
                         one_head(task, transposes.slot(slot));
                       }
                     });
}

void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads,
                    std::span<const float> slopes) {
  const std::size_t c = y.cols(), hd = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(scratch.size() >= batch * heads * (t + 1));
  check_slopes(slopes, heads, "attention_step");
  const Matrix<float> bias = alibi_rows(slopes, t, 0);
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
