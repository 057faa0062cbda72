// The lab model's kernels (lab/model/kernels.hpp, lab/model/attention.hpp, the rope encoding's
// rotation) against the plain double-precision references of lab_reference.hpp, with tolerances
// derived from float32's epsilon and the magnitude of the terms each result sums; and the same bits
// on 1 and 2 threads. Shapes are awkward on purpose: row counts past the 64-row sgemm chunks with a
// tail, widths that are not multiples of the 32-wide tiles.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/kernels.hpp"
#include "lab_reference.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {
namespace {

namespace ref = reference;
constexpr double kEps = std::numeric_limits<float>::epsilon();

Matrix<float> random_matrix(std::size_t r, std::size_t c, std::uint64_t seed, float scale = 1.0f) {
  Matrix<float> m(r, c);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, scale);
  for (float& v : m.flat()) v = n(rng);
  return m;
}

ref::Grid grid(MatrixView<const float> m) {
  ref::Grid g(m.rows(), m.cols());
  for (std::size_t i = 0; i < m.rows(); ++i) {
    for (std::size_t j = 0; j < m.cols(); ++j) g(i, j) = m(i, j);
  }
  return g;
}

// Every element of ours within tol(i, j) of want(i, j); reports the worst.
void expect_close(MatrixView<const float> ours, const ref::Grid& want,
                  const std::function<double(std::size_t, std::size_t)>& tol, const char* what) {
  ASSERT_EQ(ours.rows(), want.rows);
  ASSERT_EQ(ours.cols(), want.cols);
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < want.rows; ++i) {
    for (std::size_t j = 0; j < want.cols; ++j) {
      const double err = std::fabs(ours(i, j) - want(i, j)), t = tol(i, j);
      worst = std::max(worst, err / t);
      if (!(err <= t)) ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements outside the tolerance; worst error is "
                     << worst << " x its tolerance";
}

// Runs f with 1 and with 2 OpenMP threads; returns both results for a bitwise comparison.
template <class F>
void expect_same_bits_on_1_and_2_threads(F f, const char* what) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<float> one = f();
  omp_set_num_threads(2);
  const std::vector<float> two = f();
  omp_set_num_threads(saved);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0)
      << what << ": 1 and 2 threads give different bits";
}

std::vector<float> flat(const Matrix<float>& m) {
  return {m.data(), m.data() + m.size()};
}

TEST(LabKernels, LinearForwardMatchesReference) {
  const std::size_t M = 130, K = 37, N = 45;
  const auto x = random_matrix(M, K, 1), w = random_matrix(K, N, 2), b = random_matrix(1, N, 3);
  Matrix<float> y(M, N);
  linear_forward(y, x, w, b);
  ref::Grid want, mag;
  ref::linear(want, mag, grid(x), grid(w), grid(b));
  // A sum of K + 1 float terms, in any order and with or without FMA: within (K + 1) eps of the
  // sum of |terms|; doubled for the rounding of the products.
  expect_close(
      y, want, [&](auto i, auto j) { return 2 * (K + 2) * kEps * mag(i, j); }, "y");
  Matrix<float> y0(M, N);
  linear_forward(y0, x, w, {});
  ref::linear(want, mag, grid(x), grid(w), ref::Grid());
  expect_close(
      y0, want, [&](auto i, auto j) { return 2 * (K + 2) * kEps * mag(i, j); }, "y without bias");
  expect_same_bits_on_1_and_2_threads(
      [&] {
        linear_forward(y, x, w, b);
        return flat(y);
      },
      "linear_forward");
}

