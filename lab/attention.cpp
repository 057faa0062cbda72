#include "lab/attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "lab/kernels_simd.hpp"

namespace posemb::lab {

namespace {

// Scratch for the head kernels' transposes, one slice per thread of the coming parallel loop
// (allocated before it: an exception cannot leave an OpenMP region).
struct HeadScratch {
  std::size_t per_thread;
  std::vector<float> buf;
  HeadScratch(std::size_t hd, std::size_t T)
      : per_thread(simd::HeadScratchFloats(hd, T)),
        buf(per_thread * static_cast<std::size_t>(std::max(1, omp_get_max_threads()))) {}
  float* mine() { return buf.data() + per_thread * static_cast<std::size_t>(omp_get_thread_num()); }
};

}  // namespace

void attention_forward(MatrixView<float> y, std::span<float> probs, MatrixView<const float> qkv,
                       std::size_t batch, std::size_t seq_len, std::size_t heads) {
  const std::size_t c = y.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(probs.size() >= batch * heads * T * T);
  const auto attend_head = simd::attend_head();
  HeadScratch scratch(hd, T);
  const auto tasks = static_cast<std::int64_t>(batch * heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::size_t b = static_cast<std::size_t>(task) / heads;
    const std::size_t h = static_cast<std::size_t>(task) % heads;
    simd::AttendHeadJob job{};
    job.y = y.data() + b * T * y.row_stride() + h * hd;
    job.y_stride = y.row_stride();
    job.probs = probs.data() + static_cast<std::size_t>(task) * T * T;
    job.qkv = qkv.data() + b * T * qkv.row_stride() + h * hd;
    job.qkv_stride = qkv.row_stride();
    job.kt = scratch.mine();
    job.seq_len = T;
    job.c = c;
    job.hd = hd;
    job.scale = scale;
    attend_head(job);
  }
}

void attention_backward(MatrixView<float> dqkv, MatrixView<const float> dy,
                        std::span<const float> probs, MatrixView<const float> qkv,
                        std::size_t batch, std::size_t seq_len, std::size_t heads) {
  const std::size_t c = dy.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const auto head = simd::attention_backward_head();
  HeadScratch transposes(hd, T);
  const auto tasks = static_cast<std::int64_t>(batch * heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::size_t b = static_cast<std::size_t>(task) / heads;
    const std::size_t h = static_cast<std::size_t>(task) % heads;
    // The head's columns of sequence b: q at +0, k at +c, v at +2c.
    simd::AttentionHeadJob job{};
    job.dqkv = dqkv.data() + b * T * dqkv.row_stride() + h * hd;
    job.dqkv_stride = dqkv.row_stride();
    job.dy = dy.data() + b * T * dy.row_stride() + h * hd;
    job.dy_stride = dy.row_stride();
    job.qkv = qkv.data() + b * T * qkv.row_stride() + h * hd;
    job.qkv_stride = qkv.row_stride();
    job.probs = probs.data() + static_cast<std::size_t>(task) * T * T;
    job.vt = transposes.mine();
    job.seq_len = T;
    job.c = c;
    job.hd = hd;
    job.scale = scale;
    head(job);
  }
}

void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads) {
  const std::size_t c = y.cols(), hd = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(scratch.size() >= batch * heads * (t + 1));
  const auto attend_row = simd::attend_row();
  const auto tasks = static_cast<std::int64_t>(batch * heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::size_t b = static_cast<std::size_t>(task) / heads;
    const std::size_t h = static_cast<std::size_t>(task) % heads;
    float* p = scratch.data() + static_cast<std::size_t>(task) * (t + 1);
    const float* seq = qkv.data() + b * cap * qkv.row_stride() + h * hd;
    attend_row(y.data() + b * y.row_stride() + h * hd, p, seq + t * qkv.row_stride(), seq,
               qkv.row_stride(), c, hd, t, scale);
  }
}

}  // namespace posemb::lab
