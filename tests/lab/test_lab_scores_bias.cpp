// The scores site for any bias (lab/encodings/encoding.hpp, lab/model/attention.hpp): a bias by
// distance given by an encoding, and the attention's backward handing its gradient back.
//
// 1. The attention alone: the backward's dbias (the scores' gradients summed along each diagonal)
//    against a double-precision reference, whose own formula is checked by central finite
//    differences; adding it into dbias leaves dqkv bit for bit as without; the same bits on 1 and
//    2 threads.
// 2. A whole model with a trained bias: a test encoding not in the registry (a table of rows by
//    clipped distance, the smallest trained bias; T5's buckets: test_lab_t5_bias.cpp) plugged in
//    through lab::Model's second constructor. Its tensor is described by its spec and listed by
//    Model::tensor_shapes, the model's gradient of it matches finite differences of the loss, the
//    micro-batch buffers get the same bits, the decoder gives the forward's logits, and a
//    checkpoint carries it under its name and shape.
// 3. The claims choose their encodings by properties that a trained bias cannot satisfy in
//    ALiBi's place.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/decoder.hpp"
#include "lab/model/model.hpp"
#include "lab/report/claims.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab_reference.hpp"
#include "posemb/embedding.hpp"
#include "posemb/safetensors.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

namespace ref = reference;
constexpr double kEps = std::numeric_limits<float>::epsilon();

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

// ---- 1. The attention's bias gradient --------------------------------------------------------

constexpr std::size_t B = 2, T = 11, H = 3, hd = 5, C = H * hd;

// sum(w . y) of the double reference with bias `bias` (H, T).
double reference_loss(const ref::Grid& qkv, const ref::Grid& bias, const ref::Grid& w) {
  ref::Grid y;
  std::vector<double> p;
  ref::attention(y, p, qkv, B, T, H, {}, &bias);
  double l = 0;
  for (std::size_t r = 0; r < B * T; ++r) {
    for (std::size_t i = 0; i < C; ++i) l += y(r, i) * w(r, i);
  }
  return l;
}

// The reference's dbias is the gradient: central differences of its loss in double, h = 1e-6
// (truncation of order h^2, roundoff 1e-16 / h: both below 1e-8 of the loss's scale).
TEST(ScoresBias, TheReferenceGradientIsTheLossesDerivative) {
  const auto qkv = grid(random_matrix(B * T, 3 * C, 81, 1.2f));
  const auto w = grid(random_matrix(B * T, C, 82, 1.0f));
  ref::Grid bias = grid(random_matrix(H, T, 83, 1.0f));
  ref::Grid y, dqkv, dbias(H, T);
  std::vector<double> probs;
  ref::attention(y, probs, qkv, B, T, H, {}, &bias);
  ref::attention_backward(dqkv, w, probs, qkv, B, T, H, &dbias);
  const double h = 1e-6;
  double gmax = 0;
  for (std::size_t i = 0; i < H; ++i) {
    for (std::size_t d = 0; d < T; ++d) {
      const double orig = bias(i, d);
      bias(i, d) = orig + h;
      const double lp = reference_loss(qkv, bias, w);
      bias(i, d) = orig - h;
      const double lm = reference_loss(qkv, bias, w);
      bias(i, d) = orig;
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(dbias(i, d), fd, 1e-7 * (1.0 + std::fabs(fd))) << "head " << i << " d " << d;
      gmax = std::max(gmax, std::fabs(fd));
    }
  }
  EXPECT_GT(gmax, 0.05);  // the bias matters
}

