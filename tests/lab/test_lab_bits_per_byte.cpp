// Bits per byte on the validation text (lab/eval/bits_per_byte.hpp) against two independent
// recomputations on the same weights: each window alone through Model::forward with its
// log-softmax taken here in double from the logits, and PyTorch (tests/oracles/
// lab_model_oracle.py, float64) on every window at once; buckets adding up to the whole, the
// same bits on 1 and 2 threads, a learned table too short refused.
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
#include "lab/eval/bits_per_byte.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/corpus.hpp"
#include "lab/tasks/text.hpp"
#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"

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
Plain recompute(Model& model, const Corpus& corpus, const text::WindowPlan& plan,
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

class BitsPerByte : public ::testing::TestWithParam<std::string> {};

TEST_P(BitsPerByte, EqualsAPlainRecomputationWindowByWindow) {
  const std::string pe = GetParam();
  const auto corpus = Corpus::from_bytes("t", texty(3000, 4));  // 300 validation bytes
  Model model(tiny(pe));
  model.initialize(3);
  model.reserve_positions(64);
  for (const std::size_t T : {16, 33, 64}) {
    for (const std::size_t S : {T, T / 2 + 1, std::size_t{1}}) {
      SCOPED_TRACE(pe + " T " + std::to_string(T) + " S " + std::to_string(S));
      const auto plan = text::plan_windows(corpus->validation().size(), T, S);
      ASSERT_GT(plan.windows, 0u);
      const WindowScore got =
          score_windows(model, *corpus, plan, 8, PositionMode::contiguous, 0, 1);
      const Plain ref = recompute(model, *corpus, plan, 8);
      // Each byte's loss is the kernel's float arithmetic against double here: a few float
      // roundings of its magnitude each.
      const double tol = 16.0 * FLT_EPSILON * ref.magnitude;
      EXPECT_NEAR(got.nll, ref.nll, tol);
      EXPECT_NEAR(got.bits_per_byte(),
                  ref.nll / std::numbers::ln2 / static_cast<double>(plan.scored),
                  tol / std::numbers::ln2 / static_cast<double>(plan.scored));
      ASSERT_EQ(got.buckets.size(), ref.bucket_nll.size());
      double sum = 0.0;
      std::size_t bytes = 0;
      for (std::size_t b = 0; b < got.buckets.size(); ++b) {
        EXPECT_EQ(got.buckets[b].begin, 8 * b);
        EXPECT_EQ(got.buckets[b].end, std::min(T, 8 * b + 8));
        EXPECT_NEAR(got.buckets[b].nll, ref.bucket_nll[b], tol);
        sum += got.buckets[b].nll;
        bytes += got.buckets[b].bytes;
      }
      EXPECT_EQ(bytes, plan.scored);
      EXPECT_NEAR(sum, got.nll, 1e-9 * ref.magnitude);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, BitsPerByte, ::testing::ValuesIn(encoding_name_list()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

// PyTorch (float64) on the same weights and every non-overlapping window as one batch: its mean
// loss is our total over the scored bytes.
TEST(BitsPerByte, EqualsPyTorchOnTheSameWeights) {
  const auto corpus = Corpus::from_bytes("t", texty(2000, 9));  // 200 validation bytes
  for (const std::string pe : {"learned", "sinusoidal", "alibi"}) {
    SCOPED_TRACE(pe);
    const ModelConfig cfg = tiny(pe);
    Model model(cfg);
    model.initialize(7);
    model.reserve_positions(64);
    const auto plan = text::plan_windows(corpus->validation().size(), 24, 24);
    const WindowScore got = score_windows(model, *corpus, plan, 24, PositionMode::contiguous, 0, 1);
    Batch batch;
    text::fill_windows(batch, *corpus, plan, 0, plan.windows, PositionMode::contiguous, 0, 1);
    const fs::path dir =
        fs::temp_directory_path() / ("posemb_bpb_torch_" + pe + "_" + std::to_string(::getpid()));
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
    fs::remove_all(dir);
    // The model in float against float64: the loss to a few float roundings of its size per
    // operation along the ~40 sums of the forward.
    EXPECT_NEAR(got.nll / static_cast<double>(plan.scored), mean, 1e-4 * std::fabs(mean));
    EXPECT_NEAR(got.bits_per_byte(), mean / std::numbers::ln2, 1e-4 * mean);
  }
}

TEST(BitsPerByte, TheSameBitsOnAnyThreadCount) {
  const auto corpus = Corpus::from_bytes("t", texty(20000, 5));  // 2000 validation bytes
  Model model(tiny("rope"));
  model.initialize(2);
  model.reserve_positions(128);
  const auto plan = text::plan_windows(corpus->validation().size(), 128, 128);
  set_parallel_threads(1);
  const WindowScore one = score_windows(model, *corpus, plan, 32, PositionMode::contiguous, 0, 1);
  set_parallel_threads(2);
  const WindowScore two = score_windows(model, *corpus, plan, 32, PositionMode::contiguous, 0, 1);
  set_parallel_threads(0);
  EXPECT_EQ(one.nll, two.nll);
  for (std::size_t b = 0; b < one.buckets.size(); ++b) {
    EXPECT_EQ(one.buckets[b].nll, two.buckets[b].nll);
  }
}

TEST(BitsPerByte, PositionsPastALearnedTableAreRefused) {
  const auto corpus = Corpus::from_bytes("t", texty(3000, 4));
  Model model(tiny("learned", 16));
  model.initialize(1);
  const auto plan = text::plan_windows(corpus->validation().size(), 17, 17);
  EXPECT_THROW((void)score_windows(model, *corpus, plan, 16, PositionMode::contiguous, 0, 1),
               SequenceTooLong);
  EXPECT_NO_THROW((void)score_windows(model, *corpus, text::plan_windows(300, 16, 16), 16,
                                      PositionMode::contiguous, 0, 1));
}

}  // namespace
}  // namespace posemb::lab
