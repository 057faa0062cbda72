// The rotary embedding: bit for bit against the scalar reference (tests/support/
// rope_reference.hpp) for both layouts, every position source, partial rotation, awkward sizes,
// strided column blocks of a fused qkv buffer and misaligned pointers, on 1 and 2 threads; the
// cache (explicit growth, the same values as computing each position); every bad input
// rejected with its outputs untouched; what must not compile.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posemb/positions.hpp"
#include "posemb/rope.hpp"
#include "rope_reference.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::random_matrix;

struct Shape {
  std::size_t B, T, H, D, R;  // R: rotary_dim (0: all D)
};

// A batch's positions for each source, and the positions the reference should use.
struct Positions {
  Matrix<std::int32_t> ids;
  Matrix<std::int64_t> mask;  // HF-style int64 attention mask
  Matrix<TokenId> tokens;
  std::vector<std::int64_t> expected;  // (B*T), -1 for pads
};

enum class Src { contiguous, explicit_ids, padding, packed };
constexpr Src kSources[] = {Src::contiguous, Src::explicit_ids, Src::padding, Src::packed};

Positions make_positions(Src src, std::size_t B, std::size_t T, std::size_t start) {
  Positions p{Matrix<std::int32_t>(B, T), Matrix<std::int64_t>(B, T), Matrix<TokenId>(B, T), {}};
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t next = 0;
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t n = b * T + t;
      p.ids(b, t) = static_cast<std::int32_t>((n * 7 + 3) % 50);
      p.mask(b, t) = t >= b % 3 ? 1 : 0;      // row b: b % 3 left pads
      p.tokens(b, t) = (n % 5 == 2) ? 0 : 1;  // 0: separator
      switch (src) {
        case Src::contiguous:
          p.expected.push_back(static_cast<std::int64_t>(start + t));
          break;
        case Src::explicit_ids:
          p.expected.push_back(p.ids(b, t));
          break;
        case Src::padding:
          p.expected.push_back(p.mask(b, t) == 1 ? static_cast<std::int64_t>(next++) : -1);
          break;
        case Src::packed:
          p.expected.push_back(static_cast<std::int64_t>(next));
          next = p.tokens(b, t) == 0 ? 0 : next + 1;
          break;
      }
    }
  }
  return p;
}

PositionSource source(Src src, const Positions& p, std::size_t start) {
  switch (src) {
    case Src::contiguous:
      return PositionSource::contiguous(start);
    case Src::explicit_ids:
      return PositionSource::explicit_ids(p.ids);
    case Src::padding:
      return PositionSource::padding_mask(p.mask);
    case Src::packed:
      return PositionSource::packed(p.tokens, 0);
  }
  return PositionSource::contiguous();
}

// q and k as column blocks of a fused (B*T, 3C) buffer, shifted one float off its 64-byte
// alignment: rotating q must equal the reference and leave k, v and the spare column alone.
void check_fused(const Shape& s, RopeLayout layout, Src src, bool cached) {
  const std::size_t C = s.H * s.D, N = s.B * s.T, start = 5;
  SCOPED_TRACE("B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " H=" +
               std::to_string(s.H) + " D=" + std::to_string(s.D) + " R=" + std::to_string(s.R) +
               (layout == RopeLayout::half ? " half" : " interleaved") + " source " +
               std::to_string(int(src)) + (cached ? " cached" : " direct"));
  const Rope rope(s.D, layout, {.base = 10000.0, .rotary_dim = s.R});
  const RopeCache cache(rope, 64);
  const Positions p = make_positions(src, s.B, s.T, start);
  const PositionSource ps = source(src, p, start);
  Matrix<float> buf = random_matrix(N, 3 * C + 2, 11);  // one spare column before and after
  MatrixView<float> fused(buf.data() + 1, N, 3 * C, 3 * C + 2);
  const Matrix<float> before = buf;
  Matrix<float> want(fused);
  const reference::RopeGeometry g{s.H, s.D, rope.rotary_dim(), layout};
  MatrixView<float> want_q = want.view().subcols(0, C);
  reference::rope(want_q, p.expected, g, false);

  MatrixView<float> q = fused.subcols(0, C);
  if (cached) {
    rope_forward(q, s.H, s.B, s.T, ps, cache);
  } else {
    rope_forward(q, s.H, s.B, s.T, ps, rope);
  }
  EXPECT_EQ(bytes_of(fused), bytes_of(want));
  for (std::size_t n = 0; n < N; ++n) {  // the spare columns
    EXPECT_EQ(buf(n, 0), before(n, 0));
    EXPECT_EQ(buf(n, 3 * C + 1), before(n, 3 * C + 1));
  }

  // The backward on k (the middle block) against the reference inverse.
  Matrix<float> want_k(fused.subcols(C, C));
  reference::rope(want_k.view(), p.expected, g, true);
  MatrixView<float> k = fused.subcols(C, C);
  if (cached) {
    rope_backward(k, s.H, s.B, s.T, ps, cache);
  } else {
    rope_backward(k, s.H, s.B, s.T, ps, rope);
  }
  EXPECT_EQ(bytes_of(k), bytes_of(want_k));
}

