// The lab's alibi encoding (lab/encodings/alibi.cpp) and ALiBi's bias inside the lab's attention
// (lab/model/attention.hpp), given by the encoding by distance (Encoding::scores_bias): the
// forward against a plain double-precision reference (bias slope * (j - i) for keys j <= i,
// lab_reference.hpp), the gradient against central finite differences of that reference, a
// cached decoding step equal to the full forward's row bit for bit, the same bits on 1 and 2
// threads, and the encoding's rows are the library's values. (Every SIMD
// target: test_lab_simd; the whole model against PyTorch: test_lab_model_torch, every encoding.)
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/model.hpp"
#include "lab_reference.hpp"
#include "posemb/alibi.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {
namespace {

namespace ref = reference;
constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr std::size_t B = 2, T = 13, H = 4, hd = 5, C = H * hd;

Matrix<float> random_matrix(std::size_t r, std::size_t c, std::uint64_t seed, float scale) {
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

// The registered ALiBi encoding (a fixed bias on the scores) for `heads` heads.
std::unique_ptr<Encoding> alibi_encoding(std::size_t heads) {
  const EncodingSpec* spec = find_encoding_if(
      [](const EncodingSpec& e) { return e.site == EncodingSite::scores && !e.trainable; });
  EXPECT_NE(spec, nullptr);
  ModelConfig cfg;
  cfg.vocab_size = 8;
  cfg.d_model = 4 * heads;
  cfg.n_heads = heads;
  cfg.pe = std::string(spec->name);
  return spec->make(cfg);
}

// Its bias by distance, (heads, distances): what the model gives the attention.
Matrix<float> alibi_bias(std::size_t heads = H, std::size_t distances = T) {
  Matrix<float> bias(heads, distances);
  EXPECT_TRUE(alibi_encoding(heads)->scores_bias(bias.view()));
  return bias;
}

std::vector<double> slopes_in_double() {
  const auto s = alibi_slopes(H);
  return {s.begin(), s.end()};
}

// The weights with the bias against the reference's: scores q.k / sqrt(hd) carry (hd + 2) eps
// times S (their largest magnitude) and the bias (rounded once, then added) eps times its
// largest |m (i - j)| plus the sum's rounding; exp turns that into a relative error of the
// weights, normalization adds (T + 4) eps. y carries that plus (T + 2) eps of max |v|.
TEST(LabAlibi, ForwardMatchesThePlainReference) {
  const auto qkv = random_matrix(B * T, 3 * C, 71, 1.5f);
  Matrix<float> y(B * T, C);
  std::vector<float> probs(B * H * T * T);
  attention_forward(y, probs, qkv, B, T, H, alibi_bias());
  ref::Grid want;
  std::vector<double> rprobs, plain;
  ref::attention(want, rprobs, grid(qkv), B, T, H, slopes_in_double());
  ref::Grid unbiased;
  ref::attention(unbiased, plain, grid(qkv), B, T, H);
  double qmax = 0, kmax = 0, vmax = 0;
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < C; ++i) {
      qmax = std::max(qmax, double(std::fabs(qkv(r, i))));
      kmax = std::max(kmax, double(std::fabs(qkv(r, C + i))));
      vmax = std::max(vmax, double(std::fabs(qkv(r, 2 * C + i))));
    }
  }
  const double S = double(hd) * qmax * kmax / std::sqrt(double(hd));
  const double bias_max = alibi_slopes(H)[0] * double(T - 1);
  const double rel = 2 * (hd + 2) * kEps * S + 4 * kEps * (S + bias_max) + (T + 4) * kEps;
  double moved = 0;
  for (std::size_t k = 0; k < probs.size(); ++k) {
    if (rprobs[k] == 0.0) {
      EXPECT_EQ(probs[k], 0.0f) << "masked weight " << k;
    } else {
      EXPECT_NEAR(probs[k], rprobs[k], 2 * rel * rprobs[k]) << "weight " << k;
      moved = std::max(moved, std::fabs(rprobs[k] - plain[k]) / (2 * rel * rprobs[k]));
    }
  }
  // The bias matters: without it some weight is far outside the tolerance.
  EXPECT_GT(moved, 100.0);
  double worst = 0;
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < C; ++i) worst = std::max(worst, std::fabs(y(r, i) - want(r, i)));
  }
  EXPECT_LE(worst, 2 * (rel + (T + 2) * kEps) * vmax);
}

