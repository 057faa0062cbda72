// embed_forward / embed_backward / add_positions_*: bit for bit against the scalar reference
// (tests/support/embed_reference.hpp), determinism across thread counts (and OpenMP dynamic
// teams), the backward's paths (rows used once, contiguous positions, buckets, column blocks),
// central finite differences.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "embed_reference.hpp"
#include "layer_fixtures.hpp"
#include "posemb/parallel.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::kAllSources;
using testing::make_batch;
using testing::random_matrix;

struct Shape {
  std::size_t B, T, C, V, maxT;
};
// Awkward sizes: 1s, odd C, V smaller than B*T (many repeated ids), large enough to go parallel,
// a large V where most token rows are used once, rows narrower than the forward's prefetch
// distance in a table of more than 1 MiB (read in groups), rows of 4 KiB over 300 positions, and
// batches of 16 (the position-only backward sums 8 batch rows at a time).
constexpr Shape kShapes[] = {{1, 1, 1, 1, 1},          {2, 3, 5, 4, 3},
                             {3, 7, 17, 2, 9},         {4, 16, 33, 50, 20},
                             {8, 64, 64, 64, 64},      {5, 31, 129, 7, 40},
                             {16, 128, 96, 300, 128},  {8, 256, 160, 20000, 256},
                             {3, 345, 24, 12000, 400}, {2, 300, 1031, 50, 310}};

TEST(EmbedForward, EqualsTheScalarReferenceBitForBit) {
  std::uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    for (auto kind : kAllSources) {
      const auto batch = make_batch(kind, s.B, s.T, s.V, s.maxT, ++seed);
      const auto wte = random_matrix(s.V, s.C, ++seed);
      const auto wpe = random_matrix(s.maxT, s.C, ++seed);
      const auto src = batch.source();
      const auto pos = resolve_positions(src, batch.tokens, s.maxT);
      Matrix<float> out(s.B * s.T, s.C), ref(s.B * s.T, s.C);
      embed_forward(out.view(), batch.tokens, src, wte, wpe);
      reference::embed_forward(ref.view(), batch.tokens, pos.data(), wte, wpe);
      EXPECT_EQ(bytes_of(out), bytes_of(ref)) << testing::source_name(kind) << " B=" << s.B;

      Matrix<float> x = random_matrix(s.B * s.T, s.C, ++seed);
      Matrix<float> xref = x;
      add_positions_forward(x.view(), s.B, s.T, src, wpe);
      reference::add_positions_forward(xref.view(), pos.data(), wpe);
      EXPECT_EQ(bytes_of(x), bytes_of(xref)) << testing::source_name(kind) << " B=" << s.B;
    }
  }
}

// An output of 8 MiB or more is written with streaming stores, and a table of 1 MiB or more is
// read a group of rows at a time (separate code paths); they too equal the reference bit for
// bit: with output rows all vector-aligned (the grouped streaming stores), rows of varying
// alignment and a misaligned start, and with padding (rows without a position row in a group).
TEST(EmbedForward, LargeOutputsUseStreamingStoresAndStillMatchBitForBit) {
  for (const std::size_t V : {97, 300}) {                      // table of 0.4 MB and of 1.2 MB
    const std::size_t B = 2, T = 1024, C = 1031, maxT = 1024;  // > 8 MiB of output
    const auto batch = make_batch(testing::SourceKind::left_padding, B, T, V, maxT, 5);
    const auto wte = random_matrix(V, C, 6), wpe = random_matrix(maxT, C, 7);
    const auto pos = resolve_positions(batch.source(), batch.tokens, maxT);
    Matrix<float> ref(B * T, C);
    reference::embed_forward(ref.view(), batch.tokens, pos.data(), wte, wpe);
    for (auto [stride, offset] : {std::pair<std::size_t, std::size_t>{C + 8, 0},
                                  {C + 8, 1},
                                  {C + 8, 4},
                                  {C + 9, 0}}) {  // C + 9 = 1040: every row 64-byte aligned
      Matrix<float> store(B * T, stride);
      MatrixView<float> out(store.data() + offset, B * T, C, stride);
      embed_forward(out, batch.tokens, batch.source(), wte, wpe);
      EXPECT_EQ(bytes_of(MatrixView<const float>(out)), bytes_of(ref))
          << "V " << V << " stride " << stride << " offset " << offset;
    }
  }
}