TEST(Rope, EqualsTheScalarReferenceBitForBit) {
  const Shape shapes[] = {{1, 1, 1, 2, 0},  {2, 3, 3, 8, 0},   {3, 5, 5, 6, 4},
                          {2, 9, 4, 64, 0}, {1, 12, 2, 16, 8}, {4, 7, 1, 2, 2}};
  for (const Shape& s : shapes) {
    for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half}) {
      for (Src src : kSources) {
        for (bool cached : {true, false}) check_fused(s, layout, src, cached);
      }
    }
  }
}

TEST(Rope, LargeBatchesAreTheSameOnOneAndTwoThreads) {
  // 1024 x 512 = 2^19 elements: above the parallel threshold.
  const std::size_t B = 8, T = 128, H = 8, D = 64, N = B * T, C = H * D;
  const Rope rope(D, RopeLayout::half);
  const RopeCache cache(rope, T);
  const Matrix<float> x0 = random_matrix(N, C, 3);
  std::vector<std::int64_t> pos(N);
  for (std::size_t n = 0; n < N; ++n) pos[n] = static_cast<std::int64_t>(n % T);
  Matrix<float> want = x0;
  reference::rope(want.view(), pos, {H, D, D, RopeLayout::half}, false);
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Matrix<float> a = x0, b = x0;
    rope_forward(a.view(), H, B, T, PositionSource::contiguous(), cache);
    rope_forward(b.view(), H, B, T, PositionSource::contiguous(), rope);
    EXPECT_EQ(bytes_of(a), bytes_of(want)) << threads << " threads";
    EXPECT_EQ(bytes_of(b), bytes_of(want)) << threads << " threads";
  }
}

TEST(Rope, PadsAndUnrotatedColumnsAreLeftBitForBit) {
  const std::size_t B = 3, T = 4, H = 2, D = 8;
  const Rope rope(D, RopeLayout::interleaved, {.rotary_dim = 4});
  Matrix<std::uint8_t> mask(B, T);
  for (std::size_t t = 2; t < T; ++t) mask(0, t) = 1;  // row 0: 2 left pads; rows 1, 2: all pads
  const Matrix<float> x0 = random_matrix(B * T, H * D, 5);
  Matrix<float> x = x0;
  rope_forward(x.view(), H, B, T, PositionSource::padding_mask(mask), rope);
  for (std::size_t n = 0; n < B * T; ++n) {
    const bool pad = n != 2 && n != 3;
    for (std::size_t c = 0; c < H * D; ++c) {
      const bool rotated = !pad && c % D < 4;
      if (!rotated) {
        EXPECT_EQ(x(n, c), x0(n, c)) << n << ", " << c;
      }
    }
  }
  // Token (0, 2) is the row's first real token: position 0, the identity rotation.
  for (std::size_t c = 0; c < H * D; ++c) EXPECT_EQ(x(2, c), x0(2, c));
  EXPECT_NE(x(3, 0), x0(3, 0));  // position 1 rotates
}