// The float kernel against the reference: each dbias(h, d) is a sum over the B (T - d) pairs of
// that diagonal of p (dp - dot), each term within (hd + T + 4) eps of p (|dp| + |dot|), the sum
// adding B T eps of their total: the bound is that many eps times the sum of the magnitudes,
// computed here from the reference.
TEST(ScoresBias, KernelGradientMatchesTheReferenceAndAddsInto) {
  const auto qkv = random_matrix(B * T, 3 * C, 84, 1.2f), w = random_matrix(B * T, C, 85, 1.0f);
  const auto bias = random_matrix(H, T, 86, 1.0f);
  Matrix<float> y(B * T, C), dqkv(B * T, 3 * C), dbias(H, T);
  std::vector<float> probs(B * H * T * T);
  attention_forward(y, probs, qkv, B, T, H, bias);
  for (float& v : dbias.flat()) v = 1.0f;  // added into
  attention_backward(dqkv, dbias, w, probs, qkv, B, T, H);
  ref::Grid ry, rd, want(H, T);
  std::vector<double> rp;
  const ref::Grid rq = grid(qkv), rw = grid(w), rb = grid(bias);
  ref::attention(ry, rp, rq, B, T, H, {}, &rb);
  ref::attention_backward(rd, rw, rp, rq, B, T, H, &want);
  // The magnitude of each diagonal's terms.
  ref::Grid mag(H, T);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t t = 0; t < T; ++t) {
        const double* p = &rp[((b * H + h) * T + t) * T];
        std::vector<double> dp(t + 1);
        double dot = 0;
        for (std::size_t u = 0; u <= t; ++u) {
          for (std::size_t i = 0; i < hd; ++i)
            dp[u] += rw(b * T + t, h * hd + i) * rq(b * T + u, 2 * C + h * hd + i);
          dot += p[u] * dp[u];
        }
        for (std::size_t u = 0; u <= t; ++u)
          mag(h, t - u) += p[u] * (std::fabs(dp[u]) + std::fabs(dot));
      }
    }
  }
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t d = 0; d < T; ++d) {
      const double tol = 4 * (hd + T + 4 + B * T) * kEps * mag(h, d) + kEps;
      EXPECT_NEAR(dbias(h, d) - 1.0, want(h, d), tol) << "head " << h << " d " << d;
    }
  }
  // dqkv is the same with or without the bias's gradient.
  Matrix<float> plain(B * T, 3 * C);
  attention_backward(plain, {}, w, probs, qkv, B, T, H);
  EXPECT_EQ(std::memcmp(plain.data(), dqkv.data(), plain.size() * sizeof(float)), 0);
}

TEST(ScoresBias, GradientIsTheSameOnOneAndTwoThreads) {
  const auto qkv = random_matrix(B * T, 3 * C, 87, 1.2f), w = random_matrix(B * T, C, 88, 1.0f);
  const auto bias = random_matrix(H, T, 89, 1.0f);
  auto run = [&] {
    Matrix<float> y(B * T, C), d(B * T, 3 * C), dbias(H, T);
    std::vector<float> probs(B * H * T * T);
    attention_forward(y, probs, qkv, B, T, H, bias);
    attention_backward(d, dbias, w, probs, qkv, B, T, H);
    return std::vector<float>(dbias.data(), dbias.data() + dbias.size());
  };
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run();
  omp_set_num_threads(2);
  const auto two = run();
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

// ---- 2. A model with a trained bias ----------------------------------------------------------

constexpr std::size_t kRows = 12;                        // distances 0..11; 11 and past share a row
constexpr const char* kTensor = "distance_bias.weight";  // (kRows, heads)

// A trained bias by distance: bias(h, d) = table(min(d, kRows - 1), h).
class DistanceBias final : public Encoding {
 public:
  explicit DistanceBias(const ModelConfig& cfg)
      : table_(kRows, cfg.n_heads), grad_(kRows, cfg.n_heads) {}
  void embed_forward(MatrixView<float> x0, MatrixView<const TokenId> tokens, const PositionSource&,
                     MatrixView<const float> wte) const override {
    posemb::embed_forward(x0, tokens, wte);
  }
  void embed_backward(MatrixView<float> dwte, std::span<const MatrixView<float>>,
                      MatrixView<const float> dx0, MatrixView<const TokenId> tokens,
                      const PositionSource&) const override {
    posemb::embed_backward(dwte, dx0, tokens);
  }
  bool scores_bias(MatrixView<float> bias) const override {
    for (std::size_t h = 0; h < bias.rows(); ++h) {
      for (std::size_t d = 0; d < bias.cols(); ++d) bias(h, d) = table_(row(d), h);
    }
    return true;
  }
  void scores_bias_backward(std::span<const MatrixView<float>> grads,
                            MatrixView<const float> dbias) const override {
    for (std::size_t h = 0; h < dbias.rows(); ++h) {
      for (std::size_t d = 0; d < dbias.cols(); ++d) grads[0](row(d), h) += dbias(h, d);
    }
  }
  std::vector<TensorSlot> tensors() override { return {{kTensor, table_.view(), grad_.view()}}; }
  void zero_grad() override { std::fill(grad_.flat().begin(), grad_.flat().end(), 0.0f); }

 private:
  static std::size_t row(std::size_t d) { return std::min(d, kRows - 1); }
  Matrix<float> table_, grad_;  // (kRows, heads)
};

const EncodingSpec kDistanceBias{
    .name = "distance-bias (test)",
    .summary = "a trained bias by clipped distance",
    .has_table = false,
    .site = EncodingSite::scores,
    .in_demo = true,
    .table_tensor = "",
    .trainable = true,
    .tensors = [](const ModelConfig& cfg) -> std::vector<TensorInfo> {
      return {{kTensor, kRows, cfg.n_heads}};
    },
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate = nullptr,
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<DistanceBias>(cfg);
    },
};