// d(sum w . y)/d(qkv) from attention_backward (dy = w, the weights of the biased forward)
// against central differences of the double reference with the bias: h = 1e-5 leaves a
// truncation error of order h^2 and a roundoff of 1e-16 / h, both far below the float
// backward's error, bounded by 64 (hd + T) eps times the largest gradient.
TEST(LabAlibi, GradientMatchesFiniteDifferences) {
  const auto qkv = random_matrix(B * T, 3 * C, 72, 1.0f), w = random_matrix(B * T, C, 73, 1.0f);
  Matrix<float> y(B * T, C), dqkv(B * T, 3 * C);
  std::vector<float> probs(B * H * T * T);
  attention_forward(y, probs, qkv, B, T, H, alibi_bias());
  attention_backward(dqkv, {}, w, probs, qkv, B, T, H);
  const auto slopes = slopes_in_double();
  const ref::Grid wg = grid(w);
  auto loss = [&](const ref::Grid& x) {
    ref::Grid out;
    std::vector<double> p;
    ref::attention(out, p, x, B, T, H, slopes);
    double l = 0;
    for (std::size_t r = 0; r < B * T; ++r) {
      for (std::size_t i = 0; i < C; ++i) l += out(r, i) * wg(r, i);
    }
    return l;
  };
  ref::Grid x = grid(qkv), fd(B * T, 3 * C);
  const double h = 1e-5;
  double gmax = 0;
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < 3 * C; ++i) {
      const double orig = x(r, i);
      x(r, i) = orig + h;
      const double lp = loss(x);
      x(r, i) = orig - h;
      const double lm = loss(x);
      x(r, i) = orig;
      fd(r, i) = (lp - lm) / (2 * h);
      gmax = std::max(gmax, std::fabs(fd(r, i)));
    }
  }
  ASSERT_GT(gmax, 0.1);
  const double tol = 64 * (hd + T) * kEps * gmax;
  double worst = 0;
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < 3 * C; ++i) {
      worst = std::max(worst, std::fabs(dqkv(r, i) - fd(r, i)));
    }
  }
  EXPECT_LE(worst, tol) << "largest |backward - finite difference| over " << B * T * 3 * C;
}

// A cached decoding step with the bias gives the biased forward's row bit for bit; the forward
// and backward give the same bits on 1 and 2 threads; a bias of the wrong heads or too few
// distances is refused.
TEST(LabAlibi, DecodingStepAndThreadsGiveTheSameBits) {
  const auto qkv = random_matrix(B * T, 3 * C, 74, 1.5f), dy = random_matrix(B * T, C, 75, 1.0f);
  const auto slopes = alibi_bias();
  auto run = [&] {
    Matrix<float> y(B * T, C), d(B * T, 3 * C);
    std::vector<float> probs(B * H * T * T);
    attention_forward(y, probs, qkv, B, T, H, slopes);
    attention_backward(d, {}, dy, probs, qkv, B, T, H);
    std::vector<float> out(y.data(), y.data() + y.size());
    out.insert(out.end(), d.data(), d.data() + d.size());
    out.insert(out.end(), probs.begin(), probs.end());
    return out;
  };
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run();
  omp_set_num_threads(2);
  const auto two = run();
  omp_set_num_threads(saved);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);

  Matrix<float> y(B * T, C), cache(B * T, 3 * C), ys(B, C);
  std::vector<float> probs(B * H * T * T), sc(B * H * T);
  attention_forward(y, probs, qkv, B, T, H, slopes);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      std::copy_n(qkv.row(b * T + t).data(), 3 * C, cache.row(b * T + t).data());
    }
    attention_step(ys, sc, cache, B, T, t, H, slopes);
    for (std::size_t b = 0; b < B; ++b) {
      EXPECT_EQ(std::memcmp(ys.row(b).data(), y.row(b * T + t).data(), C * sizeof(float)), 0)
          << "step " << t << ", sequence " << b;
    }
  }
  const Matrix<float> three(3, T), short_rows(H, T - 1);
  EXPECT_THROW(attention_forward(y, probs, qkv, B, T, H, three), std::invalid_argument);
  EXPECT_THROW(attention_forward(y, probs, qkv, B, T, H, short_rows), std::invalid_argument);
  EXPECT_THROW(attention_step(ys, sc, cache, B, T, 0, H, three), std::invalid_argument);
  Matrix<float> d(B * T, 3 * C), dshort(H, T - 1);
  EXPECT_THROW(attention_backward(d, dshort, dy, probs, qkv, B, T, H), std::invalid_argument);
}

// The registered encoding: its bias by distance is the library's value for every head and
// distance, bit for bit (posemb::alibi_forward of a query d positions after its key); no table,
// no tensors, nothing to train, and it enters at the scores.
TEST(LabAlibi, EncodingGivesTheLibrarysBias) {
  const EncodingSpec* spec = find_encoding_if(
      [](const EncodingSpec& e) { return e.site == EncodingSite::scores && !e.trainable; });
  ASSERT_NE(spec, nullptr);
  EXPECT_FALSE(spec->has_table);
  EXPECT_FALSE(spec->trained_bias());
  for (std::size_t heads : {1, 3, 4, 6}) {
    ModelConfig cfg;
    cfg.vocab_size = 8;
    cfg.d_model = 12;
    cfg.n_heads = heads;
    cfg.n_layers = 1;
    cfg.d_ff = 16;
    cfg.pe = std::string(spec->name);
    cfg.max_seq_len = 0;
    Model model(cfg);
    constexpr std::size_t D = 300;
    Matrix<float> bias(heads, D);
    ASSERT_TRUE(model.encoding().scores_bias(bias.view()));
    const auto slopes = alibi_slopes(heads);
    for (std::size_t d = 0; d < D; ++d) {
      Matrix<float> one(heads, 1);  // query d against key 0, for every head
      alibi_forward(one.view(), slopes, 1, 1, {.start = d});
      for (std::size_t h = 0; h < heads; ++h) {
        ASSERT_EQ(std::memcmp(&bias(h, d), &one(h, 0), sizeof(float)), 0)
            << heads << " heads, head " << h << ", distance " << d;
      }
    }
    EXPECT_TRUE(model.encoding().tensors().empty());
    EXPECT_TRUE(spec->tensor_shapes(cfg).empty());
  }
}

}  // namespace
}  // namespace posemb::lab
