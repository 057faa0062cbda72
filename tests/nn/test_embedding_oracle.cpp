// The fused embedding against PyTorch (float64 autograd, positions computed independently in
// tests/oracles/torch_embedding.py) for all four position sources, left and right padding.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "layer_fixtures.hpp"

namespace posemb {
namespace {

using testing::SourceKind;

constexpr double kEps = std::numeric_limits<float>::epsilon();

// out = fl(wte + wpe): one float rounding, within eps/2 * |exact|; tolerance eps * |exact|.
// Gradients: a float32 sum of at most n = B*T terms, within n * eps * sum|terms| (sum|terms|
// is the oracle's gradient for |dout|); tolerance exactly that (k = n).
void check_against_torch(SourceKind kind, std::size_t B, std::size_t T, std::size_t C,
                         std::size_t V, std::size_t maxT, std::uint64_t seed) {
  SCOPED_TRACE(testing::source_name(kind));
  const auto batch = testing::make_batch(kind, B, T, V, maxT, seed);
  const auto wte = testing::random_matrix(V, C, seed + 1);
  const auto wpe = testing::random_matrix(maxT, C, seed + 2);
  const auto dout = testing::random_matrix(B * T, C, seed + 3);
  Matrix<float> out(B * T, C), dwte(V, C), dwpe(maxT, C);
  embed_forward(out.view(), batch.tokens, batch.source(), wte, wpe);
  embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, batch.source());

  testing::TempDir dir;
  testing::write_raw(dir.file("tokens.i32"), batch.tokens);
  testing::write_raw(dir.file("wte.f32"), wte);
  testing::write_raw(dir.file("wpe.f32"), wpe);
  testing::write_raw(dir.file("dout.f32"), dout);
  std::string kind_arg;
  switch (kind) {
    case SourceKind::contiguous:
      kind_arg = "contiguous " + std::to_string(batch.start);
      break;
    case SourceKind::explicit_ids:
      testing::write_raw(dir.file("ids.i64"), batch.ids);
      kind_arg = "explicit 0";
      break;
    case SourceKind::left_padding:
    case SourceKind::right_padding:
      testing::write_raw(dir.file("mask.u8"), batch.mask);
      kind_arg = "mask 0";
      break;
    case SourceKind::packed:
      kind_arg = "packed 0";
      break;
  }
  testing::run_oracle("torch_embedding.py", dir.file("") + " " + std::to_string(B) + " " +
                                                std::to_string(T) + " " + std::to_string(C) + " " +
                                                std::to_string(V) + " " + std::to_string(maxT) +
                                                " " + kind_arg);
  const auto t_out = testing::read_raw<double>(dir.file("out.f64"), B * T, C);
  const auto t_dwte = testing::read_raw<double>(dir.file("dwte.f64"), V, C);
  const auto t_dwpe = testing::read_raw<double>(dir.file("dwpe.f64"), maxT, C);
  const auto a_dwte = testing::read_raw<double>(dir.file("abs_dwte.f64"), V, C);
  const auto a_dwpe = testing::read_raw<double>(dir.file("abs_dwpe.f64"), maxT, C);
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out.data()[i], t_out.data()[i], kEps * std::abs(t_out.data()[i])) << "out " << i;
  }
  const double n = static_cast<double>(B * T);
  for (std::size_t i = 0; i < dwte.size(); ++i) {
    ASSERT_NEAR(dwte.data()[i], t_dwte.data()[i], n * kEps * a_dwte.data()[i]) << "dwte " << i;
  }
  for (std::size_t i = 0; i < dwpe.size(); ++i) {
    ASSERT_NEAR(dwpe.data()[i], t_dwpe.data()[i], n * kEps * a_dwpe.data()[i]) << "dwpe " << i;
  }
}

TEST(TorchOracle, AllPositionSourcesForwardAndGradients) {
  std::uint64_t seed = 1000;
  for (auto kind : testing::kAllSources) {
    // V < B*T: token rows repeat; odd C; the table longer than T.
    check_against_torch(kind, 4, 32, 33, 50, 40, seed += 10);
  }
}

TEST(TorchOracle, LeftPaddingGivesPadsNoPositionAndNoGradient) {
  // Row 1 has 3 left pads: its real tokens take positions 0.., so wpe row T-1 gets nothing
  // from that row; pads' outputs are their token rows alone.
  const std::size_t B = 2, T = 5, C = 3, V = 4, maxT = 5;
  Matrix<TokenId> tokens(B, T);
  Matrix<std::uint8_t> mask(B, T);
  for (std::size_t t = 0; t < T; ++t) {
    mask(0, t) = 1;
    mask(1, t) = t >= 3 ? 1 : 0;
    tokens(0, t) = static_cast<TokenId>(t % V);
    tokens(1, t) = 1;
  }
  const auto wte = testing::random_matrix(V, C, 1), wpe = testing::random_matrix(maxT, C, 2);
  Matrix<float> out(B * T, C), dwte(V, C), dwpe(maxT, C);
  const auto src = PositionSource::padding_mask(mask);
  embed_forward(out.view(), tokens, src, wte, wpe);
  for (std::size_t c = 0; c < C; ++c) {
    EXPECT_EQ(out(T + 0, c), wte(1, c));              // pad
    EXPECT_EQ(out(T + 3, c), wte(1, c) + wpe(0, c));  // first real token: position 0
    EXPECT_EQ(out(T + 4, c), wte(1, c) + wpe(1, c));
  }
  Matrix<float> ones(B * T, C);
  for (float& v : ones.flat()) v = 1.0f;
  embed_backward(dwte.view(), dwpe.view(), ones, tokens, src);
  for (std::size_t c = 0; c < C; ++c) {
    EXPECT_EQ(dwpe(0, c), 2.0f);  // row 0 from both batch rows
    EXPECT_EQ(dwpe(2, c), 1.0f);  // only batch row 0
    EXPECT_EQ(dwte(1, c), 6.0f);  // 5 tokens of row 1 (pads included) + 1 in row 0
  }
}

}  // namespace
}  // namespace posemb
