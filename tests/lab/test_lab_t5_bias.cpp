// The lab's t5-bias encoding (lab/encodings/t5_bias.cpp): T5's learned relative bias, one
// (num_buckets, heads) table shared by every layer, through the scores site.
//
// 1. The defaults train every bucket: for every training length L in 2..2048 tokens, the
//    distance L - 1 already falls in the last bucket (and T5's own (32, 128) at L = 64 would not,
//    so the check can fail).
// 2. The bias: the encoding's rows are the library's buckets' values bit for bit, and the model's
//    attention weights equal a plain double recomputation from its own q, k and the library's
//    (H, T, T) bias (posemb::relative_bias_forward) added to the scores.
// 3. The gradient of the table through the model's loss against central finite differences;
//    buckets no distance reaches get exactly 0; the micro-batch buffers the same bits.
// 4. Training: the same bits on 1 and 2 threads; a checkpoint carries the table and the buckets
//    and loads back bit for bit; a checkpoint edited to a table of another shape is refused in
//    one line naming both shapes.
// 5. The settings: the buckets only with this encoding, the library's refusals as ConfigError,
//    the run JSON round trip. (The whole model against PyTorch with HF's bucket function:
//    test_lab_model_torch, every encoding; the claims never take it for ALiBi:
//    test_lab_scores_bias.)
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
#include "lab/model/model.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/symbols.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "posemb/errors.hpp"
#include "posemb/relative_bias.hpp"
#include "posemb/safetensors.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

constexpr double kEps = std::numeric_limits<float>::epsilon();

// m's values, row by row (a view may be strided: no flat()).
std::vector<float> values_of(MatrixView<const float> m) {
  std::vector<float> out;
  for (std::size_t r = 0; r < m.rows(); ++r)
    out.insert(out.end(), m.row(r).begin(), m.row(r).end());
  return out;
}
template <class F>
void for_each_value(MatrixView<float> m, F&& f) {
  for (std::size_t r = 0; r < m.rows(); ++r) {
    for (float& v : m.row(r)) f(v);
  }
}

// The registered encoding with relative-position buckets and a trained bias on the scores.
const EncodingSpec& t5_spec() {
  const EncodingSpec* spec = find_encoding_if(
      [](const EncodingSpec& e) { return e.trained_bias() && e.has_relative_buckets(); });
  EXPECT_NE(spec, nullptr);
  return *spec;
}

RelativeBuckets causal(const RelativeBiasConfig& b) {
  return {.num_buckets = b.num_buckets, .max_distance = b.max_distance, .bidirectional = false};
}

// A 2-layer, 2-head model of the encoding over copy with n <= 4 (10 tokens), buckets b, weights
// N(0, 0.3) and the table N(0, 0.5) (far from uniform attention and from a zero bias).
ModelConfig t5_model_config(RelativeBiasConfig b) {
  ModelConfig cfg = testing::tiny_model_config(std::string(t5_spec().name), 0);
  cfg.vocab_size = task_vocab_size([] {
    TaskConfig t;
    t.kind = testing::kCopy;
    t.alphabet = 4;
    return t;
  }());
  cfg.relative_bias = b;
  return cfg;
}

std::unique_ptr<Model> t5_model(RelativeBiasConfig b) {
  auto m = std::make_unique<Model>(t5_model_config(b));
  m->initialize(5);
  m->reserve_positions(16);  // the model asks any encoding without a table (a no-op here)
  std::mt19937_64 rng(6);
  std::normal_distribution<float> n(0.0f, 0.5f);
  for_each_value(m->encoding().tensors().front().value, [&](float& v) { v = n(rng); });
  return m;
}

Batch copy_batch(std::size_t rows = 3) {
  TaskConfig task;
  task.kind = testing::kCopy;
  task.alphabet = 4;
  task.train_len = 4;
  Batch batch;
  find_task(task.kind).train_batch(batch, task, rows, 2, 0, PositionMode::contiguous, 0);
  return batch;
}

