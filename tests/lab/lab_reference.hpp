// tests/lab/lab_reference.hpp: plain scalar references of the lab model's kernels (lab/kernels.hpp,
// lab/attention.hpp), in double, one obvious loop each. Each returns the exact-ish value and the
// magnitude of the terms that were summed for it (sum of |term|), from which the tests derive
// float32 tolerances: a sum of k float terms is within about k * eps * sum|term| of exact.
#pragma once

#include <algorithm>
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
inline void attention(Grid& y, std::vector<double>& probs, const Grid& qkv, std::size_t B,
                      std::size_t T, std::size_t H) {
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

// Gradient of attention w.r.t. qkv, given dy and the forward's probs: dqkv (B*T, 3C).
inline void attention_backward(Grid& dqkv, const Grid& dy, const std::vector<double>& probs,
                               const Grid& qkv, std::size_t B, std::size_t T, std::size_t H) {
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

}  // namespace posemb::lab::reference
