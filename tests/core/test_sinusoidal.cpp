// sinusoidal_positional_encoding against a long double reference, at small positions, near
// 10^6 and 10^9, and up to 2^31, in every layout and frequency spacing; and against the tables
// of fairseq, Hugging Face Marian and tensor2tensor (tests/oracles/sinusoidal_peers.py, written
// from their formulas).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "posemb/sinusoidal.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

constexpr SinusoidalOptions kConcatenated{.layout = SinusoidalLayout::concatenated};
constexpr SinusoidalOptions kT2T{.frequencies = SinusoidalFrequencies::tensor2tensor};
constexpr SinusoidalOptions kConcatenatedT2T{.layout = SinusoidalLayout::concatenated,
                                             .frequencies = SinusoidalFrequencies::tensor2tensor};

// The reference: element (p, col) of the documented formula, evaluated entirely in long double
// (64-bit mantissa), with the exponent and the power formed in long double, far more accurate
// than the 3e-7 bound. Written from the header's description, not from the implementation.
long double reference(std::size_t p, std::size_t col, std::size_t dim,
                      const SinusoidalOptions& o = {}) {
  const bool t2t = o.frequencies == SinusoidalFrequencies::tensor2tensor;
  const std::size_t sines = t2t ? dim / 2 : (dim + 1) / 2;
  const std::size_t cosines = dim / 2;
  std::size_t i = 0;
  bool is_sin = true;
  if (o.layout == SinusoidalLayout::interleaved) {
    i = col / 2;
    is_sin = col % 2 == 0;
    if (i >= (is_sin ? sines : cosines)) return 0.0L;  // t2t: an odd dim's zero column
  } else if (col < sines) {
    i = col;
  } else if (col < sines + cosines) {
    i = col - sines;
    is_sin = false;
  } else {
    return 0.0L;
  }
  const std::size_t h = dim / 2;
  const long double expo = t2t ? static_cast<long double>(i) / (h > 1 ? h - 1 : 1)
                               : static_cast<long double>(2 * i) / static_cast<long double>(dim);
  const long double angle =
      static_cast<long double>(p) / std::pow(static_cast<long double>(o.base), expo);
  return is_sin ? std::sin(angle) : std::cos(angle);
}

// The contract's bound: 3e-7 from the exact value. A float result alone carries up to half an
// ulp of 1.0f (2^-25 = 3e-8) of rounding, so this leaves room only for an accurate angle.
constexpr double kBound = 3e-7;

double max_error(const Matrix<float>& pe, std::size_t start, const SinusoidalOptions& o = {}) {
  double worst = 0.0;
  for (std::size_t r = 0; r < pe.rows(); ++r) {
    for (std::size_t c = 0; c < pe.cols(); ++c) {
      const long double ref = reference(start + r, c, pe.cols(), o);
      worst = std::max(worst, static_cast<double>(std::fabs(pe(r, c) - ref)));
    }
  }
  return worst;
}

TEST(Sinusoidal, ShapeAndLayoutAreInterleavedSinCos) {
  const Matrix<float> pe = sinusoidal_positional_encoding(5, 6);
  ASSERT_EQ(pe.rows(), 5u);
  ASSERT_EQ(pe.cols(), 6u);
  // Position 0: sin 0 = 0 and cos 0 = 1 in every pair.
  for (std::size_t c = 0; c < 6; ++c) EXPECT_EQ(pe(0, c), c % 2 == 0 ? 0.0f : 1.0f);
  // Column 0 has frequency 1: sin(p); column 1: cos(p).
  EXPECT_FLOAT_EQ(pe(3, 0), static_cast<float>(std::sin(3.0)));
  EXPECT_FLOAT_EQ(pe(3, 1), static_cast<float>(std::cos(3.0)));
  // Column 2 has frequency 10000^(-2/6).
  EXPECT_FLOAT_EQ(pe(4, 2), static_cast<float>(std::sin(4.0 / std::pow(10000.0, 2.0 / 6.0))));
}

TEST(Sinusoidal, OddEmbedDimEndsWithASineColumn) {
  const Matrix<float> pe = sinusoidal_positional_encoding(4, 15);
  ASSERT_EQ(pe.cols(), 15u);
  const double inv = std::pow(10000.0, -14.0 / 15.0);
  EXPECT_FLOAT_EQ(pe(3, 14), static_cast<float>(std::sin(3.0 * inv)));
  EXPECT_LE(max_error(pe, 0), kBound);
}

TEST(Sinusoidal, MatchesLongDoubleReferenceAtSmallPositions) {
  for (std::size_t dim : {1u, 2u, 3u, 15u, 64u, 768u}) {
    const Matrix<float> pe = sinusoidal_positional_encoding(2049, dim);
    EXPECT_LE(max_error(pe, 0), kBound) << "dim " << dim;
  }
}

