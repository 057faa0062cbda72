// tests/lab/lab_reference.hpp: plain scalar references of the lab model's kernels
// (lab/model/kernels.hpp, lab/model/attention.hpp), in double, one obvious loop each. Each returns
// the exact-ish value and the magnitude of the terms that were summed for it (sum of |term|), from
// which the tests derive float32 tolerances: a sum of k float terms is within about k * eps *
// sum|term| of exact.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <vector>

namespace posemb::lab::reference {

// A row-major (rows, cols) array of doubles.
struct Grid {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;
  Grid() = default;
  Grid(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  double& operator()(std::size_t r, std::size_t c) { return v[r * cols + c]; }
  double operator()(std::size_t r, std::size_t c) const { return v[r * cols + c]; }
};

// y = x w + b (b may be empty: cols 0). mag = sum |x_k w_kj| + |b_j|.
inline void linear(Grid& y, Grid& mag, const Grid& x, const Grid& w, const Grid& b) {
  y = Grid(x.rows, w.cols);
  mag = Grid(x.rows, w.cols);
  for (std::size_t i = 0; i < x.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      double s = b.cols ? b(0, j) : 0.0, m = b.cols ? std::fabs(b(0, j)) : 0.0;
      for (std::size_t k = 0; k < x.cols; ++k) {
        s += x(i, k) * w(k, j);
        m += std::fabs(x(i, k) * w(k, j));
      }
      y(i, j) = s;
      mag(i, j) = m;
    }
  }
}

// LayerNorm with eps 1e-5: y, mean, rstd (PyTorch's biased variance).
inline void layernorm(Grid& y, std::vector<double>& mean, std::vector<double>& rstd, const Grid& x,
                      const Grid& w, const Grid& b) {
  y = Grid(x.rows, x.cols);
  mean.assign(x.rows, 0.0);
  rstd.assign(x.rows, 0.0);
  const auto c = static_cast<double>(x.cols);
  for (std::size_t i = 0; i < x.rows; ++i) {
    double mu = 0, var = 0;
    for (std::size_t k = 0; k < x.cols; ++k) mu += x(i, k);
    mu /= c;
    for (std::size_t k = 0; k < x.cols; ++k) var += (x(i, k) - mu) * (x(i, k) - mu);
    const double rs = 1.0 / std::sqrt(var / c + 1e-5);
    for (std::size_t k = 0; k < x.cols; ++k) y(i, k) = (x(i, k) - mu) * rs * w(0, k) + b(0, k);
    mean[i] = mu;
    rstd[i] = rs;
  }
}

// Gradients of layernorm given the forward's mean and rstd: dx, dw, db (all written over here).
inline void layernorm_backward(Grid& dx, Grid& dw, Grid& db, const Grid& dy, const Grid& x,
                               const std::vector<double>& mean, const std::vector<double>& rstd,
                               const Grid& w) {
  const std::size_t m = x.rows, c = x.cols;
  dx = Grid(m, c);
  dw = Grid(1, c);
  db = Grid(1, c);
  for (std::size_t i = 0; i < m; ++i) {
    double s1 = 0, s2 = 0;
    for (std::size_t k = 0; k < c; ++k) {
      const double g = dy(i, k) * w(0, k), xh = (x(i, k) - mean[i]) * rstd[i];
      s1 += g;
      s2 += g * xh;
    }
    s1 /= static_cast<double>(c);
    s2 /= static_cast<double>(c);
    for (std::size_t k = 0; k < c; ++k) {
      const double g = dy(i, k) * w(0, k), xh = (x(i, k) - mean[i]) * rstd[i];
      dx(i, k) = rstd[i] * (g - s1 - xh * s2);
      dw(0, k) += dy(i, k) * xh;
      db(0, k) += dy(i, k);
    }
  }
}

// GELU, tanh approximation, and its derivative.
inline double gelu(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
inline double gelu_grad(double x) {
  const double s = std::sqrt(2.0 / std::numbers::pi);
  const double u = s * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * 0.044715 * x * x);
}

// Causal attention of qkv (B*T, 3C), H heads: y (B*T, C), probs (B*H*T*T); mag(y) = sum_s p_s |v|.
// slopes (H or empty): ALiBi, the score of query t and key u <= t gets slopes[h] (u - t) added.
// bias (H, >= T, or null): a bias by distance, the score gets bias(h, t - u) added.
inline void attention(Grid& y, std::vector<double>& probs, const Grid& qkv, std::size_t B,
                      std::size_t T, std::size_t H, const std::vector<double>& slopes = {},
                      const Grid* bias = nullptr) {
  const std::size_t C = qkv.cols / 3, hd = C / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  y = Grid(B * T, C);
  probs.assign(B * H * T * T, 0.0);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        std::vector<double> s(t + 1);
        double mx = -1e300;
        for (std::size_t u = 0; u <= t; ++u) {
          double d = 0;
          for (std::size_t i = 0; i < hd; ++i) {
            d += qkv(b * T + t, h * hd + i) * qkv(b * T + u, C + h * hd + i);
          }
          s[u] = d * scale;
          if (!slopes.empty())
            s[u] += slopes[h] * (static_cast<double>(u) - static_cast<double>(t));
          if (bias != nullptr) s[u] += (*bias)(h, t - u);
          mx = std::max(mx, s[u]);
        }
        double sum = 0;
        for (auto& v : s) sum += (v = std::exp(v - mx));
        for (std::size_t u = 0; u <= t; ++u) {
          const double p = s[u] / sum;
          probs[((b * H + h) * T + t) * T + u] = p;
          for (std::size_t i = 0; i < hd; ++i) {
            y(b * T + t, h * hd + i) += p * qkv(b * T + u, 2 * C + h * hd + i);
          }
        }
      }
    }
  }
}