TEST(LabKernels, LinearBackwardMatchesReference) {
  const std::size_t M = 130, K = 37, N = 45;
  const auto x = random_matrix(M, K, 4), w = random_matrix(K, N, 5), dy = random_matrix(M, N, 6);
  const auto dw0 = random_matrix(K, N, 7), db0 = random_matrix(1, N, 8);
  const auto dx0 = random_matrix(M, K, 9);
  for (bool accumulate : {false, true}) {
    Matrix<float> dx(dx0), dw(dw0), db(db0);
    linear_backward(dx, dw, db, dy, x, w, accumulate);
    // dx = dy w^T (+ dx0): N terms. dw = dw0 + x^T dy: M + 1 terms. db = db0 + column sums.
    ref::Grid wt(N, K), want, mag;
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t n = 0; n < N; ++n) wt(n, k) = w(k, n);
    }
    ref::linear(want, mag, grid(dy), wt, ref::Grid());
    if (accumulate) {
      for (std::size_t i = 0; i < M; ++i) {
        for (std::size_t k = 0; k < K; ++k) {
          want(i, k) += dx0(i, k);
          mag(i, k) += std::fabs(dx0(i, k));
        }
      }
    }
    expect_close(
        dx, want, [&](auto i, auto j) { return 2 * (N + 2) * kEps * mag(i, j); }, "dx");
    ref::Grid xt(K, M), wantw, magw;
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t k = 0; k < K; ++k) xt(k, i) = x(i, k);
    }
    ref::linear(wantw, magw, xt, grid(dy), ref::Grid());
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t n = 0; n < N; ++n) {
        wantw(k, n) += dw0(k, n);
        magw(k, n) += std::fabs(dw0(k, n));
      }
    }
    expect_close(
        dw, wantw, [&](auto i, auto j) { return 2 * (M + 2) * kEps * magw(i, j); }, "dw");
    ref::Grid ones(1, M), wantb, magb;
    for (std::size_t i = 0; i < M; ++i) ones(0, i) = 1.0;
    ref::linear(wantb, magb, ones, grid(dy), grid(db0));
    expect_close(
        db, wantb, [&](auto i, auto j) { return 2 * (M + 2) * kEps * magb(i, j); }, "db");
  }
  expect_same_bits_on_1_and_2_threads(
      [&] {
        Matrix<float> dx(M, K), dw(dw0), db(db0);
        linear_backward(dx, dw, db, dy, x, w);
        auto out = flat(dx);
        for (float v : dw.flat()) out.push_back(v);
        for (float v : db.flat()) out.push_back(v);
        return out;
      },
      "linear_backward");
}

