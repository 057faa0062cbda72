// Tables of bfloat16 and float16: the core lookup's views over them, the forward from them
// (bit for bit the float forward on the widened tables, special values included, against the
// scalar reference and against PyTorch).
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/simd.hpp"
#include "embed_reference.hpp"
#include "layer_fixtures.hpp"
#include "posemb/simd.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

template <class H>
Matrix<H> narrow(const Matrix<float>& m) {
  Matrix<H> out(m.rows(), m.cols());
  for (std::size_t i = 0; i < m.size(); ++i) out.data()[i] = H(m.data()[i]);
  return out;
}

template <class H>
Matrix<float> widen(MatrixView<const H> m) {
  Matrix<float> out(m.rows(), m.cols());
  for (std::size_t r = 0; r < m.rows(); ++r) {
    for (std::size_t c = 0; c < m.cols(); ++c) out(r, c) = static_cast<float>(m(r, c));
  }
  return out;
}

// A table whose every row holds every kind of special value of the type, one to a vector of 8
// columns (whichever row a batch gathers, and in vectors that are otherwise ordinary numbers):
// zeros of both signs, the smallest subnormals, the largest finite values, infinities and NaN.
// They sit in columns 8k + `lanes` .. 8k + `lanes` + 3: give the token and the position table
// different lanes, since a sum of two NaN may carry either one's payload.
template <class H>
Matrix<H> table_with_specials(std::size_t rows, std::size_t cols, std::uint64_t seed,
                              std::size_t lanes) {
  Matrix<H> t = narrow<H>(random_matrix(rows, cols, seed, 4.0f));
  const std::uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff,
                                    0x7c00, 0xfc00, 0x7e00, 0x7f80, 0xff80, 0x7fc0, 0x0080,
                                    0x007f, 0x7f7f, 0x3c00, 0xffff, 0x7c01};
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < std::size(specials) && 8 * k + lanes + r % 4 < cols; ++k) {
      t(r, 8 * k + lanes + r % 4) = H::from_bits(specials[(k + r) % std::size(specials)]);
    }
  }
  return t;
}

TEST(HalfTables, TheCoreLookupViewsBfloat16AndFloat16Tables) {
  Matrix<bfloat16> bt(16, 4);
  Matrix<float16> ht(16, 4);
  for (std::size_t i = 0; i < bt.size(); ++i) {
    bt.data()[i] = bfloat16(static_cast<float>(i));
    ht.data()[i] = float16(static_cast<float>(i));
  }
  const MatrixView<const bfloat16> b = learned_positional_embedding(5, bt, 3);
  const MatrixView<const float16> h = learned_positional_embedding(5, ht, 3);
  EXPECT_EQ(b.data(), bt.data() + 3 * 4);
  EXPECT_EQ(h.data(), ht.data() + 3 * 4);
  EXPECT_EQ(b.rows(), 5u);
  EXPECT_EQ(static_cast<float>(b(1, 2)), 18.0f);
  EXPECT_EQ(static_cast<float>(h(4, 3)), 31.0f);
  EXPECT_THROW((void)learned_positional_embedding(14, bt, 3), SequenceTooLong);
  EXPECT_THROW((void)learned_positional_embedding(17, ht), SequenceTooLong);
}

template <class H>
void check_forward_equals_widened_float_here() {
  std::uint64_t seed = 40;
  for (auto kind : testing::kAllSources) {
    for (auto [B, T, C, V, maxT] :
         {std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t>{3, 7, 19, 5,
                                                                                      9},
          {8, 64, 96, 300, 64},
          {4, 256, 300, 2000, 256}}) {  // a 1.2 MB table: rows read in groups
      SCOPED_TRACE(testing::source_name(kind));
      const auto batch = testing::make_batch(kind, B, T, V, maxT, ++seed);
      const auto src = batch.source();
      const Matrix<H> wte = table_with_specials<H>(V, C, ++seed, 0);
      const Matrix<H> wpe = table_with_specials<H>(maxT, C, ++seed, 4);
      const Matrix<float> wte32 = widen<H>(wte), wpe32 = widen<H>(wpe);
      const auto pos = resolve_positions(src, batch.tokens, maxT);
      Matrix<float> ref(B * T, C), out(B * T, C), out32(B * T, C);
      reference::embed_forward(ref.view(), batch.tokens, pos.data(), wte32, wpe32);
      embed_forward(out.view(), batch.tokens, src, wte, wpe);
      embed_forward(out32.view(), batch.tokens, src, wte32, wpe32);
      EXPECT_EQ(bytes_of(out), bytes_of(ref));
      EXPECT_EQ(bytes_of(out), bytes_of(out32));

      Matrix<float> tok(B * T, C), tok32(B * T, C);
      embed_forward(tok.view(), batch.tokens, wte);
      embed_forward(tok32.view(), batch.tokens, wte32);
      EXPECT_EQ(bytes_of(tok), bytes_of(tok32));

      Matrix<float> x = random_matrix(B * T, C, ++seed), xr = x;
      add_positions_forward(x.view(), B, T, src, wpe);
      reference::add_positions_forward(xr.view(), pos.data(), wpe32);
      EXPECT_EQ(bytes_of(x), bytes_of(xr));
    }
  }
}

template <class H>
void check_forward_equals_widened_float(const char* type) {
  SCOPED_TRACE(type);
  for (const std::string& target : simd_targets()) {  // each widens in its own way
    SCOPED_TRACE(target);
    detail::set_simd_target(target);
    check_forward_equals_widened_float_here<H>();
  }
  detail::set_simd_target("");
}