TEST(Sinusoidal, StartOffsetsThePositions) {
  const Matrix<float> all = sinusoidal_positional_encoding(40, 16);
  const Matrix<float> tail = sinusoidal_positional_encoding(10, 16, 30);
  for (std::size_t r = 0; r < 10; ++r) {
    for (std::size_t c = 0; c < 16; ++c) EXPECT_EQ(tail(r, c), all(30 + r, c));
  }
}

TEST(Sinusoidal, AccurateNearAMillionAndABillionAndUpTo2To31) {
  for (std::size_t start : {std::size_t{999'990}, std::size_t{999'999'990},
                            std::size_t{2147483648u - 20}, std::size_t{1u << 30}}) {
    for (std::size_t dim : {8u, 64u, 1024u, 4097u}) {
      const Matrix<float> pe = sinusoidal_positional_encoding(20, dim, start);
      EXPECT_LE(max_error(pe, start), kBound) << "start " << start << " dim " << dim;
    }
  }
}

// The long double reference really is needed: a float32 angle misses the bound by far.
TEST(Sinusoidal, Float32AnglesWouldFailTheBound) {
  const std::size_t p = 999'999'999;
  const float angle = static_cast<float>(p) * 1.0f;  // column 0, frequency 1
  const long double exact = std::sin(static_cast<long double>(p));
  EXPECT_GT(std::fabs(std::sin(angle) - exact), 1e-3);
  const Matrix<float> pe = sinusoidal_positional_encoding(1, 2, p);
  EXPECT_LE(std::fabs(pe(0, 0) - exact), kBound);
}

TEST(Sinusoidal, OtherBasesAndDoubleOutput) {
  const Matrix<float> pe = sinusoidal_positional_encoding(100, 32, 5, {.base = 500000.0});
  EXPECT_LE(max_error(pe, 5, {.base = 500000.0}), kBound);
  Matrix<double> d(64, 10);
  sinusoidal_positional_encoding_into(d.view(), 123456789);
  double worst = 0.0;
  for (std::size_t r = 0; r < 64; ++r) {
    for (std::size_t c = 0; c < 10; ++c) {
      worst = std::max(worst,
                       static_cast<double>(std::fabs(d(r, c) - reference(123456789 + r, c, 10))));
    }
  }
  EXPECT_LE(worst, 1e-8);
}

TEST(Sinusoidal, IntoAStridedViewWritesOnlyItsColumns) {
  std::vector<float> buf(3 * 6, -9.0f);
  MatrixView<float> v(buf.data(), 3, 4, 6);
  sinusoidal_positional_encoding_into(v, 7);
  const Matrix<float> ref = sinusoidal_positional_encoding(3, 4, 7);
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(v(r, c), ref(r, c));
    EXPECT_EQ(buf[r * 6 + 4], -9.0f);
    EXPECT_EQ(buf[r * 6 + 5], -9.0f);
  }
}

TEST(Sinusoidal, EmptyShapesAreValid) {
  EXPECT_EQ(sinusoidal_positional_encoding(0, 8).rows(), 0u);
  EXPECT_EQ(sinusoidal_positional_encoding(3, 0).cols(), 0u);
}

// No columns: nothing to compute, however many rows (these looped over 2^40 or 2^64 rows).
TEST(Sinusoidal, NoColumnsReturnAtOnceForAnyRowCount) {
  for (const std::size_t rows : {std::size_t{1} << 40, SIZE_MAX}) {
    const Matrix<float> m = sinusoidal_positional_encoding(rows, 0);
    EXPECT_EQ(m.rows(), rows);
    EXPECT_EQ(m.cols(), 0u);
    sinusoidal_positional_encoding_into(MatrixView<float>(nullptr, rows, 0));
    sinusoidal_positional_encoding_into(MatrixView<double>(nullptr, rows, 0));
    sinusoidal_positional_encoding_into(MatrixView<float>(nullptr, rows, 0), 0,
                                        {.layout = SinusoidalLayout::concatenated});
  }
  // The positions are still checked: positions [2, 2 + SIZE_MAX) pass SIZE_MAX.
  EXPECT_THROW((void)sinusoidal_positional_encoding(SIZE_MAX, 0, 2), std::out_of_range);
}