TEST(LabKernels, LayerNormForwardAndBackwardMatchReference) {
  const std::size_t M = 70, C = 37;
  // Rows with an offset (the mean matters) and a spread (rstd far from 1).
  auto x = random_matrix(M, C, 10, 3.0f);
  for (std::size_t i = 0; i < M; ++i) {
    for (float& v : x.row(i)) v += static_cast<float>(i % 7) - 3.0f;
  }
  const auto w = random_matrix(1, C, 11), b = random_matrix(1, C, 12), dy = random_matrix(M, C, 13);
  Matrix<float> y(M, C);
  std::vector<float> mean(M), rstd(M);
  layernorm_forward(y, mean, rstd, x, w, b);
  ref::Grid want;
  std::vector<double> rmean, rrstd;
  ref::layernorm(want, rmean, rrstd, grid(x), grid(w), grid(b));
  // mean: C terms; variance: C terms of (x - mean)^2 and the mean's error; rstd: a square root
  // and a division. y = (x - mean) rstd w + b then carries (C + 8) eps relative to its terms.
  std::vector<double> abs_mean(M);
  for (std::size_t i = 0; i < M; ++i) {
    for (float v : x.row(i)) abs_mean[i] += std::fabs(v) / static_cast<double>(C);
    EXPECT_NEAR(mean[i], rmean[i], 2 * (C + 2) * kEps * abs_mean[i]) << "mean of row " << i;
    EXPECT_NEAR(rstd[i], rrstd[i], 4 * (C + 8) * kEps * rrstd[i]) << "rstd of row " << i;
  }
  expect_close(
      y, want,
      [&](auto i, auto j) {
        const double xh = std::fabs(x(i, j) - rmean[i]) * rrstd[i];
        return 4 * (C + 8) * kEps *
               (std::fabs(w(0, j)) * (xh + rrstd[i] * abs_mean[i]) + std::fabs(b(0, j)));
      },
      "layernorm y");
  // The backward from the forward's own mean and rstd (as the model uses it).
  const auto dx0 = random_matrix(M, C, 14), dw0 = random_matrix(1, C, 15),
             db0 = random_matrix(1, C, 16);
  Matrix<float> dx(dx0), dw(dw0), db(db0);
  layernorm_backward(dx, dw, db, dy, x, mean, rstd, w);
  const std::vector<double> fmean(mean.begin(), mean.end()), frstd(rstd.begin(), rstd.end());
  ref::Grid wdx, wdw, wdb;
  ref::layernorm_backward(wdx, wdw, wdb, grid(dy), grid(x), fmean, frstd, grid(w));
  // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w: sums of C terms; its magnitude is
  // rstd (|g| + mean|g| + |xhat| mean|g xhat|). dw, db: sums over M rows (+ the old value).
  ref::Grid mag_dx(M, C), mag_dw(1, C), mag_db(1, C);
  for (std::size_t i = 0; i < M; ++i) {
    double s1 = 0, s2 = 0;
    for (std::size_t k = 0; k < C; ++k) {
      const double g = std::fabs(dy(i, k) * w(0, k)), xh = std::fabs(x(i, k) - fmean[i]) * frstd[i];
      s1 += g / static_cast<double>(C);
      s2 += g * xh / static_cast<double>(C);
      mag_dw(0, k) += std::fabs(dy(i, k)) * xh;
      mag_db(0, k) += std::fabs(dy(i, k));
    }
    for (std::size_t k = 0; k < C; ++k) {
      const double xh = std::fabs(x(i, k) - fmean[i]) * frstd[i];
      mag_dx(i, k) = frstd[i] * (std::fabs(dy(i, k) * w(0, k)) + s1 + xh * s2);
      wdx(i, k) += dx0(i, k);
      mag_dx(i, k) += std::fabs(dx0(i, k));
    }
  }
  for (std::size_t k = 0; k < C; ++k) {
    wdw(0, k) += dw0(0, k);
    wdb(0, k) += db0(0, k);
    mag_dw(0, k) += std::fabs(dw0(0, k));
    mag_db(0, k) += std::fabs(db0(0, k));
  }
  expect_close(
      dx, wdx, [&](auto i, auto j) { return 4 * (C + 8) * kEps * mag_dx(i, j); }, "dx");
  expect_close(
      dw, wdw, [&](auto i, auto j) { return 4 * (M + 8) * kEps * mag_dw(i, j); }, "dw");
  expect_close(
      db, wdb, [&](auto i, auto j) { return 2 * (M + 2) * kEps * mag_db(i, j); }, "db");
  expect_same_bits_on_1_and_2_threads(
      [&] {
        Matrix<float> yy(M, C), ddx(M, C), ddw(1, C), ddb(1, C);
        std::vector<float> mm(M), rr(M);
        layernorm_forward(yy, mm, rr, x, w, b);
        layernorm_backward(ddx, ddw, ddb, dy, x, mm, rr, w);
        auto out = flat(yy);
        for (const auto* m : {&ddx, &ddw, &ddb}) {
          for (float v : m->flat()) out.push_back(v);
        }
        return out;
      },
      "layernorm");
}