// Gradient of attention w.r.t. qkv, given dy and the forward's probs: dqkv (B*T, 3C); with
// dbias (H, >= T), also the gradient of a bias by distance, added into.
inline void attention_backward(Grid& dqkv, const Grid& dy, const std::vector<double>& probs,
                               const Grid& qkv, std::size_t B, std::size_t T, std::size_t H,
                               Grid* dbias = nullptr) {
  const std::size_t C = qkv.cols / 3, hd = C / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  dqkv = Grid(B * T, 3 * C);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        const double* p = &probs[((b * H + h) * T + t) * T];
        std::vector<double> dp(t + 1);
        double dot = 0;
        for (std::size_t u = 0; u <= t; ++u) {
          double d = 0;
          for (std::size_t i = 0; i < hd; ++i) {
            d += dy(b * T + t, h * hd + i) * qkv(b * T + u, 2 * C + h * hd + i);
            dqkv(b * T + u, 2 * C + h * hd + i) += p[u] * dy(b * T + t, h * hd + i);
          }
          dp[u] = d;
          dot += p[u] * d;
        }
        for (std::size_t u = 0; u <= t; ++u) {
          if (dbias != nullptr) (*dbias)(h, t - u) += p[u] * (dp[u] - dot);
          const double ds = p[u] * (dp[u] - dot) * scale;
          for (std::size_t i = 0; i < hd; ++i) {
            dqkv(b * T + t, h * hd + i) += ds * qkv(b * T + u, C + h * hd + i);
            dqkv(b * T + u, C + h * hd + i) += ds * qkv(b * T + t, h * hd + i);
          }
        }
      }
    }
  }
}

// Softmax cross-entropy of a row with target y: the loss and d(loss)/d(logits) (unscaled).
inline double cross_entropy(std::vector<double>& d, const std::vector<double>& logits,
                            std::size_t y) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  double s = 0;
  for (double l : logits) s += std::exp(l - mx);
  d.resize(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    d[i] = std::exp(logits[i] - mx) / s - (i == y ? 1.0 : 0.0);
  }
  return std::log(s) + mx - logits[y];
}

// The SIMD row kernels' exact float32 formulas (lab/model/kernels_simd.hpp), as plain scalar loops
// in the same order: every target of the kernels must give these bits.
namespace exact {

// lab_exp: the same constants and operations as lab/model/kernels_simd.cpp.
inline float exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kC1 = 0.693359375f, kC2 = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  x = x < -104.0f ? -104.0f : x;
  x = 100.0f < x ? 100.0f : x;
  const float t = x * kLog2e + kRound;
  const float nf = t - kRound;
  const std::int32_t n = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kRound);
  const float r = (x - nf * kC1) - nf * kC2;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = (p * (r * r) + r) + 1.0f;
  const std::int32_t a = n >> 1, b = n - a;
  return (y * std::bit_cast<float>(static_cast<std::uint32_t>(a + 127) << 23)) *
         std::bit_cast<float>(static_cast<std::uint32_t>(b + 127) << 23);
}

inline float tanh(float u) {
  return 1.0f - 2.0f / (exact::exp(2.0f * u) + 1.0f);
}

// The fixed 16-partial sum of term(0..n): p[i % 16] += term(i) in order, then pairwise.
template <class Term>
float sum16(std::size_t n, Term term) {
  float p[16] = {};
  for (std::size_t i = 0; i < n; ++i) p[i % 16] = p[i % 16] + term(i);
  for (std::size_t w = 8; w >= 1; w /= 2) {
    for (std::size_t j = 0; j < w; ++j) p[j] = p[j] + p[j + w];
  }
  return p[0];
}

constexpr float kGeluS = 0.7978845608028654f, kGeluA = 0.044715f, kGelu3A = 3.0f * kGeluA;

inline void gelu_forward(float* y, float* th, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = exact::tanh(kGeluS * (v + ((kGeluA * v) * v) * v));
    if (th != nullptr) th[i] = t;
    y[i] = (0.5f * v) * (1.0f + t);
  }
}

inline void gelu_backward(float* dx, const float* dy, const float* x, const float* th,
                          std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i], t = th[i];
    const float du = kGeluS * (1.0f + (kGelu3A * v) * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + ((0.5f * v) * (1.0f - t * t)) * du);
  }
}