TEST(HalfTables, ForwardFromBfloat16EqualsTheFloatForwardOnTheWidenedTables) {
  check_forward_equals_widened_float<bfloat16>("bfloat16");
}

TEST(HalfTables, ForwardFromFloat16EqualsTheFloatForwardOnTheWidenedTables) {
  check_forward_equals_widened_float<float16>("float16");
}

// Every float16 bit pattern (subnormals, both zeros, infinities, every NaN payload) as token and
// as position element, through the three ways the forward widens a small table (each use in the
// row loop; once for the call, when the batch uses its rows more than once) and the gathered
// groups (a table of 1 MiB and more), on every target: bit for bit the scalar reference on the
// widened tables. 128-bit targets widen 8 elements at a time with 16-bit integer operations and
// an exact subtraction for subnormals; a wrong lane shows here.
TEST(HalfTables, EveryFloat16BitPatternWidensExactlyOnEveryTarget) {
  const std::size_t C = 128, T = 16;
  for (const auto& [copies, uses] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 2}, {9, 1}}) {
    const std::size_t V = copies * (65536 / C);  // 128 KiB, 1.1 MiB
    Matrix<float16> wte(V, C), wpe(T, C);
    for (std::size_t i = 0; i < wte.size(); ++i) {
      wte.data()[i] = std::bit_cast<float16>(static_cast<std::uint16_t>(i));
    }
    for (std::size_t i = 0; i < wpe.size(); ++i) {  // small values, zeros and subnormals first
      wpe.data()[i] = std::bit_cast<float16>(static_cast<std::uint16_t>(i * 7 + (i / C) * 0x8000));
    }
    const std::size_t B = uses * V / T;
    Matrix<TokenId> tokens(B, T);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens.data()[i] = static_cast<TokenId>(i % V);
    const Matrix<float> wte32 = widen<float16>(wte), wpe32 = widen<float16>(wpe);
    std::vector<std::int64_t> pos(B * T);
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i % T);
    Matrix<float> ref(B * T, C);
    reference::embed_forward(ref.view(), tokens, pos.data(), wte32, wpe32);
    for (const std::string& target : simd_targets()) {
      SCOPED_TRACE(target + ", table rows " + std::to_string(V) + ", batch rows " +
                   std::to_string(B));
      detail::set_simd_target(target);
      Matrix<float> out(B * T, C);
      embed_forward(out.view(), tokens, PositionSource::contiguous(), wte, wpe);
      EXPECT_EQ(bytes_of(out), bytes_of(ref));
    }
    detail::set_simd_target("");
  }
}

// Large enough for several threads, streaming stores and grouped reads, on a strided output with
// every row aligned and on one with a misaligned start.
TEST(HalfTables, LargeStreamedForwardOnOneAndTwoThreads) {
  const std::size_t B = 4, T = 600, C = 1030, V = 5000, maxT = 600;
  const auto batch = testing::make_batch(testing::SourceKind::contiguous, B, T, V, maxT, 3);
  const Matrix<bfloat16> wte = narrow<bfloat16>(random_matrix(V, C, 4));
  const Matrix<bfloat16> wpe = narrow<bfloat16>(random_matrix(maxT, C, 5));
  const auto pos = resolve_positions(batch.source(), batch.tokens, maxT);
  Matrix<float> ref(B * T, C);
  reference::embed_forward(ref.view(), batch.tokens, pos.data(), widen<bfloat16>(wte),
                           widen<bfloat16>(wpe));
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (auto [stride, offset] : {std::pair<std::size_t, std::size_t>{C + 5, 3}, {C + 10, 0}}) {
      Matrix<float> store(B * T, stride);
      MatrixView<float> out(store.data() + offset, B * T, C, stride);
      embed_forward(out, batch.tokens, batch.source(), wte, wpe);
      EXPECT_EQ(bytes_of(MatrixView<const float>(out)), bytes_of(ref))
          << threads << " threads, stride " << stride;
    }
  }
  omp_set_num_threads(2);
}

// torch: F.embedding(idx, wte.float()) + wpe.float()[:T], the same float32 additions: equal bits.
template <class H>
void check_against_torch(const char* dtype) {
  SCOPED_TRACE(dtype);
  const std::size_t B = 3, T = 17, C = 45, V = 60, maxT = 20;
  const auto tokens = testing::random_tokens(B, T, V, 11);
  const Matrix<H> wte = narrow<H>(random_matrix(V, C, 12, 2.0f));
  const Matrix<H> wpe = narrow<H>(random_matrix(maxT, C, 13, 2.0f));
  Matrix<float> out(B * T, C);
  embed_forward(out.view(), tokens, PositionSource::contiguous(), wte, wpe);
  testing::TempDir dir;
  testing::write_raw(dir.file("tokens.i32"), tokens);
  testing::write_raw(dir.file("wte.u16"), wte);
  testing::write_raw(dir.file("wpe.u16"), wpe);
  testing::run_oracle("torch_half_embedding.py", dir.file("") + " " + std::to_string(B) + " " +
                                                     std::to_string(T) + " " + std::to_string(C) +
                                                     " " + std::to_string(V) + " " +
                                                     std::to_string(maxT) + " " + dtype);
  const auto torch_out = testing::read_raw<float>(dir.file("out.f32"), B * T, C);
  EXPECT_EQ(bytes_of(out), bytes_of(torch_out));
}

TEST(HalfTables, ForwardMatchesTorchBitForBit) {
  check_against_torch<bfloat16>("bf16");
  check_against_torch<float16>("f16");
}

}  // namespace
}  // namespace posemb