TEST(EmbedForward, WorksOnStridedViews) {
  const std::size_t B = 3, T = 5, C = 7, V = 11, maxT = 6;
  const auto batch = make_batch(testing::SourceKind::explicit_ids, B, T, V, maxT, 42);
  const auto wte_store = random_matrix(V, C + 3, 1);
  const auto wpe_store = random_matrix(maxT, C + 1, 2);
  MatrixView<const float> wte(wte_store.data() + 1, V, C, C + 3);
  MatrixView<const float> wpe(wpe_store.data(), maxT, C, C + 1);
  Matrix<float> out_store(B * T, C + 5);
  MatrixView<float> out(out_store.data() + 2, B * T, C, C + 5);
  Matrix<float> ref(B * T, C);
  const auto pos = resolve_positions(batch.source(), batch.tokens, maxT);
  embed_forward(out, batch.tokens, batch.source(), wte, wpe);
  reference::embed_forward(ref.view(), batch.tokens, pos.data(), wte, wpe);
  EXPECT_EQ(bytes_of(MatrixView<const float>(out)), bytes_of(ref));
}

// The strided backward check of the test below, for one shape.
void check_strided_backward(const Shape& s) {
  const std::size_t B = s.B, T = s.T, C = s.C, V = s.V, maxT = s.maxT, start = 7;
  const auto token_store = testing::random_tokens(B, T + 3, V, 11);
  const MatrixView<const TokenId> tokens(token_store.data(), B, T, T + 3);
  const auto dout_store = random_matrix(B * T, C + 4, 12);
  const MatrixView<const float> dout(dout_store.data() + 1, B * T, C, C + 4);
  Matrix<std::int64_t> ids(B, T);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) ids(b, t) = static_cast<std::int64_t>(start + t);
  }
  const auto wte_start = random_matrix(V, C + 5, 13), wpe_start = random_matrix(maxT, C + 9, 14);
  auto rte = wte_start, rpe = wpe_start, rpos = wpe_start;
  reference::embed_backward(MatrixView<float>(rte.data(), V, C, C + 5),
                            MatrixView<float>(rpe.data() + 2, maxT, C, C + 9), dout, tokens,
                            ids.data());
  reference::add_positions_backward(MatrixView<float>(rpos.data() + 2, maxT, C, C + 9), dout,
                                    ids.data());
  const PositionSource sources[] = {PositionSource::contiguous(start),
                                    PositionSource::explicit_ids(ids)};
  for (const PositionSource& src : sources) {
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      auto dwte = wte_start, dwpe = wpe_start, dpos = wpe_start;
      embed_backward(MatrixView<float>(dwte.data(), V, C, C + 5),
                     MatrixView<float>(dwpe.data() + 2, maxT, C, C + 9), dout, tokens, src);
      add_positions_backward(MatrixView<float>(dpos.data() + 2, maxT, C, C + 9), dout, B, T, src);
      EXPECT_EQ(bytes_of(dwte), bytes_of(rte)) << "B=" << B << " threads " << threads;
      EXPECT_EQ(bytes_of(dwpe), bytes_of(rpe)) << "B=" << B << " threads " << threads;
      EXPECT_EQ(bytes_of(dpos), bytes_of(rpos)) << "B=" << B << " threads " << threads;
    }
  }
  omp_set_num_threads(2);
}

// Strided token, dout and gradient views, contiguous positions from an offset and the same
// positions given as explicit ids, against the reference. The large shape takes the task path
// (on one thread too, with contiguous positions and token rows; explicit ids take the serial loop
// on one thread); the small one the serial loop (and its position-only loop) on any thread count.
// Their gradient tables fit in the caches, where the backward streams (parallel from 8 MiB
// moved): parallel from 1 MiB here, so that the large shape runs on two threads.
TEST(EmbedBackward, StridedViewsEqualTheReferenceOnOneAndTwoThreads) {
  const detail::ScopedMinStreamBytes parallel_from(std::size_t{1} << 20);
  const Shape large{8, 256, 160, 300, 300};  // > 2^18 elements
  const Shape small{3, 20, 24, 30, 40};
  for (const Shape& s : {large, small}) check_strided_backward(s);
  // More positions than one block of the position-only sum (192 KiB of gradient rows: 512 rows
  // of 96 floats), on one thread and in tasks of positions split into column blocks on two.
  check_strided_backward({4, 700, 96, 40, 710});
}

