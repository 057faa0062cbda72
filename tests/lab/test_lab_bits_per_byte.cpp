// A text model's evaluation (lab::evaluate on the text task: Press et al.'s windows, the loss by
// position bucket, the sliding windows) against two independent recomputations on the same
// weights: each window alone through Model::forward with its log-softmax taken here in double
// from the logits, and PyTorch (tests/oracles/lab_model_oracle.py, float64) on every window at
// once; buckets adding up to the whole, the same bits on 1 and 2 threads, a learned table too
// short reported beyond_table, a length the validation text cannot hold refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/corpus.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/tasks/text.hpp"
#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"
#include "temp_dir.hpp"

namespace posemb::lab {
namespace {

namespace fs = std::filesystem;

// Text-like bytes: words of letters and spaces, some multi-byte characters.
std::string texty(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s;
  while (s.size() < n) {
    const std::size_t len = 1 + rng() % 8;
    for (std::size_t i = 0; i < len; ++i) s += static_cast<char>('a' + rng() % 26);
    s += rng() % 11 == 0 ? "\xe2\x80\x94" : (rng() % 7 == 0 ? ".\n" : " ");
  }
  s.resize(n);
  return s;
}

ModelConfig tiny(const std::string& pe, std::size_t rows = 0) {
  ModelConfig c;
  c.vocab_size = text::kVocab;
  c.d_model = 16;
  c.n_heads = 2;
  c.n_layers = 2;
  c.d_ff = 24;
  c.pe = pe;
  c.max_seq_len = find_encoding(pe).has_table ? (rows != 0 ? rows : 64) : 0;
  c.relative_bias = find_encoding(pe).relative_bias_for(24);  // t5-bias: trained on 24 bytes
  c.init_std = 0.3;
  return c;
}

// The bits per byte of plan recomputed window by window: Model::forward on the window alone,
// then -log softmax(logits)[target] in double here. Also each per-byte loss's magnitude plus one,
// summed, for the tolerance.
struct Plain {
  double nll = 0.0, magnitude = 0.0;
  std::vector<double> bucket_nll;
};
Plain recompute(Model& model, const Corpus& corpus, const WindowPlan& plan,
                std::size_t bucket_len) {
  const std::size_t T = plan.tokens, S = plan.stride, V = model.config().vocab_size;
  const auto v = corpus.validation();
  Plain out;
  out.bucket_nll.assign((T + bucket_len - 1) / bucket_len, 0.0);
  Activations acts(model.config(), 1, T);
  Matrix<TokenId> tok(1, T);
  Matrix<std::int64_t> pos(1, T);
  Matrix<std::int32_t> tgt(1, T);
  for (std::size_t k = 0; k < plan.windows; ++k) {
    for (std::size_t t = 0; t < T; ++t) {
      tok(0, t) = v[k * S + t];
      pos(0, t) = static_cast<std::int64_t>(t);
      tgt(0, t) = v[k * S + t + 1];
    }
    (void)model.forward(acts, tok, pos, tgt);
    for (std::size_t t = (k == 0 ? 0 : T - S); t < T; ++t) {
      const float* l = acts.logits.row(t).data();
      double mx = l[0];
      for (std::size_t j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(l[j]));
      double sum = 0.0;
      for (std::size_t j = 0; j < V; ++j) sum += std::exp(static_cast<double>(l[j]) - mx);
      const double loss = std::log(sum) + mx - static_cast<double>(l[tgt(0, t)]);
      out.nll += loss;
      out.magnitude += std::fabs(loss) + 1.0;
      out.bucket_nll[t / bucket_len] += loss;
    }
  }
  return out;
}

// A text task over a corpus file of `bytes` text-like bytes, its buckets `bucket` positions wide
// (the training length).
struct TextCase {
  test::TempDir dir;
  TaskConfig task;
  std::shared_ptr<const Corpus> corpus;
  TextCase(std::size_t bytes, std::uint64_t seed, std::size_t bucket) {
    const std::string path = dir.file("corpus.txt");
    std::ofstream(path, std::ios::binary) << texty(bytes, seed);
    task.kind = "text";
    task.train_len = bucket;
    task.corpus = path;
    complete_task(task);
    corpus = corpus_of(task);
  }
};

// Positions 0..T-1 for every encoding (as the recomputation's): learned-randomized too.
EvalConfig lengths(std::vector<std::size_t> l, std::size_t stride) {
  EvalConfig e;
  e.lengths = std::move(l);
  e.stride = stride;
  e.randomized_eval = PositionMode::contiguous;
  return e;
}

class BitsPerByte : public ::testing::TestWithParam<std::string> {};

TEST_P(BitsPerByte, EqualsAPlainRecomputationWindowByWindow) {
  const std::string pe = GetParam();
  const TextCase c(3000, 4, 8);  // 300 validation bytes
  Model model(tiny(pe));
  model.initialize(3);
  for (const std::size_t T : {16, 33, 64}) {
    for (const std::size_t S : {T, T / 2 + 1, std::size_t{1}}) {
      SCOPED_TRACE(pe + " T " + std::to_string(T) + " S " + std::to_string(S));
      const auto got = evaluate(model, c.task, lengths({T}, S));
      ASSERT_EQ(got.size(), 1u);
      const LengthResult& l = got[0];
      ASSERT_FALSE(l.beyond_table) << l.detail;
      const auto v = c.corpus->validation().size();
      const auto press = text::plan_windows(v, T, T), sliding = text::plan_windows(v, T, S);
      const Plain ref = recompute(model, *c.corpus, press, 8);
      const Plain ref_s = recompute(model, *c.corpus, sliding, 8);
      // Each byte's loss is the kernel's float arithmetic against double here: a few float
      // roundings of its magnitude each.
      const double tol = 16.0 * FLT_EPSILON * ref.magnitude;
      EXPECT_EQ(l.counted, press.scored);
      EXPECT_EQ(l.dropped, press.dropped);
      EXPECT_EQ(l.samples, press.windows);
      EXPECT_NEAR(l.loss * static_cast<double>(press.scored), ref.nll, tol);
      EXPECT_EQ(l.sliding.stride, S);
      EXPECT_EQ(l.sliding.counted, sliding.scored);
      EXPECT_EQ(l.sliding.dropped, sliding.dropped);
      EXPECT_NEAR(l.sliding.loss * static_cast<double>(sliding.scored), ref_s.nll,
                  16.0 * FLT_EPSILON * ref_s.magnitude);
      ASSERT_EQ(l.buckets.size(), ref.bucket_nll.size());
      double sum = 0.0;
      std::size_t count = 0;
      for (std::size_t b = 0; b < l.buckets.size(); ++b) {
        EXPECT_EQ(l.buckets[b].begin, 8 * b);
        EXPECT_EQ(l.buckets[b].end, std::min(T, 8 * b + 8));
        EXPECT_NEAR(l.buckets[b].nll, ref.bucket_nll[b], tol);
        sum += l.buckets[b].nll;
        count += l.buckets[b].count;
      }
      EXPECT_EQ(count, press.scored);
      EXPECT_NEAR(sum, l.loss * static_cast<double>(press.scored), 1e-9 * ref.magnitude);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, BitsPerByte, ::testing::ValuesIn(encoding_name_list()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return s;
                         });

// PyTorch (float64) on the same weights and every non-overlapping window as one batch: its mean
// loss is our bits per byte times ln 2.
TEST(BitsPerByte, EqualsPyTorchOnTheSameWeights) {
  const TextCase c(2000, 9, 24);  // 200 validation bytes
  for (const std::string pe : {"learned", "sinusoidal", "alibi"}) {
    SCOPED_TRACE(pe);
    const ModelConfig cfg = tiny(pe);
    Model model(cfg);
    model.initialize(7);
    const LengthResult got = evaluate(model, c.task, lengths({24}, 0)).at(0);
    const auto plan = text::plan_windows(c.corpus->validation().size(), 24, 24);
    Batch batch;
    text::fill_windows(batch, *c.corpus, plan, 0, plan.windows, PositionMode::contiguous, 0, 1);
    const fs::path dir = c.dir.path() / ("torch_" + pe);
    fs::create_directories(dir);
    const auto write_i64 = [&](const char* name, const auto& m) {
      std::vector<std::int64_t> v(m.data(), m.data() + m.size());
      std::ofstream(dir / name, std::ios::binary)
          .write(reinterpret_cast<const char*>(v.data()),
                 static_cast<std::streamsize>(v.size() * sizeof(std::int64_t)));
    };
    write_i64("tokens.i64", batch.tokens);
    write_i64("positions.i64", batch.positions);
    write_i64("targets.i64", batch.targets);
    for (const auto& s : model.tensors()) {
      std::ofstream(dir / ("param." + s.name + ".f32"), std::ios::binary)
          .write(reinterpret_cast<const char*>(s.value.data()),
                 static_cast<std::streamsize>(s.value.size() * sizeof(float)));
    }
    std::ofstream(dir / "case.json")
        << "{\"batch\": " << plan.windows << ", \"seq_len\": " << plan.tokens
        << ", \"config\": {\"vocab_size\": " << cfg.vocab_size << ", \"d_model\": " << cfg.d_model
        << ", \"n_layers\": " << cfg.n_layers << ", \"n_heads\": " << cfg.n_heads
        << ", \"d_ff\": " << cfg.d_ff << ", \"pe\": \"" << pe
        << "\", \"max_seq_len\": " << cfg.max_seq_len << "}}\n";
    const std::string cmd = std::string(POSEMB_ORACLE_PYTHON) + " " + POSEMB_TESTS_DIR +
                            "/oracles/lab_model_oracle.py " + dir.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    double mean = 0.0;
    std::ifstream(dir / "loss.txt") >> mean;
    // The model in float against float64: the loss to a few float roundings of its size per
    // operation along the forward's sums.
    EXPECT_EQ(got.counted, plan.scored);
    EXPECT_NEAR(got.loss, mean, 1e-4 * std::fabs(mean));
    EXPECT_NEAR(got.loss / std::numbers::ln2, mean / std::numbers::ln2, 1e-4 * mean);
  }
}

TEST(BitsPerByte, TheSameBitsOnAnyThreadCount) {
  const TextCase c(20000, 5, 32);  // 2000 validation bytes
  Model model(tiny("rope"));
  model.initialize(2);
  const EvalConfig e = lengths({32, 64, 128}, 16);
  set_parallel_threads(1);
  const auto one = evaluate(model, c.task, e);
  set_parallel_threads(2);
  const auto two = evaluate(model, c.task, e);
  set_parallel_threads(0);
  ASSERT_EQ(one.size(), 3u);
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].loss, two[i].loss);
    EXPECT_EQ(one[i].sliding.loss, two[i].sliding.loss);
    for (std::size_t b = 0; b < one[i].buckets.size(); ++b) {
      EXPECT_EQ(one[i].buckets[b].nll, two[i].buckets[b].nll);
    }
  }
}

// A learned table of 16 rows: length 16 is scored, 17 beyond_table; a length the validation
// text (300 bytes) holds no window of is refused before anything runs.
TEST(BitsPerByte, PastTheTableIsBeyondTableAndPastTheTextIsRefused) {
  const TextCase c(3000, 4, 8);
  Model model(tiny("learned", 16));
  model.initialize(1);
  const auto got = evaluate(model, c.task, lengths({16, 17}, 0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(got[0].beyond_table);
  EXPECT_TRUE(got[1].beyond_table);
  Model sin(tiny("sinusoidal"));
  sin.initialize(1);
  try {
    (void)evaluate(sin, c.task, lengths({64, 300}, 0));
    FAIL() << "a window longer than the validation text was evaluated";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), std::vector<std::string>{"eval.max_len"});
    EXPECT_NE(std::string(e.what()).find("no window of 300 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("text (300 tokens)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace posemb::lab