ModelConfig bias_model_config() {
  ModelConfig cfg;
  cfg.vocab_size = task_vocab_size([] {
    TaskConfig t;
    t.kind = "copy";
    t.alphabet = 4;
    return t;
  }());
  cfg.d_model = 16;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 32;
  cfg.pe = std::string(kDistanceBias.name);
  cfg.init_std = 0.3;
  return cfg;
}

// A model of the test encoding, initialized, its bias table N(0, 0.5).
std::unique_ptr<Model> bias_model() {
  auto m = std::make_unique<Model>(bias_model_config(), kDistanceBias);
  m->initialize(5);
  m->reserve_positions(kRows);  // the model asks any encoding without a table (a no-op here)
  std::mt19937_64 rng(6);
  std::normal_distribution<float> n(0.0f, 0.5f);
  const MatrixView<float> table = m->tensors()[1].value;
  for (std::size_t r = 0; r < table.rows(); ++r) {
    for (float& v : table.row(r)) v = n(rng);
  }
  return m;
}

// A copy batch of 3 rows of n <= 4 (10 tokens): distances 0..9 reach rows 0..9 of the table.
Batch copy_batch() {
  TaskConfig task;
  task.kind = "copy";
  task.alphabet = 4;
  task.train_len = 4;
  Batch batch;
  find_task(task.kind).train_batch(batch, task, 3, 2, 0, PositionMode::contiguous, 0);
  return batch;
}

TEST(ScoresBias, TheEncodingsTensorIsDescribedByItsSpecAndListedByTheModel) {
  const ModelConfig cfg = bias_model_config();
  EXPECT_TRUE(kDistanceBias.trained_bias());
  const auto shapes = Model::tensor_shapes(cfg, kDistanceBias);
  ASSERT_GE(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].name, "wte.weight");
  EXPECT_EQ(shapes[1].name, kTensor);
  EXPECT_EQ(shapes[1].rows, kRows);
  EXPECT_EQ(shapes[1].cols, cfg.n_heads);
  Model model(cfg, kDistanceBias);
  const auto slots = model.tensors();
  ASSERT_EQ(slots.size(), shapes.size());
  for (std::size_t k = 0; k < slots.size(); ++k) {
    EXPECT_EQ(slots[k].name, shapes[k].name);
    EXPECT_EQ(slots[k].value.rows(), shapes[k].rows) << shapes[k].name;
    EXPECT_EQ(slots[k].value.cols(), shapes[k].cols) << shapes[k].name;
  }
  // Its memory counted with the model's: the parameters' and the table's values and gradients.
  EXPECT_EQ(Model::bytes(cfg, kDistanceBias, 0),
            2 * sizeof(float) * (Parameters::arena_floats(cfg) + kRows * cfg.n_heads));
  ModelConfig other = cfg;
  other.pe = "learned";  // not the spec's name
  EXPECT_THROW(Model(other, kDistanceBias), ConfigError);
}

// d(loss)/d(table) from Model::backward against central differences of Model::forward's loss,
// h = 1e-2: the float loss's rounding (about 64 eps of the loss, over 2h) and the truncation
// (h^2 times the third derivative, small at this scale) bound the difference; rows no distance
// reaches have a gradient of exactly 0.
TEST(ScoresBias, ModelGradientOfTheBiasMatchesFiniteDifferences) {
  auto model = bias_model();
  const Batch batch = copy_batch();
  const ModelConfig& cfg = model->config();
  const std::size_t Tb = batch.tokens.cols();
  ASSERT_LT(Tb, kRows);
  Activations acts(cfg, 3, Tb);
  const double loss = model->forward(acts, batch.tokens, batch.positions, batch.targets);
  model->zero_grad();
  model->backward(acts);
  const MatrixView<float> table = model->tensors()[1].value;
  const Matrix<float> g = [&] {
    const MatrixView<float> v = model->tensors()[1].grad;
    Matrix<float> copy(v.rows(), v.cols());
    for (std::size_t r = 0; r < v.rows(); ++r)
      std::copy_n(v.row(r).data(), v.cols(), copy.row(r).data());
    return copy;
  }();
  const double h = 1e-2;
  const double tol = 64 * kEps * loss / h;
  double gmax = 0, worst = 0;
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t c = 0; c < cfg.n_heads; ++c) {
      if (r >= Tb) {
        EXPECT_EQ(g(r, c), 0.0f) << "row " << r << " (no distance reaches it)";
        continue;
      }
      const float orig = table(r, c);
      table(r, c) = static_cast<float>(orig + h);
      const double lp = model->forward(acts, batch.tokens, batch.positions, batch.targets);
      table(r, c) = static_cast<float>(orig - h);
      const double lm = model->forward(acts, batch.tokens, batch.positions, batch.targets);
      table(r, c) = orig;
      const double fd = (lp - lm) / (2 * h);
      gmax = std::max(gmax, std::fabs(fd));
      worst = std::max(worst, std::fabs(fd - g(r, c)) - 0.02 * std::fabs(fd));
    }
  }
  EXPECT_GT(gmax, 1e-2);  // the bias is trained by this loss
  EXPECT_LE(worst, tol) << "largest |backward - finite difference| beyond 2% of it";
}