TEST(Sinusoidal, BadArgumentsThrowAndWriteNothing) {
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, {.base = 0.0}), std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, {.base = -1.0}),
               std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, {.base = std::nan("")}),
               std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, {.base = INFINITY}),
               std::invalid_argument);
  EXPECT_THROW(
      (void)sinusoidal_positional_encoding(2, 4, 0, {.layout = static_cast<SinusoidalLayout>(7)}),
      std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(
                   2, 4, 0, {.frequencies = static_cast<SinusoidalFrequencies>(7)}),
               std::invalid_argument);
  const std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, kMax), std::out_of_range);
  EXPECT_NO_THROW((void)sinusoidal_positional_encoding(1, 4, kMax));
  Matrix<float> out(3, 4);
  out(0, 0) = 5.0f;
  EXPECT_THROW(sinusoidal_positional_encoding_into(out.view(), kMax - 1), std::out_of_range);
  EXPECT_THROW(sinusoidal_positional_encoding_into(out.view(), 0, {.base = -2.0}),
               std::invalid_argument);
  EXPECT_EQ(out(0, 0), 5.0f);
  EXPECT_EQ(out(2, 3), 0.0f);
}

// --- the concatenated layout and the tensor2tensor spacing ---------------------------------

TEST(Sinusoidal, ConcatenatedPutsEverySineThenEveryCosine) {
  // d = 5, vaswani frequencies f_i = 10000^(-2i/5), i < 3: [s0 s1 s2 | c0 c1] (HF Marian's
  // layout, whose odd dims have one more sine than cosines).
  const Matrix<float> pe = sinusoidal_positional_encoding(4, 5, 0, kConcatenated);
  const Matrix<float> il = sinusoidal_positional_encoding(4, 5);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(pe(r, 0), il(r, 0));  // s0
    EXPECT_EQ(pe(r, 1), il(r, 2));  // s1
    EXPECT_EQ(pe(r, 2), il(r, 4));  // s2
    EXPECT_EQ(pe(r, 3), il(r, 1));  // c0
    EXPECT_EQ(pe(r, 4), il(r, 3));  // c1
  }
  EXPECT_FLOAT_EQ(pe(3, 1), static_cast<float>(std::sin(3.0 * std::pow(10000.0, -2.0 / 5.0))));
}

TEST(Sinusoidal, Tensor2TensorSpacingEndsAtOneOverBaseAndPadsAnOddDim) {
  // d = 9: h = 4 frequencies 10000^(-i/3) = 1, 10000^(-1/3), 10000^(-2/3), 1/10000;
  // [s0 s1 s2 s3 c0 c1 c2 c3 0] concatenated, [s0 c0 s1 c1 ... s3 c3 0] interleaved.
  const std::size_t p = 7;
  const Matrix<float> cat = sinusoidal_positional_encoding(1, 9, p, kConcatenatedT2T);
  const Matrix<float> il = sinusoidal_positional_encoding(1, 9, p, kT2T);
  for (std::size_t i = 0; i < 4; ++i) {
    const double f = std::pow(10000.0, -static_cast<double>(i) / 3.0);
    EXPECT_FLOAT_EQ(cat(0, i), static_cast<float>(std::sin(7.0 * f))) << i;
    EXPECT_FLOAT_EQ(cat(0, 4 + i), static_cast<float>(std::cos(7.0 * f))) << i;
    EXPECT_EQ(il(0, 2 * i), cat(0, i));
    EXPECT_EQ(il(0, 2 * i + 1), cat(0, 4 + i));
  }
  EXPECT_EQ(cat(0, 8), 0.0f);
  EXPECT_EQ(il(0, 8), 0.0f);
  EXPECT_FLOAT_EQ(cat(0, 3), static_cast<float>(std::sin(7.0 / 10000.0)));
  // h = 1 (d = 2 or 3): the single frequency is 1.
  const Matrix<float> two = sinusoidal_positional_encoding(1, 3, p, kConcatenatedT2T);
  EXPECT_FLOAT_EQ(two(0, 0), static_cast<float>(std::sin(7.0)));
  EXPECT_FLOAT_EQ(two(0, 1), static_cast<float>(std::cos(7.0)));
  EXPECT_EQ(two(0, 2), 0.0f);
  EXPECT_EQ(sinusoidal_positional_encoding(2, 1, 0, kT2T)(1, 0), 0.0f);
}

TEST(Sinusoidal, EveryLayoutAndSpacingKeepsTheAccuracyBoundUpTo2To31) {
  for (const SinusoidalOptions& o : {kConcatenated, kT2T, kConcatenatedT2T}) {
    for (std::size_t start :
         {std::size_t{0}, std::size_t{999'999'990}, std::size_t{2147483648u - 20}}) {
      for (std::size_t dim : {4u, 15u, 64u, 1025u}) {
        const Matrix<float> pe = sinusoidal_positional_encoding(20, dim, start, o);
        EXPECT_LE(max_error(pe, start, o), kBound)
            << "start " << start << " dim " << dim << " layout " << int(o.layout) << " frequencies "
            << int(o.frequencies);
      }
    }
  }
}

// --- the peers ------------------------------------------------------------------------------

struct PeerCase {
  std::size_t rows, dim, start;
};
struct PeerTables {
  Matrix<double> exact;  // the peer's formula in float64
  Matrix<float> native;  // the peer's own table (its own precision)
};