TEST(EmbedBackward, EqualsTheReferenceSummationOrderBitForBit) {
  std::uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    for (auto kind : kAllSources) {
      const auto batch = make_batch(kind, s.B, s.T, s.V, s.maxT, ++seed);
      const auto dout = random_matrix(s.B * s.T, s.C, ++seed);
      const auto src = batch.source();
      const auto pos = resolve_positions(src, batch.tokens, s.maxT);
      // Gradients start non-zero: the backward adds into them.
      auto dwte = random_matrix(s.V, s.C, ++seed), dwpe = random_matrix(s.maxT, s.C, ++seed);
      auto rte = dwte, rpe = dwpe;
      embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, src);
      reference::embed_backward(rte.view(), rpe.view(), dout, batch.tokens, pos.data());
      EXPECT_EQ(bytes_of(dwte), bytes_of(rte)) << testing::source_name(kind) << " B=" << s.B;
      EXPECT_EQ(bytes_of(dwpe), bytes_of(rpe)) << testing::source_name(kind) << " B=" << s.B;

      auto dpos = random_matrix(s.maxT, s.C, ++seed);
      auto dpos_ref = dpos;
      add_positions_backward(dpos.view(), dout, s.B, s.T, src);
      reference::add_positions_backward(dpos_ref.view(), dout, pos.data());
      EXPECT_EQ(bytes_of(dpos), bytes_of(dpos_ref)) << testing::source_name(kind);
    }
  }
}

// Large enough to run on several threads; V small so that token rows repeat many times.
TEST(EmbedBackward, BitwiseIdenticalForAnyThreadCountAndRunToRun) {
  const std::size_t B = 8, T = 256, C = 160, maxT = 256;  // > 2^18 elements
  // With V = 37 the gradient table fits in the caches (parallel from 8 MiB moved): from 1 MiB.
  const detail::ScopedMinStreamBytes parallel_from(std::size_t{1} << 20);
  // V = 37: every token row repeats; V = 20000: most token rows are used once (another path).
  for (const std::size_t V : {std::size_t{37}, std::size_t{20000}})
    for (auto kind : kAllSources) {
      const auto batch = make_batch(kind, B, T, V, maxT, 7);
      const auto dout = random_matrix(B * T, C, 8, 3.0f);
      const auto wte = random_matrix(V, C, 9), wpe = random_matrix(maxT, C, 10);
      const auto pos = resolve_positions(batch.source(), batch.tokens, maxT);
      Matrix<float> rte(V, C), rpe(maxT, C), rout(B * T, C);
      reference::embed_backward(rte.view(), rpe.view(), dout, batch.tokens, pos.data());
      reference::embed_backward(rte.view(), rpe.view(), dout, batch.tokens, pos.data());
      reference::embed_forward(rout.view(), batch.tokens, pos.data(), wte, wpe);
      auto want = bytes_of(rte);
      for (auto v : {bytes_of(rpe), bytes_of(rout)}) want.insert(want.end(), v.begin(), v.end());
      // 1, 2 and 3 threads (more threads than cores), then OpenMP dynamic teams.
      for (int threads : {1, 2, 3, 2, 1, -2}) {
        omp_set_dynamic(threads < 0 ? 1 : 0);
        omp_set_num_threads(std::abs(threads));
        Matrix<float> dwte(V, C), dwpe(maxT, C), out(B * T, C);
        embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, batch.source());
        embed_backward(dwte.view(), dwpe.view(), dout, batch.tokens, batch.source());
        embed_forward(out.view(), batch.tokens, batch.source(), wte, wpe);
        auto all = bytes_of(dwte);
        for (auto v : {bytes_of(dwpe), bytes_of(out)}) all.insert(all.end(), v.begin(), v.end());
        EXPECT_EQ(all, want) << testing::source_name(kind) << " V " << V << " threads " << threads;
      }
      omp_set_dynamic(0);
      omp_set_num_threads(2);
    }
}

// Few gradient rows with many contributions: the work is split into column blocks (one
// position row summed over a batch of 512; a single token id; one explicit position for all).
TEST(EmbedBackward, FewHeavyRowsSplitIntoColumnBlocksStayBitwiseEqualToTheReference) {
  const std::size_t B = 512, T = 1, C = 1031, maxT = 4;
  // The position-only sum streams dout (2.1 MB): parallel from 1 MiB here instead of 8 MiB.
  const detail::ScopedMinStreamBytes parallel_from(std::size_t{1} << 20);
  for (const std::size_t V : {std::size_t{1}, std::size_t{3000}}) {
    const auto tokens = testing::random_tokens(B, T, V, 3);
    Matrix<std::int64_t> ids(B, T);
    for (auto& v : ids.flat()) v = 2;
    const PositionSource sources[] = {PositionSource::contiguous(3),
                                      PositionSource::explicit_ids(ids)};
    for (const PositionSource& src : sources) {
      const auto dout = random_matrix(B * T, C, 4);
      const auto pos = resolve_positions(src, tokens, maxT);
      Matrix<float> rte(V, C), rpe(maxT, C);
      reference::embed_backward(rte.view(), rpe.view(), dout, tokens, pos.data());
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        Matrix<float> dwte(V, C), dwpe(maxT, C), dpos(maxT, C);
        embed_backward(dwte.view(), dwpe.view(), dout, tokens, src);
        add_positions_backward(dpos.view(), dout, B, T, src);
        EXPECT_EQ(bytes_of(dwte), bytes_of(rte)) << "V " << V << " threads " << threads;
        EXPECT_EQ(bytes_of(dwpe), bytes_of(rpe)) << "V " << V << " threads " << threads;
        EXPECT_EQ(bytes_of(dpos), bytes_of(rpe)) << "V " << V << " threads " << threads;
      }
    }
  }
  omp_set_num_threads(2);
}

