// The KV-cached decoder (lab::Decoder, used by evaluation) against the full forward pass: for
// every registered encoding and several lengths, step t's logits equal row t of the forward's
// logits, with contiguous positions (the learned table's lookup with a start offset) and with
// explicit, gapped positions (Ruoss et al.'s randomized ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lab/model/decoder.hpp"
#include "lab/model/model.hpp"
#include "lab_runs.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {
namespace {

ModelConfig tiny(const std::string& pe) {
  return testing::tiny_model_config(pe, 40);
}

// Initialized, with biases and LayerNorm terms moved off 0 and 1.
void randomize(Model& m, std::uint64_t seed) {
  m.initialize(seed);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> n(0.0f, 0.3f);
  for (const auto& s : m.tensors()) {
    if (s.value.rows() != 1) continue;
    for (float& v : s.value.row(0)) v += n(rng);
  }
}

class DecoderVsForward : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderVsForward, StepLogitsEqualTheFullForwardsRows) {
  const std::string pe = GetParam();
  const ModelConfig cfg = tiny(pe);
  Model model(cfg);
  randomize(model, 3);
  model.reserve_positions(
      40);  // a computed encoding: before forwards and decoders (positions < 40)
  const std::size_t B = 3, V = cfg.vocab_size;
  // Tolerance. The decoder runs the forward's arithmetic row by row (the same embedding,
  // LayerNorm, attention row, GELU and residual code); only the matrix products see a different
  // number of rows (B instead of B*T), so OpenBLAS may sum a row's K products in another order.
  // Each of the 4 * n_layers + 1 products on the path is then within 2 K eps of the magnitude of
  // its result (K = max(d_model, d_ff)); LayerNorm rescales rows by rstd (below 4 here), so we
  // allow 4x that sum of the largest |logit|.
  const double eps = std::numeric_limits<float>::epsilon();
  const double products = 4.0 * static_cast<double>(cfg.n_layers) + 1.0;
  const double K = static_cast<double>(std::max(cfg.d_model, cfg.d_ff));
  for (const bool contiguous : {true, false}) {
    for (const std::size_t T : {1, 2, 5, 13}) {
      Matrix<TokenId> tokens(B, T);
      Matrix<std::int64_t> positions(B, T);
      Matrix<std::int32_t> targets(B, T);
      std::mt19937_64 rng(T * 31 + (contiguous ? 0 : 1));
      for (std::size_t b = 0; b < B; ++b) {
        std::int64_t p = contiguous ? 0 : static_cast<std::int64_t>(rng() % 3);
        for (std::size_t t = 0; t < T; ++t) {
          tokens(b, t) = static_cast<TokenId>(rng() % V);
          targets(b, t) = -1;
          positions(b, t) = p;
          p += contiguous ? 1 : 1 + static_cast<std::int64_t>(rng() % 2);
        }
      }
      Activations acts(cfg, B, T);
      model.forward(acts, tokens, positions, targets);
      double top = 1.0;
      for (std::size_t r = 0; r < B * T; ++r) {
        for (float v : acts.logits.row(r)) top = std::max(top, double(std::fabs(v)));
      }
      const double tol = 4.0 * products * 2.0 * K * eps * top;
      Decoder dec(model, B, T);
      double worst = 0;
      for (std::size_t t = 0; t < T; ++t) {
        std::vector<TokenId> tok(B);
        std::vector<std::int64_t> pos(B);
        for (std::size_t b = 0; b < B; ++b) {
          tok[b] = tokens(b, t);
          pos[b] = positions(b, t);
        }
        const auto logits = contiguous ? dec.step(tok) : dec.step(tok, pos);
        for (std::size_t b = 0; b < B; ++b) {
          for (std::size_t v = 0; v < V; ++v) {
            worst = std::max(worst, double(std::fabs(logits(b, v) - acts.logits(b * T + t, v))));
          }
        }
      }
      EXPECT_LE(worst, tol) << pe << (contiguous ? ", contiguous" : ", explicit")
                            << " positions, T = " << T << ": largest |step - forward| " << worst;
    }
  }
}

std::vector<std::string> every_encoding() {
  std::vector<std::string> names;
  for (const auto* e : encodings()) names.emplace_back(e->name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryEncoding, DecoderVsForward, ::testing::ValuesIn(every_encoding()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Past a learned table, the cached step's lookup (row t of the table) throws the library's
// SequenceTooLong naming the numbers; the steps before it run.
TEST(Decoder, PastTheLearnedTableThrowsSequenceTooLong) {
  ModelConfig cfg = tiny("learned");
  cfg.max_seq_len = 4;
  Model model(cfg);
  randomize(model, 5);
  Decoder dec(model, 2, 8);
  const std::vector<TokenId> tok = {1, 2};
  for (int t = 0; t < 4; ++t) EXPECT_NO_THROW(dec.step(tok));
  try {
    dec.step(tok);
    FAIL() << "step 4 of a 4-row table did not throw";
  } catch (const SequenceTooLong& e) {
    EXPECT_NE(std::string(e.what()).find("4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace posemb::lab
