// Every bad input to the embedding operations and the layer throws and modifies nothing: the
// outputs are compared byte for byte before and after.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "layer_fixtures.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

constexpr std::size_t B = 3, T = 4, C = 5, V = 6, maxT = 8;

struct Buffers {
  Matrix<float> out = random_matrix(B * T, C, 1);
  Matrix<float> dwte = random_matrix(V, C, 2);
  Matrix<float> dwpe = random_matrix(maxT, C, 3);
  std::vector<unsigned char> snapshot() const {
    auto s = bytes_of(out);
    for (auto v : {bytes_of(dwte), bytes_of(dwpe)}) s.insert(s.end(), v.begin(), v.end());
    return s;
  }
};

// Runs the four public operations with one bad input each; each must throw E and leave every
// buffer as it was.
template <class E>
void expect_all_reject(const std::string& what, MatrixView<const TokenId> tokens,
                       const PositionSource& src, std::size_t batch = B, std::size_t seq = T,
                       std::size_t vocab = V, std::size_t cols = C) {
  const auto wte = random_matrix(vocab, cols, 4), wpe = random_matrix(maxT, cols, 5);
  const auto dout = random_matrix(batch * seq, cols, 6);
  Buffers buf;
  buf.out = random_matrix(batch * seq, cols, 1);
  buf.dwte = random_matrix(vocab, cols, 2);
  buf.dwpe = random_matrix(maxT, cols, 3);
  const auto before = buf.snapshot();
  const std::function<void()> ops[] = {
      [&] { embed_forward(buf.out.view(), tokens, src, wte, wpe); },
      [&] { embed_backward(buf.dwte.view(), buf.dwpe.view(), dout, tokens, src); },
      [&] { add_positions_forward(buf.out.view(), batch, seq, src, wpe); },
      [&] { add_positions_backward(buf.dwpe.view(), dout, batch, seq, src); }};
  const char* names[] = {"embed_forward", "embed_backward", "add_positions_forward",
                         "add_positions_backward"};
  for (int i = 0; i < 4; ++i) {
    // Token id errors only concern the fused operations.
    if (what == "token" && i >= 2) continue;
    try {
      ops[i]();
      ADD_FAILURE() << what << ": " << names[i] << " did not throw";
    } catch (const E& e) {
      EXPECT_NE(std::string(e.what()).find(names[i]), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << names[i] << " threw the wrong type: " << e.what();
    }
    EXPECT_EQ(buf.snapshot(), before) << what << ": " << names[i] << " modified its outputs";
  }
}

TEST(BadInput, TokenIdPastTheVocabulary) {
  auto tokens = testing::random_tokens(B, T, V, 1);
  tokens(2, 3) = static_cast<TokenId>(V);
  expect_all_reject<std::out_of_range>("token", tokens, PositionSource::contiguous());
  try {
    Matrix<float> out(B * T, C);
    embed_forward(out.view(), tokens, PositionSource::contiguous(), Matrix<float>(V, C),
                  Matrix<float>(maxT, C));
  } catch (const std::out_of_range& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("token id 6 at batch row 2, token 3"), std::string::npos) << m;
    EXPECT_NE(m.find("vocabulary of 6 rows"), std::string::npos) << m;
  }
}

TEST(BadInput, NegativeTokenId) {
  auto tokens = testing::random_tokens(B, T, V, 2);
  tokens(0, 1) = -3;
  expect_all_reject<std::out_of_range>("token", tokens, PositionSource::contiguous());
}

TEST(BadInput, PositionsPastTheTable) {
  const auto tokens = testing::random_tokens(B, T, V, 3);
  expect_all_reject<SequenceTooLong>("contiguous", tokens, PositionSource::contiguous(maxT - 2));
  Matrix<std::int64_t> ids(B, T);
  ids(1, 2) = static_cast<std::int64_t>(maxT);
  expect_all_reject<SequenceTooLong>("explicit", tokens, PositionSource::explicit_ids(ids));
  ids(1, 2) = std::numeric_limits<std::int64_t>::max();
  expect_all_reject<SequenceTooLong>("explicit max", tokens, PositionSource::explicit_ids(ids));
  Matrix<TokenId> long_doc(B, maxT + 1);  // no separator: one document longer than the table
  for (auto& t : long_doc.flat()) t = 1;
  expect_all_reject<SequenceTooLong>("packed", long_doc, PositionSource::packed(long_doc, 0), B,
                                     maxT + 1);
}

TEST(BadInput, NegativePositionId) {
  const auto tokens = testing::random_tokens(B, T, V, 4);
  Matrix<std::int64_t> ids(B, T);
  ids(2, 0) = -1;
  expect_all_reject<std::out_of_range>("negative id", tokens, PositionSource::explicit_ids(ids));
}