TEST(LabKernels, GeluForwardAndBackwardMatchReference) {
  const std::size_t M = 9, N = 41;
  auto x = random_matrix(M, N, 20, 3.0f);
  x(0, 0) = 0.0f;
  x(0, 1) = 12.0f;   // saturated: tanh = 1
  x(0, 2) = -12.0f;  // saturated: tanh = -1
  const auto dy = random_matrix(M, N, 21);
  Matrix<float> y(M, N), th(M, N), dx(M, N);
  gelu_forward(y, th, x);
  gelu_backward(dx, dy, x, th);
  // u = sqrt(2/pi)(x + 0.044715 x^3) carries 4 eps relative; tanh(u) as 1 - 2/(exp(2u) + 1)
  // carries about 4 eps absolute (expf within 1 ulp, two more roundings), plus |u| * 4 eps from
  // u's error (tanh' <= 1). y = x/2 (1 + t): |x|/2 times t's error, plus 3 eps |y|.
  ref::Grid want(M, N), wantd(M, N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      want(i, j) = ref::gelu(x(i, j));
      wantd(i, j) = dy(i, j) * ref::gelu_grad(x(i, j));
    }
  }
  auto u = [&](std::size_t i, std::size_t j) {
    const double v = x(i, j);
    return std::fabs(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v));
  };
  expect_close(
      y, want,
      [&](auto i, auto j) {
        return 2 * (0.5 * std::fabs(x(i, j)) * (4 + 4 * u(i, j)) * kEps +
                    3 * kEps * std::fabs(want(i, j))) +
               std::numeric_limits<float>::denorm_min();
      },
      "gelu y");
  // dx = dy (0.5 (1 + t) + 0.5 x (1 - t^2) du): t's error (4 + 4|u|) eps enters both terms, the
  // second with the weight |x t du| <= |x| du; then a few roundings of the products.
  expect_close(
      dx, wantd,
      [&](auto i, auto j) {
        const double v = std::fabs(x(i, j));
        const double du = std::sqrt(2.0 / std::numbers::pi) * (1 + 3 * 0.044715 * v * v);
        return 2 * std::fabs(dy(i, j)) * ((4 + 4 * u(i, j)) * kEps * (0.5 + v * du) + 8 * kEps) +
               std::numeric_limits<float>::denorm_min();
      },
      "gelu dx");
  EXPECT_EQ(th(0, 1), 1.0f);
  EXPECT_EQ(th(0, 2), -1.0f);
  EXPECT_EQ(y(0, 0), 0.0f);
}

TEST(LabKernels, SoftmaxCrossEntropyMatchesReference) {
  const std::size_t M = 70, V = 13;
  const auto logits = random_matrix(M, V, 30, 4.0f);
  std::vector<std::int32_t> targets(M);
  std::size_t count = 0;
  for (std::size_t i = 0; i < M; ++i) {
    targets[i] = i % 5 == 2 ? -1 : static_cast<std::int32_t>((i * 7) % V);
    count += targets[i] >= 0 ? 1 : 0;
  }
  for (std::size_t normalizer : {std::size_t{0}, std::size_t{200}}) {
    Matrix<float> d(M, V);
    std::vector<float> losses(M);
    const double mean = softmax_cross_entropy(d, losses, logits, targets, normalizer);
    const double n = static_cast<double>(normalizer ? normalizer : count);
    double want_sum = 0, tol_sum = 0;
    ref::Grid want(M, V);
    for (std::size_t i = 0; i < M; ++i) {
      if (targets[i] < 0) {
        EXPECT_EQ(losses[i], 0.0f);
        for (float v : d.row(i)) EXPECT_EQ(v, 0.0f);
        continue;
      }
      std::vector<double> row(logits.row(i).begin(), logits.row(i).end()), g;
      const double l = ref::cross_entropy(g, row, static_cast<std::size_t>(targets[i]));
      // The sum of V exponentials carries (V + 2) eps relative, so log(sum) (V + 2) eps absolute;
      // then max and the target's logit add a rounding each, relative to their size.
      const double mx = *std::max_element(row.begin(), row.end());
      const double tol =
          (V + 4) * kEps + 2 * kEps * (std::fabs(mx) + std::fabs(row[targets[i]]) + l);
      EXPECT_NEAR(losses[i], l, tol) << "loss of row " << i;
      want_sum += l;
      tol_sum += tol;
      for (std::size_t k = 0; k < V; ++k) want(i, k) = g[k] / n;
    }
    EXPECT_NEAR(mean, want_sum / n, tol_sum / n);
    // d = (softmax - onehot) / n: softmax within (V + 6) eps relative.
    expect_close(
        d, want,
        [&](auto i, auto k) {
          const double p =
              std::fabs(want(i, k)) + (targets[i] == static_cast<std::int32_t>(k) ? 2 / n : 0);
          return 2 * (V + 6) * kEps * p + std::numeric_limits<float>::denorm_min();
        },
        "dlogits");
  }
}

