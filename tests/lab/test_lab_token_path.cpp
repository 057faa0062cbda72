// The token path from a batch to the input layer (lab::Model::forward) and the one change a
// forward may need, reserving a computed encoding's positions:
// - forward gathers the rows it is given straight from the batch (the trainer's micro-batches,
//   rows sorted by length, columns cut to their longest): the same bits as a forward on a
//   contiguous copy of those rows;
// - forward and Decoder::step never reserve: a position past what reserve_positions covered
//   throws std::logic_error naming the numbers (so no forward can grow the shared encoding while
//   others read it);
// - forwards run concurrently (posemb::parallel_tasks) at growing lengths, after one reserve
//   for the longest, give the same bits as serial forwards that reserved length by length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "lab/model/decoder.hpp"
#include "lab/model/model.hpp"
#include "lab/tasks/task.hpp"
#include "lab_runs.hpp"
#include "posemb/errors.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {
namespace {

ModelConfig tiny(const std::string& pe) {
  return testing::tiny_model_config(pe, 80);
}

// A (B, T) batch of random tokens, positions from `first` (gapped when !contiguous), the last
// third of each row's targets counted.
struct Inputs {
  Matrix<TokenId> tokens;
  Matrix<std::int64_t> positions;
  Matrix<std::int32_t> targets;
  Inputs(std::size_t B, std::size_t T, std::size_t V, std::uint64_t seed, bool contiguous = true)
      : tokens(B, T), positions(B, T), targets(B, T) {
    std::mt19937_64 rng(seed);
    for (std::size_t b = 0; b < B; ++b) {
      std::int64_t p = 0;
      for (std::size_t t = 0; t < T; ++t) {
        tokens(b, t) = static_cast<TokenId>(rng() % V);
        targets(b, t) = 3 * t >= 2 * T ? static_cast<std::int32_t>(rng() % V) : -1;
        positions(b, t) = p;
        p += contiguous ? 1 : 1 + static_cast<std::int64_t>(rng() % 2);
      }
    }
  }
  std::size_t top() const {
    return static_cast<std::size_t>(
        *std::max_element(positions.flat().begin(), positions.flat().end()));
  }
};

bool same_bits(MatrixView<const float> a, MatrixView<const float> b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (std::size_t r = 0; r < a.rows(); ++r) {
    if (std::memcmp(a.row(r).data(), b.row(r).data(), a.cols() * sizeof(float)) != 0) return false;
  }
  return true;
}

std::vector<std::string> every_encoding() {
  std::vector<std::string> names;
  for (const auto* e : encodings()) names.emplace_back(e->name);
  return names;
}

class TokenPath : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenPath, GatheredRowsEqualAForwardOnTheirCopy) {
  const ModelConfig cfg = tiny(GetParam());
  Model model(cfg);
  model.initialize(4);
  const std::size_t B = 6, T = 11, Tcut = 7;
  const Inputs in(B, T, cfg.vocab_size, 5, find_encoding(cfg.pe).has_table);
  model.reserve_positions(in.top() + 1);
  const std::vector<std::size_t> rows = {4, 1, 5};
  // The copy the trainer used to make: rows in that order, the first Tcut columns.
  Matrix<TokenId> tok(rows.size(), Tcut);
  Matrix<std::int64_t> pos(rows.size(), Tcut);
  Matrix<std::int32_t> tgt(rows.size(), Tcut);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t t = 0; t < Tcut; ++t) {
      tok(i, t) = in.tokens(rows[i], t);
      pos(i, t) = in.positions(rows[i], t);
      tgt(i, t) = in.targets(rows[i], t);
    }
  }
  Activations a(cfg, B, T), b(cfg, B, T);
  const double gathered =
      model.forward(a, in.tokens.cview().subcols(0, Tcut), in.positions.cview().subcols(0, Tcut),
                    in.targets.cview().subcols(0, Tcut), rows, 10);
  const double copied = model.forward(b, tok, pos, tgt, 10);
  EXPECT_EQ(std::memcmp(&gathered, &copied, sizeof(double)), 0) << gathered << " vs " << copied;
  const std::size_t n = rows.size() * Tcut;
  EXPECT_TRUE(same_bits(a.logits.cview().subrows(0, n), b.logits.cview().subrows(0, n)));
  Gradients ga = model.make_gradients(), gb = model.make_gradients();
  model.backward(a, &ga);
  model.backward(b, &gb);
  EXPECT_TRUE(same_bits(ga.arena, gb.arena));
  // A row index past the batch is refused before any kernel runs.
  const std::vector<std::size_t> bad = {0, B};
  EXPECT_THROW(model.forward(a, in.tokens, in.positions, in.targets, bad, 0),
               std::invalid_argument);
  EXPECT_THROW(model.backward(a), std::logic_error);  // the failed forward left nothing to use
}

