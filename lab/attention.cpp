#include "lab/attention.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace posemb::lab {

namespace {

// One query row of causal attention for one head: p[s] = softmax_s(q . k_s * scale) for
// s = 0..t, then out = sum_s p[s] v_s (written over). Row s of the sequence starts at
// seq + s * stride, with the head's key at +c and its value at +2c.
void attend_row(float* out, float* p, const float* q, const float* seq, std::size_t stride,
                std::size_t c, std::size_t hd, std::size_t t, float scale) {
  float mx = -INFINITY;
  for (std::size_t s = 0; s <= t; ++s) {
    const float* k = seq + s * stride + c;
    float d = 0.0f;
    for (std::size_t i = 0; i < hd; ++i) d += q[i] * k[i];
    p[s] = d * scale;
    mx = std::max(mx, p[s]);
  }
  float sum = 0.0f;
  for (std::size_t s = 0; s <= t; ++s) {
    p[s] = std::exp(p[s] - mx);
    sum += p[s];
  }
  const float inv = 1.0f / sum;
  for (std::size_t s = 0; s <= t; ++s) p[s] *= inv;
  std::fill_n(out, hd, 0.0f);
  for (std::size_t s = 0; s <= t; ++s) {
    const float* v = seq + s * stride + 2 * c;
    for (std::size_t i = 0; i < hd; ++i) out[i] += p[s] * v[i];
  }
}

}  // namespace

void attention_forward(MatrixView<float> y, std::span<float> probs, MatrixView<const float> qkv,
                       std::size_t batch, std::size_t seq_len, std::size_t heads) {
  const std::size_t c = y.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(probs.size() >= batch * heads * T * T);
  const auto tasks = static_cast<std::int64_t>(batch * heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::size_t b = static_cast<std::size_t>(task) / heads;
    const std::size_t h = static_cast<std::size_t>(task) % heads;
    float* P = probs.data() + static_cast<std::size_t>(task) * T * T;
    const float* seq = qkv.data() + b * T * qkv.row_stride() + h * hd;
    for (std::size_t t = 0; t < T; ++t) {
      float* p = P + t * T;
      attend_row(y.data() + (b * T + t) * y.row_stride() + h * hd, p, seq + t * qkv.row_stride(),
                 seq, qkv.row_stride(), c, hd, t, scale);
      std::fill(p + t + 1, p + T, 0.0f);
    }
  }
}

void attention_backward(MatrixView<float> dqkv, std::span<float> scratch,
                        MatrixView<const float> dy, std::span<const float> probs,
                        MatrixView<const float> qkv, std::size_t batch, std::size_t seq_len,
                        std::size_t heads) {
  const std::size_t c = dy.cols(), hd = c / heads, T = seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(scratch.size() >= batch * heads * T);
  const auto tasks = static_cast<std::int64_t>(batch * heads);
#pragma omp parallel for schedule(static)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::size_t b = static_cast<std::size_t>(task) / heads;
    const std::size_t h = static_cast<std::size_t>(task) % heads;
    const float* P = probs.data() + static_cast<std::size_t>(task) * T * T;
    float* dp = scratch.data() + static_cast<std::size_t>(task) * T;
    auto at = [&](std::size_t t, std::size_t part) {
      return qkv.data() + (b * T + t) * qkv.row_stride() + part * c + h * hd;
    };
    auto dat = [&](std::size_t t, std::size_t part) {
      return dqkv.data() + (b * T + t) * dqkv.row_stride() + part * c + h * hd;
    };
    for (std::size_t t = 0; t < T; ++t) {
      std::fill_n(dat(t, 0), hd, 0.0f);
      std::fill_n(dat(t, 1), hd, 0.0f);
      std::fill_n(dat(t, 2), hd, 0.0f);
    }
    for (std::size_t t = 0; t < T; ++t) {
      const float* p = P + t * T;
      const float* g = dy.data() + (b * T + t) * dy.row_stride() + h * hd;
      float dot = 0.0f;
      for (std::size_t s = 0; s <= t; ++s) {
        const float* v = at(s, 2);
        float d = 0.0f;
        for (std::size_t i = 0; i < hd; ++i) d += g[i] * v[i];
        dp[s] = d;
        dot += p[s] * d;
        float* dv = dat(s, 2);
        for (std::size_t i = 0; i < hd; ++i) dv[i] += p[s] * g[i];
      }
      const float* q = at(t, 0);
      float* dq = dat(t, 0);
      for (std::size_t s = 0; s <= t; ++s) {
        const float ds = p[s] * (dp[s] - dot) * scale;
        const float* k = at(s, 1);
        float* dk = dat(s, 1);
        for (std::size_t i = 0; i < hd; ++i) {
          dq[i] += ds * k[i];
          dk[i] += ds * q[i];
        }
      }
    }
  }
}

void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads) {
  const std::size_t c = y.cols(), hd = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  assert(scratch.size() >= batch * heads * (t + 1));
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