TEST(LabKernels, AttentionForwardBackwardAndStepMatchReference) {
  const std::size_t B = 3, T = 11, H = 2, hd = 6, C = H * hd;
  const auto qkv = random_matrix(B * T, 3 * C, 40, 1.5f), dy = random_matrix(B * T, C, 41);
  Matrix<float> y(B * T, C), dqkv(B * T, 3 * C);
  std::vector<float> probs(B * H * T * T);
  attention_forward(y, probs, qkv, B, T, H);
  attention_backward(dqkv, {}, dy, probs, qkv, B, T, H);
  ref::Grid want, wantd;
  std::vector<double> rprobs;
  ref::attention(want, rprobs, grid(qkv), B, T, H);
  // Scores q.k / sqrt(hd) carry (hd + 2) eps times S, the largest sum of |q_i k_i| / sqrt(hd);
  // exp turns that into a relative error of the weights, normalization adds (T + 4) eps.
  // y = sum_s p_s v_s then carries that relative error plus (T + 2) eps of max |v|.
  double S = 0, vmax = 0;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t s = 0; s <= t; ++s) {
          double a = 0;
          for (std::size_t i = 0; i < hd; ++i) {
            a += std::fabs(qkv(b * T + t, h * hd + i) * qkv(b * T + s, C + h * hd + i));
          }
          S = std::max(S, a * scale);
        }
      }
    }
  }
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < C; ++i) vmax = std::max(vmax, double(std::fabs(qkv(r, 2 * C + i))));
  }
  const double rel = 2 * (hd + 2) * kEps * S + (T + 4) * kEps;
  for (std::size_t k = 0; k < probs.size(); ++k) {
    if (rprobs[k] == 0.0) {
      EXPECT_EQ(probs[k], 0.0f) << "masked weight " << k;
    } else {
      EXPECT_NEAR(probs[k], rprobs[k], 2 * rel * rprobs[k]) << "weight " << k;
    }
  }
  expect_close(
      y, want, [&](auto, auto) { return 2 * (rel + (T + 2) * kEps) * vmax; }, "y");
  // The backward from the forward's own weights: magnitudes of its sums, term by term.
  std::vector<double> fprobs(probs.begin(), probs.end());
  ref::attention_backward(wantd, grid(dy), fprobs, grid(qkv), B, T, H);
  ref::Grid mag(B * T, 3 * C);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        const double* p = &fprobs[((b * H + h) * T + t) * T];
        std::vector<double> a(t + 1);
        double abar = 0;
        for (std::size_t s = 0; s <= t; ++s) {
          for (std::size_t i = 0; i < hd; ++i) {
            a[s] += std::fabs(dy(b * T + t, h * hd + i) * qkv(b * T + s, 2 * C + h * hd + i));
            mag(b * T + s, 2 * C + h * hd + i) += p[s] * std::fabs(dy(b * T + t, h * hd + i));
          }
          abar += p[s] * a[s];
        }
        for (std::size_t s = 0; s <= t; ++s) {
          const double ds = p[s] * scale * (a[s] + abar);
          for (std::size_t i = 0; i < hd; ++i) {
            mag(b * T + t, h * hd + i) += ds * std::fabs(qkv(b * T + s, C + h * hd + i));
            mag(b * T + s, C + h * hd + i) += ds * std::fabs(qkv(b * T + t, h * hd + i));
          }
        }
      }
    }
  }
  expect_close(
      dqkv, wantd, [&](auto i, auto j) { return 4 * (hd + T + 8) * kEps * mag(i, j); }, "dqkv");
  // One cached decoding step gives the full forward's row bit for bit (the same attend_row).
  Matrix<float> cache(B * T, 3 * C), ys(B, C);
  std::vector<float> sc(B * H * T);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      std::copy_n(qkv.row(b * T + t).data(), 3 * C, cache.row(b * T + t).data());
    }
    attention_step(ys, sc, cache, B, T, t, H);
    for (std::size_t b = 0; b < B; ++b) {
      EXPECT_EQ(std::memcmp(ys.row(b).data(), y.row(b * T + t).data(), C * sizeof(float)), 0)
          << "step " << t << ", sequence " << b;
    }
  }
  expect_same_bits_on_1_and_2_threads(
      [&] {
        Matrix<float> yy(B * T, C), dd(B * T, 3 * C);
        std::vector<float> pp(B * H * T * T);
        attention_forward(yy, pp, qkv, B, T, H);
        attention_backward(dd, {}, dy, pp, qkv, B, T, H);
        auto out = flat(yy);
        for (float v : dd.flat()) out.push_back(v);
        return out;
      },
      "attention");
}