TEST(RopeCache, GrowsOnlyWhenToldAndKeepsItsRowsBitForBit) {
  const Rope rope(16, RopeLayout::half, {.base = 500000.0});
  RopeCache cache(rope, 10);
  EXPECT_EQ(cache.positions(), 10u);
  EXPECT_EQ(cache.cos().rows(), 10u);
  EXPECT_EQ(cache.cos().cols(), 8u);
  const auto cos10 = bytes_of(cache.cos()), sin10 = bytes_of(cache.sin());
  cache.reserve(4);  // never shrinks
  EXPECT_EQ(cache.positions(), 10u);
  cache.reserve(100);
  EXPECT_EQ(cache.positions(), 100u);
  EXPECT_EQ(bytes_of(cache.cos().subrows(0, 10)), cos10);
  EXPECT_EQ(bytes_of(cache.sin().subrows(0, 10)), sin10);
  // Every row equals the Rope's own angles (what the uncached path computes).
  std::vector<float> c(8), s(8);
  for (std::size_t p = 0; p < 100; ++p) {
    rope.angles(p, c, s);
    for (std::size_t i = 0; i < 8; ++i) {
      ASSERT_EQ(cache.cos()(p, i), c[i]) << p;
      ASSERT_EQ(cache.sin()(p, i), s[i]) << p;
    }
  }
  // A new cache of 100 positions holds the same bytes as the grown one.
  const RopeCache fresh(rope, 100);
  EXPECT_EQ(bytes_of(fresh.cos()), bytes_of(cache.cos()));
  EXPECT_EQ(bytes_of(fresh.sin()), bytes_of(cache.sin()));
}

// --- bad input ------------------------------------------------------------------------------

// Runs forward and backward, cached and (unless cached_only) direct, on x; each must throw E
// whose message contains `needle`, and leave x as it was.
template <class E>
void expect_rejected(const std::string& needle, MatrixView<float> x, std::size_t H, std::size_t B,
                     std::size_t T, const PositionSource& src, const RopeCache& cache,
                     bool cached_only = false) {
  const auto before = bytes_of(x);
  for (int i = 0; i < (cached_only ? 2 : 4); ++i) {
    try {
      if (i == 0) rope_forward(x, H, B, T, src, cache);
      if (i == 1) rope_backward(x, H, B, T, src, cache);
      if (i == 2) rope_forward(x, H, B, T, src, cache.rope());
      if (i == 3) rope_backward(x, H, B, T, src, cache.rope());
      ADD_FAILURE() << needle << ": call " << i << " passed";
    } catch (const E& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << needle << ": call " << i << " threw the wrong type: " << e.what();
    }
    EXPECT_EQ(bytes_of(x), before) << needle << ": call " << i << " wrote its output";
  }
}

TEST(RopeBadInput, ConstructionRefusesOddOrZeroDimsRotaryDimBaseAndLayout) {
  EXPECT_THROW(Rope(7, RopeLayout::half), std::invalid_argument);
  EXPECT_THROW(Rope(0, RopeLayout::half), std::invalid_argument);
  EXPECT_THROW(Rope(8, RopeLayout::half, {.rotary_dim = 3}), std::invalid_argument);
  EXPECT_THROW(Rope(8, RopeLayout::half, {.rotary_dim = 10}), std::invalid_argument);
  EXPECT_THROW(Rope(8, RopeLayout::half, {.base = 0.0}), std::invalid_argument);
  EXPECT_THROW(Rope(8, RopeLayout::half, {.base = INFINITY}), std::invalid_argument);
  EXPECT_THROW(Rope(8, static_cast<RopeLayout>(9)), std::invalid_argument);
  // The layout has no default: a value-initialized one ({} is 0) is no listed value (it was
  // interleaved, silently).
  try {
    Rope(8, {});
    FAIL() << "no exception for RopeLayout{}";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layout 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Rope(8, RopeLayout{}, {.base = 500000}), std::invalid_argument);
  EXPECT_EQ(Rope(8, RopeLayout::interleaved).layout(), RopeLayout::interleaved);
  try {
    Rope(7, RopeLayout::interleaved);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("D = 7"), std::string::npos) << e.what();
  }
  const Rope ok(8, RopeLayout::half);
  std::vector<float> c(4), s(3);
  EXPECT_THROW(ok.angles(0, c, s), std::invalid_argument);
  // The widest head: kMaxRopeHeadDim columns, and not one pair more (a mistyped size must not
  // compute billions of frequencies).
  EXPECT_EQ(Rope(kMaxRopeHeadDim, RopeLayout::half).pairs(), kMaxRopeHeadDim / 2);
  try {
    Rope(kMaxRopeHeadDim + 2, RopeLayout::half);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("D = 65538"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Rope(std::size_t{1} << 40, RopeLayout::half), std::invalid_argument);
  EXPECT_THROW((void)rope_frequencies(10000.0, kMaxRopeHeadDim + 2, NoScaling{}),
               std::invalid_argument);
}