// ---- 1. The defaults -------------------------------------------------------------------------

TEST(T5Bias, DefaultBucketsAreAllTrainedAtTheTrainingLength) {
  const EncodingSpec& spec = t5_spec();
  for (std::size_t L = 2; L <= 2048; ++L) {
    const RelativeBiasConfig b = spec.relative_bias_for(L);
    ASSERT_EQ(b.num_buckets, std::min<std::size_t>(L, 32)) << "L " << L;
    ASSERT_EQ(b.max_distance, std::max<std::size_t>(L, b.num_buckets / 2 + 1)) << "L " << L;
    // Buckets grow with the distance: the last one reached by L - 1 is every bucket trained.
    ASSERT_EQ(t5_relative_bucket(-static_cast<std::int64_t>(L - 1), causal(b)), b.num_buckets - 1)
        << "L " << L << ": a bucket is reached only past the training length";
  }
  // T5's own setting at L = 64 leaves buckets that only distances past 64 reach.
  EXPECT_LT(t5_relative_bucket(-63, causal({32, 128})), 31u);
  // What the user sets is kept; the rest is filled.
  EXPECT_EQ(spec.relative_bias_for(100, {16, 0}), (RelativeBiasConfig{16, 100}));
  EXPECT_EQ(spec.relative_bias_for(100, {0, 300}), (RelativeBiasConfig{32, 300}));
  EXPECT_EQ(spec.relative_bias_for(10, {64, 0}), (RelativeBiasConfig{64, 33}));
}

// ---- 2. The bias -----------------------------------------------------------------------------

TEST(T5Bias, RowsByDistanceAreTheLibrarysBucketsValues) {
  for (const RelativeBiasConfig b : {RelativeBiasConfig{8, 6}, RelativeBiasConfig{32, 128},
                                     RelativeBiasConfig{18, 18}, RelativeBiasConfig{2, 2}}) {
    ModelConfig cfg = t5_model_config(b);
    cfg.n_heads = 4;
    Model model(cfg);
    model.initialize(7);
    const auto enc = model.encoding().tensors();
    ASSERT_EQ(enc.size(), 1u);
    const MatrixView<float> table = enc[0].value;
    ASSERT_EQ(table.rows(), b.num_buckets);
    ASSERT_EQ(table.cols(), 4u);
    for (std::size_t D : {1u, 2u, 7u, 300u}) {
      Matrix<float> rows(4, D);
      ASSERT_TRUE(model.encoding().scores_bias(rows.view()));
      for (std::size_t h = 0; h < 4; ++h) {
        for (std::size_t d = 0; d < D; ++d) {
          const std::size_t bucket = t5_relative_bucket(-static_cast<std::int64_t>(d), causal(b));
          ASSERT_EQ(std::memcmp(&rows(h, d), &table(bucket, h), sizeof(float)), 0)
              << "buckets " << b.num_buckets << "/" << b.max_distance << " D " << D << " head " << h
              << " distance " << d;
        }
      }
    }
  }
}

