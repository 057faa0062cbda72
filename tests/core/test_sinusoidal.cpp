// sinusoidal_positional_encoding against a long double reference, at small positions, near
// 10^6 and 10^9, and up to 2^31.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "posemb/sinusoidal.hpp"

namespace posemb {
namespace {

// The reference: the formula evaluated entirely in long double (64-bit mantissa), with the
// exponent 2i/d and the power formed in long double, far more accurate than the 3e-7 bound.
long double reference(std::size_t p, std::size_t col, std::size_t dim, long double base) {
  const std::size_t i = col / 2;
  const long double angle =
      static_cast<long double>(p) /
      std::pow(base, static_cast<long double>(2 * i) / static_cast<long double>(dim));
  return col % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

// The contract's bound: 3e-7 from the exact value. A float result alone carries up to half an
// ulp of 1.0f (2^-25 = 3e-8) of rounding, so this leaves room only for an accurate angle.
constexpr double kBound = 3e-7;

double max_error(const Matrix<float>& pe, std::size_t start, double base) {
  double worst = 0.0;
  for (std::size_t r = 0; r < pe.rows(); ++r) {
    for (std::size_t c = 0; c < pe.cols(); ++c) {
      const long double ref = reference(start + r, c, pe.cols(), base);
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
  EXPECT_LE(max_error(pe, 0, 10000.0), kBound);
}

TEST(Sinusoidal, MatchesLongDoubleReferenceAtSmallPositions) {
  for (std::size_t dim : {1u, 2u, 3u, 15u, 64u, 768u}) {
    const Matrix<float> pe = sinusoidal_positional_encoding(2049, dim);
    EXPECT_LE(max_error(pe, 0, 10000.0), kBound) << "dim " << dim;
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
      EXPECT_LE(max_error(pe, start, 10000.0), kBound) << "start " << start << " dim " << dim;
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
  const Matrix<float> pe = sinusoidal_positional_encoding(100, 32, 5, 500000.0);
  EXPECT_LE(max_error(pe, 5, 500000.0), kBound);
  Matrix<double> d(64, 10);
  sinusoidal_positional_encoding_into(d.view(), 123456789);
  double worst = 0.0;
  for (std::size_t r = 0; r < 64; ++r) {
    for (std::size_t c = 0; c < 10; ++c) {
      worst = std::max(worst, static_cast<double>(
                                  std::fabs(d(r, c) - reference(123456789 + r, c, 10, 10000.0L))));
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

TEST(Sinusoidal, BadArgumentsThrowAndWriteNothing) {
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, 0.0), std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, -1.0), std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, std::nan("")), std::invalid_argument);
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, 0, INFINITY), std::invalid_argument);
  const std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW((void)sinusoidal_positional_encoding(2, 4, kMax), std::out_of_range);
  EXPECT_NO_THROW((void)sinusoidal_positional_encoding(1, 4, kMax));
  Matrix<float> out(3, 4);
  out(0, 0) = 5.0f;
  EXPECT_THROW(sinusoidal_positional_encoding_into(out.view(), kMax - 1), std::out_of_range);
  EXPECT_EQ(out(0, 0), 5.0f);
}

}  // namespace
}  // namespace posemb