TEST_P(TokenPath, ConcurrentForwardsAtGrowingLengthsEqualSerialOnes) {
  const ModelConfig cfg = tiny(GetParam());
  const std::vector<std::size_t> lengths = {3, 9, 17, 33, 40};
  const bool table = find_encoding(cfg.pe).has_table;
  std::vector<Inputs> inputs;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    inputs.emplace_back(2, lengths[i], cfg.vocab_size, 100 + i, table || i % 2 == 0);
  }
  // Serial: each length reserves its own positions just before its forward (the encoding grows
  // step by step, as a resumed or evaluated run may see it).
  Model serial(cfg);
  serial.initialize(8);
  std::vector<Activations> sa, pa;
  std::vector<double> sl(lengths.size()), pl(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    sa.emplace_back(cfg, 2, lengths[i]);
    pa.emplace_back(cfg, 2, lengths[i]);
    serial.reserve_positions(inputs[i].top() + 1);
    sl[i] = serial.forward(sa[i], inputs[i].tokens, inputs[i].positions, inputs[i].targets);
  }
  // Concurrent: one reserve for the longest, then every length at once, the longest first.
  Model model(cfg);
  model.initialize(8);
  std::size_t top = 0;
  for (const auto& in : inputs) top = std::max(top, in.top());
  model.reserve_positions(top + 1);
  set_parallel_threads(3);
  std::vector<std::exception_ptr> errors(lengths.size());
  parallel_tasks(lengths.size(), 3, [&](std::size_t k) {
    const std::size_t i = lengths.size() - 1 - k;
    try {
      pl[i] = model.forward(pa[i], inputs[i].tokens, inputs[i].positions, inputs[i].targets);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  set_parallel_threads(2);
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    ASSERT_FALSE(errors[i]) << "length " << lengths[i];
    const std::size_t n = 2 * lengths[i];
    EXPECT_EQ(std::memcmp(&sl[i], &pl[i], sizeof(double)), 0) << "length " << lengths[i];
    EXPECT_TRUE(same_bits(sa[i].logits.cview().subrows(0, n), pa[i].logits.cview().subrows(0, n)))
        << "length " << lengths[i];
  }
}

INSTANTIATE_TEST_SUITE_P(EveryEncoding, TokenPath, ::testing::ValuesIn(every_encoding()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A computed encoding: forward and Decoder::step only read it. A position past the reserved ones
// throws std::logic_error with the numbers and the remedy instead of growing the encoding (which
// would race with concurrent readers); after reserve_positions the same calls run.
TEST(TokenPath, ForwardAndDecoderNeverReserve) {
  for (const auto* e : encodings()) {
    if (e->has_table) continue;
    const ModelConfig cfg = tiny(std::string(e->name));
    Model model(cfg);
    model.initialize(2);
    const Inputs in(2, 12, cfg.vocab_size, 7);
    Activations acts(cfg, 2, 12);
    model.reserve_positions(11);  // positions 0..10 of 0..11
    try {
      model.forward(acts, in.tokens, in.positions, in.targets);
      FAIL() << e->name << ": a forward past the reserved positions ran";
    } catch (const std::logic_error& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find("position 11"), std::string::npos) << what;
      EXPECT_NE(what.find("reserve_positions(12)"), std::string::npos) << what;
    }
    Decoder dec(model, 1, 12);
    const std::vector<TokenId> tok = {1};
    for (int t = 0; t < 11; ++t) EXPECT_NO_THROW(dec.step(tok));
    EXPECT_THROW(dec.step(tok), std::logic_error) << e->name;
    model.reserve_positions(12);
    EXPECT_NO_THROW(model.forward(acts, in.tokens, in.positions, in.targets)) << e->name;
    EXPECT_NO_THROW(dec.step(tok)) << e->name;
  }
}

}  // namespace
}  // namespace posemb::lab