// The attention weights of every layer, head and query against softmax(q.k / sqrt(hd) + bias) in
// double, bias the library's (H, T, T) of T queries at 0..T-1 (no distances, no reversal): the
// float scores carry (hd + 2) eps of their magnitude and the sum of the bias one more rounding;
// exp and the normalization (T + 4) eps more.
TEST(T5Bias, ModelScoresAreTheLibrarysBiasAddedToTheScores) {
  auto model = t5_model({8, 6});
  const Batch batch = copy_batch();
  const ModelConfig& cfg = model->config();
  const std::size_t B = 3, T = batch.tokens.cols(), H = cfg.n_heads, hd = cfg.head_dim(),
                    C = cfg.d_model;
  Activations acts(cfg, B, T);
  model->forward(acts, batch.tokens, batch.positions, batch.targets);
  Matrix<float> bias(H * T, T);
  relative_bias_forward(bias.view(), model->encoding().tensors().front().value, causal({8, 6}), T);
  double worst = 0;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    const auto& blk = acts.blocks[l];
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t t = 0; t < T; ++t) {
          std::vector<double> s(t + 1);
          double top = -1e300, mag = 0;
          for (std::size_t u = 0; u <= t; ++u) {
            double dot = 0, abs_dot = 0;
            for (std::size_t i = 0; i < hd; ++i) {
              const double q = blk.qkv(b * T + t, h * hd + i);
              const double k = blk.qkv(b * T + u, C + h * hd + i);
              dot += q * k;
              abs_dot += std::fabs(q * k);
            }
            s[u] = dot / std::sqrt(double(hd)) + bias(h * T + t, u);
            mag = std::max(mag, abs_dot / std::sqrt(double(hd)) + std::fabs(bias(h * T + t, u)));
            top = std::max(top, s[u]);
          }
          double z = 0;
          for (double& v : s) z += (v = std::exp(v - top));
          const float* p = &blk.probs[((b * H + h) * T + t) * T];
          const double tol = (2 * (hd + 3) * mag + T + 4) * kEps;
          for (std::size_t u = 0; u <= t; ++u) {
            const double want = s[u] / z;
            EXPECT_NEAR(p[u], want, tol * want + kEps)
                << "layer " << l << " row " << b << " head " << h << " query " << t << " key " << u;
            worst = std::max(worst, std::fabs(p[u] - want));
          }
        }
      }
    }
  }
  // The bias matters: without it the weights differ by far more than the tolerance.
  std::vector<float> with(acts.blocks[0].probs.begin(), acts.blocks[0].probs.end());
  for_each_value(model->encoding().tensors().front().value, [](float& v) { v = 0.0f; });
  model->forward(acts, batch.tokens, batch.positions, batch.targets);
  double moved = 0;
  for (std::size_t k = 0; k < with.size(); ++k) {
    moved = std::max(moved, double(std::fabs(with[k] - acts.blocks[0].probs[k])));
  }
  EXPECT_GT(moved, 1e-2);
  EXPECT_LT(worst, 1e-5);
}

// ---- 3. The gradient -------------------------------------------------------------------------

// d(loss)/d(table) from Model::backward against central differences of Model::forward's loss,
// h = 1e-2 (the scores-bias test's bound: the float loss's rounding over 2h plus 2% truncation);
// with buckets (8, 6) the distances 0..9 reach buckets 0-4, 6, 7 (7 from distance 6 on), and
// bucket 5 none: its gradient is exactly 0.
TEST(T5Bias, ModelGradientOfTheTableMatchesFiniteDifferences) {
  auto model = t5_model({8, 6});
  const Batch batch = copy_batch();
  const ModelConfig& cfg = model->config();
  const std::size_t T = batch.tokens.cols();
  ASSERT_EQ(T, 10u);
  Activations acts(cfg, 3, T);
  const double loss = model->forward(acts, batch.tokens, batch.positions, batch.targets);
  model->zero_grad();
  model->backward(acts);
  const TensorSlot slot = model->encoding().tensors().front();
  Matrix<float> g(slot.grad.rows(), slot.grad.cols());
  const std::vector<float> g_values = values_of(slot.grad);
  std::copy(g_values.begin(), g_values.end(), g.flat().begin());
  // The micro-batch buffers: the same bits.
  Gradients buf = model->make_gradients();
  model->backward(acts, &buf);
  ASSERT_EQ(buf.encoding.size(), 1u);
  EXPECT_EQ(std::memcmp(buf.encoding[0].data(), g.data(), g.size() * sizeof(float)), 0);

  const double h = 1e-2, tol = 64 * kEps * loss / h;
  double gmax = 0, worst = 0;
  for (std::size_t r = 0; r < 8; ++r) {
    for (std::size_t c = 0; c < cfg.n_heads; ++c) {
      if (r == 5) {
        EXPECT_EQ(g(r, c), 0.0f) << "bucket 5 (no distance reaches it)";
        continue;
      }
      const float orig = slot.value(r, c);
      slot.value(r, c) = static_cast<float>(orig + h);
      const double lp = model->forward(acts, batch.tokens, batch.positions, batch.targets);
      slot.value(r, c) = static_cast<float>(orig - h);
      const double lm = model->forward(acts, batch.tokens, batch.positions, batch.targets);
      slot.value(r, c) = orig;
      const double fd = (lp - lm) / (2 * h);
      gmax = std::max(gmax, std::fabs(fd));
      worst = std::max(worst, std::fabs(fd - g(r, c)) - 0.02 * std::fabs(fd));
      EXPECT_NE(g(r, c), 0.0f) << "bucket " << r << " head " << c;
    }
  }
  EXPECT_GT(gmax, 1e-2);
  EXPECT_LE(worst, tol) << "largest |backward - finite difference| beyond 2% of it";
}