// The trainer's micro-batch buffers get the model's own gradient, bit for bit; the decoder gives
// the forward's logits (the same bias by distance, row by row) to the decoder test's bound.
TEST(ScoresBias, MicroBatchBuffersAndTheDecoderAgreeWithTheForward) {
  auto model = bias_model();
  const Batch batch = copy_batch();
  const ModelConfig& cfg = model->config();
  const std::size_t Tb = batch.tokens.cols();
  Activations acts(cfg, 3, Tb);
  model->forward(acts, batch.tokens, batch.positions, batch.targets);
  model->zero_grad();
  model->backward(acts);
  Gradients buf = model->make_gradients();
  model->backward(acts, &buf);
  ASSERT_EQ(buf.encoding.size(), 1u);
  const MatrixView<float> own = model->tensors()[1].grad;
  for (std::size_t r = 0; r < own.rows(); ++r) {
    EXPECT_EQ(
        std::memcmp(buf.encoding[0].row(r).data(), own.row(r).data(), own.cols() * sizeof(float)),
        0)
        << "row " << r;
  }
  Decoder dec(*model, 3, Tb);
  double top = 1.0, worst = 0.0;
  for (std::size_t r = 0; r < 3 * Tb; ++r) {
    for (float v : acts.logits.row(r)) top = std::max(top, double(std::fabs(v)));
  }
  for (std::size_t t = 0; t < Tb; ++t) {
    std::vector<TokenId> tok(3);
    for (std::size_t b = 0; b < 3; ++b) tok[b] = batch.tokens(b, t);
    const auto logits = dec.step(tok);
    for (std::size_t b = 0; b < 3; ++b) {
      for (std::size_t v = 0; v < cfg.vocab_size; ++v) {
        worst = std::max(worst, double(std::fabs(logits(b, v) - acts.logits(b * Tb + t, v))));
      }
    }
  }
  // The decoder test's bound (test_lab_decoder.cpp): 4 (4 layers + 1) 2 K eps of the largest logit.
  const double K = static_cast<double>(std::max(cfg.d_model, cfg.d_ff));
  EXPECT_LE(worst, 4.0 * (4.0 * static_cast<double>(cfg.n_layers) + 1.0) * 2.0 * K * kEps * top);
}

TEST(ScoresBias, ACheckpointCarriesTheBiasUnderItsNameAndShape) {
  test::TempDir dir;
  auto model = bias_model();
  RunConfig run;
  run.model = model->config();
  run.task.kind = "copy";
  run.task.alphabet = 4;
  run.task.train_len = 4;
  AdamW opt(AdamWConfig{});
  const std::string path = dir.file("bias.safetensors");
  write_checkpoint(path, *model, opt, run, 0);
  const TensorFile f = read_safetensors(path);
  const Tensor* t = f.find(kTensor);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape(), (std::vector<std::uint64_t>{kRows, model->config().n_heads}));
  const Matrix<float> back = t->to_matrix<float>();
  const MatrixView<float> table = model->tensors()[1].value;
  for (std::size_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(std::memcmp(back.row(r).data(), table.row(r).data(), table.cols() * sizeof(float)),
              0);
  }
}

// ---- 3. The claims' roles --------------------------------------------------------------------

// Every role is one registered encoding's, and a trained bias on the scores plays none of them
// (in particular not ALiBi's: the property `trainable` tells them apart).
TEST(ScoresBias, ClaimsNeverTakeATrainedBiasForAnother) {
  for (const ClaimRole& role : claim_roles()) {
    const EncodingSpec* e = encoding_of(role);
    ASSERT_NE(e, nullptr) << role.role;
    std::size_t matches = 0;
    for (const auto* r : encodings()) matches += role.matches(*r) ? 1 : 0;
    EXPECT_EQ(matches, 1u) << role.role;
    EXPECT_FALSE(role.matches(kDistanceBias)) << role.role;
  }
}

}  // namespace
}  // namespace posemb::lab