// One oracle run (one Python start) for every case.
std::vector<PeerTables> run_peer(const std::string& peer, const std::vector<PeerCase>& cases) {
  testing::TempDir dir;
  std::string args = dir.file("");
  for (const PeerCase& c : cases) {
    args += " " + peer + " " + std::to_string(c.rows) + " " + std::to_string(c.dim) + " " +
            std::to_string(c.start);
  }
  testing::run_oracle("sinusoidal_peers.py", args);
  std::vector<PeerTables> out;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const std::string n = std::to_string(k);
    out.push_back(
        {testing::read_raw<double>(dir.file("exact_" + n + ".f64"), cases[k].rows, cases[k].dim),
         testing::read_raw<float>(dir.file("native_" + n + ".f32"), cases[k].rows, cases[k].dim)});
  }
  return out;
}

// Against a peer's float64 formula, posemb keeps its own bound (3e-7; the float64 evaluation is
// within ~1e-12 of exact at these positions). Against a float32 table computed from float64
// values (Marian, tensor2tensor here), add that table's own rounding, half an ulp of 1: 2^-25.
void expect_matches(const Matrix<float>& ours, const PeerTables& peer, double native_extra) {
  for (std::size_t r = 0; r < ours.rows(); ++r) {
    for (std::size_t c = 0; c < ours.cols(); ++c) {
      ASSERT_NEAR(ours(r, c), peer.exact(r, c), kBound) << "row " << r << " col " << c;
      ASSERT_NEAR(ours(r, c), peer.native(r, c), kBound + native_extra)
          << "row " << r << " col " << c;
    }
  }
}

TEST(SinusoidalPeers, ConcatenatedIsHuggingFaceMarian) {
  std::vector<PeerCase> cases;
  for (std::size_t dim : {6u, 7u, 64u, 512u}) {
    for (std::size_t start : {0u, 1000u}) cases.push_back({48, dim, start});
  }
  const auto peer = run_peer("marian", cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const PeerCase& c = cases[k];
    SCOPED_TRACE("dim " + std::to_string(c.dim) + " start " + std::to_string(c.start));
    const auto ours = sinusoidal_positional_encoding(c.rows, c.dim, c.start, kConcatenated);
    expect_matches(ours, peer[k], std::ldexp(1.0, -25));
  }
}

TEST(SinusoidalPeers, ConcatenatedTensor2TensorIsTensor2Tensor) {
  const std::vector<PeerCase> cases = {{40, 4, 5}, {40, 9, 5}, {40, 64, 5}, {8, 64, 1u << 20}};
  const auto peer = run_peer("tensor2tensor", cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const PeerCase& c = cases[k];
    SCOPED_TRACE("dim " + std::to_string(c.dim) + " start " + std::to_string(c.start));
    const auto ours = sinusoidal_positional_encoding(c.rows, c.dim, c.start, kConcatenatedT2T);
    expect_matches(ours, peer[k], std::ldexp(1.0, -25));
  }
}

// fairseq evaluates its formula in float32: freq_i = exp(fl(i * -step)) and the angle
// p * freq_i are each rounded, and exp(x + e) = exp(x)(1 + e), so its angle is off by up to
// about angle * (|x_i| + 2) * 2^-23 with x_i = i * step (<= log 10000); sin and cos then differ
// by as much, plus their own rounding (2^-24). Against the float64 formula posemb keeps 3e-7.
TEST(SinusoidalPeers, ConcatenatedTensor2TensorIsFairseq) {
  std::vector<PeerCase> cases;
  for (std::size_t dim : {4u, 7u, 64u, 512u}) {
    for (std::size_t start : {2u, 3000u}) {  // 2: the first position of fairseq's padding_idx 1
      cases.push_back({32, dim, start});
    }
  }
  const auto peer = run_peer("fairseq", cases);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto [rows, dim, start] = cases[k];
    SCOPED_TRACE("dim " + std::to_string(dim) + " start " + std::to_string(start));
    const auto ours = sinusoidal_positional_encoding(rows, dim, start, kConcatenatedT2T);
    const std::size_t h = dim / 2;
    const double step = std::log(10000.0) / static_cast<double>(h - 1);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < dim; ++c) {
        ASSERT_NEAR(ours(r, c), peer[k].exact(r, c), kBound) << "row " << r << " col " << c;
        const std::size_t i = c < h ? c : c - h;  // the frequency of this column
        const double x = static_cast<double>(i) * step;
        const double angle = static_cast<double>(start + r) * std::exp(-x);
        const double tol = kBound + angle * (x + 2.0) * std::ldexp(1.0, -23) + std::ldexp(1.0, -24);
        ASSERT_NEAR(ours(r, c), peer[k].native(r, c), tol) << "row " << r << " col " << c;
      }
    }
  }
}

}  // namespace
}  // namespace posemb