TEST(RopeBadInput, ShapesPositionsAndTheCacheLimitLeaveTheOutputUntouched) {
  const std::size_t B = 2, T = 3, H = 3, D = 4;
  const RopeCache cache(Rope(D, RopeLayout::interleaved), 8);
  Matrix<float> x = random_matrix(B * T, H * D, 1);
  const auto ok = PositionSource::contiguous();
  // Columns not divisible by H, and a whole number of heads of the wrong dimension.
  Matrix<float> x13 = random_matrix(B * T, 13, 2), x18 = random_matrix(B * T, 18, 3);
  expect_rejected<std::invalid_argument>("not divisible by 3 heads", x13, H, B, T, ok, cache);
  expect_rejected<std::invalid_argument>("3 heads of dimension 6", x18, H, B, T, ok, cache);
  // The whole fused qkv buffer passed instead of its q block: 3C columns.
  Matrix<float> qkv = random_matrix(B * T, 3 * H * D, 4);
  expect_rejected<std::invalid_argument>("dimension D = 4", qkv, H, B, T, ok, cache);
  expect_rejected<std::invalid_argument>("heads is 0", x, 0, B, T, ok, cache);
  expect_rejected<std::invalid_argument>("rows, expected B*T", x, H, B, T + 1, ok, cache);
  expect_rejected<std::invalid_argument>("empty batch", x, H, 0, T, ok, cache);
  // Positions: past the cache, negative ids, a bad mask value.
  expect_rejected<SequenceTooLong>("RopeCache of 8 positions", x, H, B, T,
                                   PositionSource::contiguous(6), cache, true);
  Matrix<std::int64_t> ids(B, T);
  ids(1, 2) = -3;
  expect_rejected<std::out_of_range>("-3 at batch row 1, token 2", x, H, B, T,
                                     PositionSource::explicit_ids(ids), cache);
  ids(1, 2) = 8;
  expect_rejected<SequenceTooLong>("batch row 1, token 2", x, H, B, T,
                                   PositionSource::explicit_ids(ids), cache, true);
  Matrix<std::int32_t> mask(B, T);
  mask(0, 1) = 2;
  expect_rejected<std::invalid_argument>("value 2 at batch row 0, token 1", x, H, B, T,
                                         PositionSource::padding_mask(mask), cache);
  // The uncached path has no table, only the int64 limit.
  try {
    rope_forward(x.view(), H, B, T, PositionSource::contiguous(std::size_t{1} << 63), cache.rope());
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_NE(std::string(e.what()).find("below 2^63 - 1"), std::string::npos) << e.what();
  }
}

// --- what must not compile ------------------------------------------------------------------

template <class C>
concept CosOf = requires(C&& c) {
  std::forward<C>(c).cos();
};
template <class C>
concept SinOf = requires(C&& c) {
  std::forward<C>(c).sin();
};
// A view of a temporary cache would dangle.
static_assert(!CosOf<RopeCache> && !SinOf<RopeCache>);
static_assert(CosOf<RopeCache&> && CosOf<const RopeCache&> && SinOf<const RopeCache&>);
// ... a const one too (`const RopeCache make_cache();` then `make_cache().cos()`).
static_assert(!CosOf<const RopeCache> && !SinOf<const RopeCache>);
template <class C>
concept RopeOf = requires(C&& c) {
  std::forward<C>(c).rope();
};
static_assert(RopeOf<const RopeCache&> && !RopeOf<RopeCache> && !RopeOf<const RopeCache>);
// A temporary Rope's scaling and frequencies come as copies, not references into it.
static_assert(
    std::is_same_v<decltype(std::declval<const Rope&>().frequencies()), const RopeFrequencies&>);
static_assert(std::is_same_v<decltype(std::declval<Rope>().frequencies()), RopeFrequencies>);
static_assert(std::is_same_v<decltype(std::declval<const Rope>().scaling()), RopeScaling>);
// The layout has no default value either: RopeLayout{} is no listed layout.
static_assert(RopeLayout{} != RopeLayout::interleaved && RopeLayout{} != RopeLayout::half);
// The layout has no default: a checkpoint's layout must be named.
static_assert(!std::is_constructible_v<Rope, std::size_t>);
static_assert(std::is_constructible_v<Rope, std::size_t, RopeLayout>);
// A Rope is not silently turned into an (empty) cache.
static_assert(!std::is_convertible_v<Rope, RopeCache>);

}  // namespace
}  // namespace posemb