inline void layernorm_forward(float* y, float& mean, float& rstd, const float* x, const float* w,
                              const float* b, std::size_t c) {
  const float fc = static_cast<float>(c);
  const float mu = sum16(c, [&](std::size_t i) { return x[i]; }) / fc;
  const float var = sum16(c, [&](std::size_t i) { return (x[i] - mu) * (x[i] - mu); }) / fc;
  const float rs = 1.0f / std::sqrt(var + 1e-5f);
  for (std::size_t i = 0; i < c; ++i) y[i] = ((x[i] - mu) * rs) * w[i] + b[i];
  mean = mu;
  rstd = rs;
}

// dx: added into.
inline void layernorm_backward(float* dx, const float* dy, const float* x, float mu, float rs,
                               const float* w, std::size_t c) {
  const float fc = static_cast<float>(c);
  const float s1 = sum16(c, [&](std::size_t i) { return dy[i] * w[i]; }) / fc;
  const float s2 =
      sum16(c, [&](std::size_t i) { return ((dy[i] * w[i]) * (x[i] - mu)) * rs; }) / fc;
  for (std::size_t i = 0; i < c; ++i) {
    dx[i] = dx[i] + rs * ((dy[i] * w[i] - s1) - ((x[i] - mu) * rs) * s2);
  }
}

// d written over; returns the loss log(s) + max - l[target].
inline float softmax_row(float* d, const float* l, std::size_t n, std::size_t target, float inv) {
  float mx = l[0];
  for (std::size_t i = 1; i < n; ++i) mx = std::max(mx, l[i]);
  for (std::size_t i = 0; i < n; ++i) d[i] = exact::exp(l[i] - mx);
  const float s = sum16(n, [&](std::size_t i) { return d[i]; });
  const float is = 1.0f / s;
  for (std::size_t i = 0; i < n; ++i) d[i] = (d[i] * is) * inv;
  d[target] = d[target] - inv;
  return std::log(s) + mx - l[target];
}

// One query row of attention for one head (lab/model/attention.cpp's layout); bias (t+1 floats or
// nullptr) added to the scaled scores.
inline void attend_row(float* out, float* p, const float* q, const float* seq, std::size_t stride,
                       std::size_t c, std::size_t hd, std::size_t t, float scale,
                       const float* bias = nullptr) {
  float mx = -INFINITY;
  for (std::size_t s = 0; s <= t; ++s) {
    const float* k = seq + s * stride + c;
    p[s] = sum16(hd, [&](std::size_t i) { return q[i] * k[i]; }) * scale;
    if (bias != nullptr) p[s] = p[s] + bias[s];
    mx = std::max(mx, p[s]);
  }
  for (std::size_t s = 0; s <= t; ++s) p[s] = exact::exp(p[s] - mx);
  const float inv = 1.0f / sum16(t + 1, [&](std::size_t s) { return p[s]; });
  for (std::size_t s = 0; s <= t; ++s) p[s] = p[s] * inv;
  std::fill_n(out, hd, 0.0f);
  for (std::size_t s = 0; s <= t; ++s) {
    const float* v = seq + s * stride + 2 * c;
    for (std::size_t i = 0; i < hd; ++i) out[i] = out[i] + p[s] * v[i];
  }
}

// One head of one sequence of attention's backward: dqkv's head columns written over; dbias (T, or
// null): the bias's gradient by distance, dbias[t - s] += p[s] (dp[s] - dot), t ascending.
inline void attention_backward_head(float* dqkv, std::size_t dstride, const float* dy,
                                    std::size_t gstride, const float* qkv, std::size_t stride,
                                    const float* probs, std::size_t T, std::size_t c,
                                    std::size_t hd, float scale, float* dbias = nullptr) {
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t part = 0; part < 3; ++part)
      std::fill_n(dqkv + t * dstride + part * c, hd, 0.0f);
  }
  std::vector<float> dp(T);
  for (std::size_t t = 0; t < T; ++t) {
    const float* p = probs + t * T;
    const float* g = dy + t * gstride;
    float dot = 0.0f;
    for (std::size_t s = 0; s <= t; ++s) {
      const float* v = qkv + s * stride + 2 * c;
      dp[s] = sum16(hd, [&](std::size_t i) { return g[i] * v[i]; });
      dot = dot + p[s] * dp[s];
      float* dv = dqkv + s * dstride + 2 * c;
      for (std::size_t i = 0; i < hd; ++i) dv[i] = dv[i] + p[s] * g[i];
    }
    const float* q = qkv + t * stride;
    float* dq = dqkv + t * dstride;
    for (std::size_t s = 0; s <= t; ++s) {
      if (dbias != nullptr) dbias[t - s] = dbias[t - s] + p[s] * (dp[s] - dot);
      const float ds = (p[s] * (dp[s] - dot)) * scale;
      const float* k = qkv + s * stride + c;
      float* dk = dqkv + s * dstride + c;
      for (std::size_t i = 0; i < hd; ++i) {
        dq[i] = dq[i] + ds * k[i];
        dk[i] = dk[i] + ds * q[i];
      }
    }
  }
}

}  // namespace exact

}  // namespace posemb::lab::reference