// ---- 4. Training and checkpoints -------------------------------------------------------------

RunConfig t5_run() {
  RunChoices c;
  c.pe = std::string(t5_spec().name);
  c.task = testing::kCopy;
  c.run.task.train_len = 4;
  c.run.task.alphabet = 4;
  c.run.model.d_model = 16;
  c.run.model.n_heads = 2;
  c.d_ff = 32;
  c.run.train.batch = 8;
  c.run.train.micro_batch = 2;
  c.run.train.warmup = 2;
  c.run.train.steps = 4;
  c.run.train.lr = 1e-2f;
  return complete_run(c);
}

std::vector<float> all_values(Model& m) {
  std::vector<float> out;
  for (const auto& s : m.tensors()) {
    const std::vector<float> v = values_of(s.value);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST(T5Bias, TrainingGivesTheSameBitsOnOneAndTwoThreads) {
  const RunConfig run = t5_run();
  EXPECT_EQ(run.model.relative_bias, (RelativeBiasConfig{10, 10}));  // copy n <= 4: 10 tokens
  auto train = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    Trainer tr(run);
    const std::vector<float> start = values_of(tr.model().encoding().tensors().front().value);
    for (int s = 0; s < 4; ++s) tr.train_step();
    omp_set_num_threads(saved);
    EXPECT_NE(values_of(tr.model().encoding().tensors().front().value), start)
        << "training did not move the table";
    return all_values(tr.model());
  };
  const auto one = train(1), two = train(2);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

TEST(T5Bias, CheckpointRoundTripAndAWrongShapeRefusedInOneLine) {
  test::TempDir dir;
  const RunConfig run = t5_run();
  Trainer tr(run);
  for (int s = 0; s < 2; ++s) tr.train_step();
  const std::string path = dir.file("t5.safetensors");
  tr.save(path);
  // The table under its name and shape; the buckets in the run settings.
  const TensorFile f = read_safetensors(path);
  const TensorSlot mine = tr.model().encoding().tensors().front();
  const Tensor* t = f.find(mine.name);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(mine.name, "relative_attention_bias.weight");
  EXPECT_EQ(t->shape(), (std::vector<std::uint64_t>{10, 2}));
  RunConfig back_run;
  Model back = load_model(path, &back_run);
  EXPECT_EQ(back_run.model.relative_bias, run.model.relative_bias);
  const auto a = all_values(tr.model()), b = all_values(back);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // Resumed: it continues bit for bit.
  Trainer again = Trainer::load(path);
  tr.train_step();
  again.train_step();
  const auto c = all_values(tr.model()), d = all_values(again.model());
  EXPECT_EQ(std::memcmp(c.data(), d.data(), c.size() * sizeof(float)), 0);

  // Edited: the table one bucket short (the optimizer's moments left as they were).
  TensorFile edited = read_safetensors(path);
  const Matrix<float> short_table(9, 2);
  for (Tensor& x : edited.tensors) {
    if (x.name() == mine.name) x = Tensor::from_matrix(mine.name, short_table);
  }
  const std::string bad = dir.file("edited.safetensors");
  write_safetensors(bad, edited.tensors, edited.metadata);
  try {
    (void)read_checkpoint(bad);
    FAIL() << "a table of 9 buckets was read for a run of 10";
  } catch (const FileFormatError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("relative_attention_bias.weight"), std::string::npos) << what;
    EXPECT_NE(what.find("[9, 2]"), std::string::npos) << what;
    EXPECT_NE(what.find("[10, 2]"), std::string::npos) << what;
  }
}

// ---- 5. The settings -------------------------------------------------------------------------

TEST(T5Bias, BucketsOnlyWithThisEncodingAndTheLibrarysRefusals) {
  RunConfig run = t5_run();
  EXPECT_NO_THROW(validate_run(run));
  auto refused = [](const RunConfig& r, const std::string& field, const std::string& words) {
    try {
      validate_run(r);
      ADD_FAILURE() << words << ": accepted";
    } catch (const ConfigError& e) {
      const auto& f = e.fields();
      EXPECT_NE(std::find(f.begin(), f.end(), field), f.end()) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  RunConfig none = run;
  none.model.relative_bias = {};
  refused(none, "model.relative_bias.num_buckets", "needs its relative-position buckets");
  RunConfig small = run;
  small.model.relative_bias = {32, 16};  // max_exact 16: HF would divide by log(1)
  refused(small, "model.relative_bias.max_distance", "max_distance = 16 must be above");
  RunConfig half = run;
  half.model.relative_bias = {0, 12};
  refused(half, "model.relative_bias.num_buckets", "num_buckets 0 must be in [2, 4096]");
  RunConfig other = run;
  other.model.pe = "alibi";
  refused(other, "model.relative_bias.num_buckets", "has none (they must be 0)");
  // complete_run: given values kept, an encoding without buckets refuses them.
  RunChoices c;
  c.pe = "alibi";
  c.relative_bias = {16, 0};
  EXPECT_THROW(complete_run(c), ConfigError);
  c.relative_bias = {};
  EXPECT_TRUE(complete_run(c).model.relative_bias.empty());
  c.pe = std::string(t5_spec().name);
  c.relative_bias = {16, 0};
  EXPECT_EQ(complete_run(c).model.relative_bias,
            (RelativeBiasConfig{16, symbols::tokens(c.run.task.train_len)}));
}

TEST(T5Bias, RunJsonCarriesTheBucketsOnlyWhenSet) {
  const RunConfig run = t5_run();
  const std::string json = run.to_json();
  EXPECT_NE(json.find("\"relative_bias\":{\"num_buckets\":10,\"max_distance\":10}"),
            std::string::npos)
      << json;
  EXPECT_EQ(RunConfig::from_json(json).model.relative_bias, run.model.relative_bias);
  RunConfig alibi = run;
  alibi.model.pe = "alibi";
  alibi.model.relative_bias = {};
  EXPECT_EQ(alibi.to_json().find("relative_bias"), std::string::npos);
  auto refused = [](std::string text, const std::string& words) {
    try {
      (void)RunConfig::from_json(text);
      ADD_FAILURE() << text << ": accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = json;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  refused(edit("\"max_distance\":10", "\"max_distance\":10,\"bidirectional\":true"),
          "not a setting of this version");
  refused(edit("\"num_buckets\":10", "\"num_buckets\":-3"), "not a whole number");
  refused(
      edit("{\"num_buckets\":10,\"max_distance\":10}", "{\"num_buckets\":0,\"max_distance\":0}"),
      "has none");
  refused(edit(",\"max_distance\":10", ""), "max_distance is missing");
  refused(edit("{\"num_buckets\":10,\"max_distance\":10}", "[10,10]"), "not an object");
}

}  // namespace
}  // namespace posemb::lab