TEST(BadInput, MismatchedShapes) {
  const auto tokens = testing::random_tokens(B, T, V, 5);
  const Matrix<std::int64_t> ids(B, T + 1);
  expect_all_reject<std::invalid_argument>("ids shape", tokens, PositionSource::explicit_ids(ids));
  const Matrix<std::uint8_t> mask(B + 1, T);
  expect_all_reject<std::invalid_argument>("mask shape", tokens,
                                           PositionSource::padding_mask(mask));
  Matrix<std::uint8_t> bad_mask(B, T);
  bad_mask(1, 1) = 3;
  expect_all_reject<std::invalid_argument>("mask value", tokens,
                                           PositionSource::padding_mask(bad_mask));
  Matrix<std::int64_t> hf_mask(B, T);  // HF's attention_mask: int64
  for (auto& m : hf_mask.flat()) m = 1;
  hf_mask(2, 0) = -1;
  expect_all_reject<std::invalid_argument>("int64 mask value", tokens,
                                           PositionSource::padding_mask(hf_mask));
  const Matrix<std::int32_t> ids32(B + 1, T);
  expect_all_reject<std::invalid_argument>("int32 ids shape", tokens,
                                           PositionSource::explicit_ids(ids32));
  const Matrix<TokenId> other_tokens(B, T + 1);
  expect_all_reject<std::invalid_argument>("packed tokens shape", tokens,
                                           PositionSource::packed(other_tokens, 0));

  // Output / table shapes that disagree with each other.
  const auto wte = random_matrix(V, C, 1), wpe_wide = random_matrix(maxT, C + 1, 2);
  Buffers buf;
  const auto before = buf.snapshot();
  const auto src = PositionSource::contiguous();
  EXPECT_THROW(embed_forward(buf.out.view(), tokens, src, wte, wpe_wide), std::invalid_argument);
  Matrix<float> short_out(B * T - 1, C);
  EXPECT_THROW(embed_forward(short_out.view(), tokens, src, wte, random_matrix(maxT, C, 3)),
               std::invalid_argument);
  const auto dout_short = random_matrix(B * T - 1, C, 4);
  EXPECT_THROW(embed_backward(buf.dwte.view(), buf.dwpe.view(), dout_short, tokens, src),
               std::invalid_argument);
  Matrix<float> dwpe_wide(maxT, C + 1);
  EXPECT_THROW(
      embed_backward(buf.dwte.view(), dwpe_wide.view(), random_matrix(B * T, C, 5), tokens, src),
      std::invalid_argument);
  EXPECT_THROW(add_positions_forward(buf.out.view(), B, T + 1, src, random_matrix(maxT, C, 6)),
               std::invalid_argument);
  EXPECT_THROW(add_positions_backward(buf.dwpe.view(), random_matrix(B * T, C, 7), B + 1, T, src),
               std::invalid_argument);
  EXPECT_EQ(buf.snapshot(), before);
}

TEST(BadInput, EmptyBatch) {
  const Matrix<TokenId> none(0, T);
  expect_all_reject<std::invalid_argument>("empty B", none, PositionSource::contiguous(), 0, T);
  const Matrix<TokenId> no_tokens(B, 0);
  expect_all_reject<std::invalid_argument>("empty T", no_tokens, PositionSource::contiguous(), B,
                                           0);
}

TEST(BadInput, LayerRejectsAndKeepsTableGradAndBookkeeping) {
  LearnedPositionalEmbedding layer(maxT, C, Initializer{InitKind::normal, 0.02, 3});
  const auto table_before = bytes_of(layer.table());
  Matrix<float> x = random_matrix(B * T, C, 9);
  const auto x_before = bytes_of(x);
  const auto dx = random_matrix(B * T, C, 10);
  EXPECT_THROW(layer.forward_add(x.view(), B, T, PositionSource::contiguous(maxT - 1)),
               SequenceTooLong);
  EXPECT_THROW(layer.backward_add(dx, B, T, PositionSource::contiguous(maxT - 1)), SequenceTooLong);
  EXPECT_THROW(layer.forward_add(x.view(), B, T + 1, PositionSource::contiguous()),
               std::invalid_argument);
  EXPECT_THROW(layer.backward_add(dx, B + 1, T, PositionSource::contiguous()),
               std::invalid_argument);
  EXPECT_THROW((void)layer.forward(maxT + 1), SequenceTooLong);
  EXPECT_EQ(bytes_of(x), x_before);
  EXPECT_EQ(bytes_of(layer.table()), table_before);
  EXPECT_EQ(bytes_of(layer.grad()), bytes_of(Matrix<float>(maxT, C)));
  EXPECT_EQ(layer.untrained_rows().size(), maxT);
}

}  // namespace
}  // namespace posemb