// The token-only overloads against the reference (positions all "none").
TEST(EmbedTokensOnly, ForwardAndBackwardEqualTheReference) {
  const std::size_t B = 6, T = 50, C = 37, V = 40;
  const auto tokens = testing::random_tokens(B, T, V, 5);
  const auto wte = random_matrix(V, C, 6), dout = random_matrix(B * T, C, 7);
  Matrix<std::int64_t> none(B, T);
  for (auto& v : none.flat()) v = -1;
  Matrix<float> out(B * T, C), ref(B * T, C), dwte = random_matrix(V, C, 8);
  Matrix<float> rte = dwte, unused(1, C);
  embed_forward(out.view(), tokens, wte);
  reference::embed_forward(ref.view(), tokens, none.data(), wte, unused);
  EXPECT_EQ(bytes_of(out), bytes_of(ref));
  embed_backward(dwte.view(), dout, tokens);
  reference::embed_backward(rte.view(), unused.view(), dout, tokens, none.data());
  EXPECT_EQ(bytes_of(dwte), bytes_of(rte));
}

// L(wte, wpe) = sum_{n,c} out[n,c] * R[n,c] accumulated in double; its gradient is what
// embed_backward adds for dout = R. The function is linear, so the central difference has no
// truncation error; its rounding error is bounded by the float rounding of the `cnt` outputs a
// perturbed element feeds (each within eps/2 * |out|, on both sides) divided by the actual
// step 2h, plus the float sum of cnt terms in the backward (cnt * eps * sum|R|, |R| <= 1).
// cnt <= B*T. Tolerance: 2x that bound.
double loss(const Matrix<float>& out, const Matrix<float>& R) {
  double l = 0;
  for (std::size_t i = 0; i < out.size(); ++i) l += double(out.data()[i]) * R.data()[i];
  return l;
}

TEST(EmbedBackward, MatchesCentralFiniteDifferences) {
  const std::size_t B = 3, T = 6, C = 5, V = 4, maxT = 8;
  const double eps = std::numeric_limits<float>::epsilon();
  for (auto kind : kAllSources) {
    const auto batch = make_batch(kind, B, T, V, maxT, 11);
    const auto src = batch.source();
    auto wte = random_matrix(V, C, 12), wpe = random_matrix(maxT, C, 13);
    const auto R = random_matrix(B * T, C, 14);
    Matrix<float> dwte(V, C), dwpe(maxT, C);
    embed_backward(dwte.view(), dwpe.view(), R, batch.tokens, src);
    double max_out = 0;
    {
      Matrix<float> out(B * T, C);
      embed_forward(out.view(), batch.tokens, src, wte, wpe);
      for (float v : out.flat()) max_out = std::max(max_out, std::abs(double(v)) + 0.25);
    }
    const float h = 0.125f;
    for (Matrix<float>* table : {&wte, &wpe}) {
      const Matrix<float>& grad = table == &wte ? dwte : dwpe;
      for (std::size_t r = 0; r < table->rows(); ++r) {
        for (std::size_t c = 0; c < C; ++c) {
          const float w0 = (*table)(r, c);
          const float wp = w0 + h, wm = w0 - h;
          Matrix<float> out(B * T, C);
          (*table)(r, c) = wp;
          embed_forward(out.view(), batch.tokens, src, wte, wpe);
          const double lp = loss(out, R);
          (*table)(r, c) = wm;
          embed_forward(out.view(), batch.tokens, src, wte, wpe);
          const double lm = loss(out, R);
          (*table)(r, c) = w0;
          const double fd = (lp - lm) / (double(wp) - double(wm));
          const double cnt = double(B * T);
          const double tol = 2.0 * (cnt * eps * max_out / (double(wp) - double(wm)) +
                                    cnt * eps * cnt);  // sum|R| <= cnt
          EXPECT_NEAR(grad(r, c), fd, tol) << testing::source_name(kind) << " row " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace posemb