// The rope encoding's rotation, through the Encoding interface, against the rotation computed
// in double, at small and large positions; its backward is the inverse rotation.
TEST(LabKernels, RopeRotationMatchesReference) {
  ModelConfig cfg;
  cfg.vocab_size = 8;
  cfg.d_model = 12;
  cfg.n_heads = 2;
  cfg.pe = "rope";
  cfg.rope_base = 500.0;
  const auto enc = find_encoding("rope").make(cfg);
  const std::size_t rows = 9, C = cfg.d_model, hd = cfg.head_dim(), H = cfg.n_heads;
  const std::vector<std::int64_t> pos = {0, 1, 2, 7, 100, 1000, 4095, 3, 0};
  enc->reserve(4096);
  const auto qkv = random_matrix(rows, 3 * C, 50);
  Matrix<float> rot(qkv);
  enc->rotate_qk_forward(rot, pos, H);
  // Each rotated element is u cos - v sin (or u sin + v cos) with cos and sin rounded to float
  // (eps/2 each) and three roundings: within 4 eps (|u| + |v|).
  ref::Grid want = grid(qkv);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t part = 0; part < 2; ++part) {
      for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t i = 0; i < hd / 2; ++i) {
          const double angle = static_cast<double>(pos[r]) *
                               std::pow(cfg.rope_base, -static_cast<double>(2 * i) / hd);
          const std::size_t c0 = part * C + h * hd + 2 * i;
          const double u = qkv(r, c0), v = qkv(r, c0 + 1);
          want(r, c0) = u * std::cos(angle) - v * std::sin(angle);
          want(r, c0 + 1) = u * std::sin(angle) + v * std::cos(angle);
        }
      }
    }
  }
  auto pair_mag = [&](std::size_t r, std::size_t j) {
    const std::size_t c0 = j - j % 2;
    return std::fabs(qkv(r, c0)) + std::fabs(qkv(r, c0 + 1));
  };
  expect_close(
      rot, want, [&](auto r, auto j) { return 4 * kEps * pair_mag(r, j); }, "rotated");
  for (std::size_t r = 0; r < rows; ++r) {  // v is not rotated
    EXPECT_EQ(std::memcmp(rot.row(r).data() + 2 * C, qkv.row(r).data() + 2 * C, C * sizeof(float)),
              0);
  }
  enc->rotate_qk_backward(rot, pos, H);
  expect_close(
      rot, grid(qkv), [&](auto r, auto j) { return 8 * kEps * pair_mag(r, j); },
      "backward of forward");
}

}  // namespace
}  // namespace posemb::lab
