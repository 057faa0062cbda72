// ALiBi: the slopes against Press et al.'s rule (their reference code's recursion, evaluated here
// in long double, and the values the rule gives exactly); the bias bit for bit against a plain
// scalar reference in double (causal and symmetric, start offsets, awkward sizes, strided views,
// 1 and 2 threads); the backward's dslopes against the reference sum and central finite
// differences; every bad input rejected with the numbers named and nothing written.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "posemb/alibi.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::expect_invalid;
using testing::random_matrix;

// --- slopes ---------------------------------------------------------------------------------

// The reference code of the ALiBi paper (ofirpress/attention_with_linear_biases, get_slopes),
// written out in long double:
//   start = 2^(-2^-(log2(n) - 3)); slopes = start * start^i, i < n          (n a power of two)
//   get_slopes(p) + get_slopes(2p)[0::2][:n - p], p = 2^floor(log2(n))      (otherwise)
std::vector<long double> press_slopes(std::size_t n) {
  const long double l = std::log2(static_cast<long double>(n));
  if (l == std::floor(l)) {
    const long double start = std::exp2(-std::exp2(-(l - 3)));
    std::vector<long double> out;
    for (std::size_t i = 0; i < n; ++i)
      out.push_back(start * std::pow(start, static_cast<long double>(i)));
    return out;
  }
  const auto p = static_cast<std::size_t>(std::exp2(std::floor(l)));
  std::vector<long double> out = press_slopes(p);
  const std::vector<long double> twice = press_slopes(2 * p);
  for (std::size_t i = 0; out.size() < n; i += 2) out.push_back(twice[i]);
  return out;
}

TEST(AlibiSlopes, EqualPressEtAlForThePapersHeadCounts) {
  for (std::size_t n : {1, 2, 3, 5, 8, 12, 16, 24, 40, 64, 96, 112, 128}) {
    const std::vector<float> got = alibi_slopes(n);
    const std::vector<long double> want = press_slopes(n);
    ASSERT_EQ(got.size(), n);
    for (std::size_t h = 0; h < n; ++h) {
      // A correctly rounded float is within half a float ulp (2^-24 relative) of the exact
      // value; the long double reference is within a few long double ulps of it.
      const long double rel = std::fabs(static_cast<long double>(got[h]) - want[h]) / want[h];
      EXPECT_LE(rel, 0x1p-24L * (1 + 1e-9L)) << n << " heads, head " << h;
      // And got is the float nearest to want: its neighbours are farther.
      const float up = std::nextafter(got[h], 1.0f), down = std::nextafter(got[h], 0.0f);
      EXPECT_LE(std::fabs(got[h] - want[h]), std::fabs(up - want[h])) << n << ", " << h;
      EXPECT_LE(std::fabs(got[h] - want[h]), std::fabs(down - want[h])) << n << ", " << h;
    }
  }
}

TEST(AlibiSlopes, AreTheRulesExactPowersOfTwo) {
  // n = 8: 2^-1 ... 2^-8 (the paper's example), exactly.
  const std::vector<float> s8 = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s8[h], std::ldexp(1.0f, -(h + 1))) << h;
  // n = 1: 2^-8. n = 12: the 8 of n = 8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (the odd slopes of
  // n = 16, 2^(-k/2) for k = 1, 3, 5, 7).
  EXPECT_EQ(alibi_slopes(1), std::vector<float>{0x1p-8f});
  const std::vector<float> s12 = alibi_slopes(12);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s12[h], s8[h]);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(s12[8 + k], static_cast<float>(std::exp2(-(2 * k + 1) / 2.0))) << k;
  }
  // n = 16: 2^(-h/2); n = 40: 2^(-h/4) for h = 1..32, then 2^(-k/8), k = 1, 3, ..., 15.
  const std::vector<float> s16 = alibi_slopes(16), s40 = alibi_slopes(40);
  for (int h = 0; h < 16; ++h) EXPECT_EQ(s16[h], static_cast<float>(std::exp2(-(h + 1) / 2.0)));
  for (int h = 0; h < 32; ++h) EXPECT_EQ(s40[h], static_cast<float>(std::exp2(-(h + 1) / 4.0)));
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(s40[32 + k], static_cast<float>(std::exp2(-(2 * k + 1) / 8.0)));
  }
  // n = 112: 64 of 2^(-h/8), then 48 of 2^(-k/16), k odd: the last is 2^(-95/16).
  const std::vector<float> s112 = alibi_slopes(112);
  EXPECT_EQ(s112[63], 0x1p-8f);
  EXPECT_EQ(s112[111], static_cast<float>(std::exp2(-95.0 / 16.0)));
}

TEST(AlibiSlopes, RejectNoHeads) {
  try {
    (void)alibi_slopes(0);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("heads is 0"), std::string::npos) << e.what();
  }
}

TEST(AlibiSlopes, RefuseMoreHeadsThanTheMemoryBudget) {
  // 2^40 heads: 4 TiB of slopes, a MemoryLimitExceeded naming the bytes, not std::bad_alloc.
  try {
    (void)alibi_slopes(std::size_t{1} << 40);
    ADD_FAILURE() << "no throw";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.bytes(), std::size_t{4} << 40);
    EXPECT_NE(std::string(e.what()).find("alibi_slopes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)alibi_slopes(SIZE_MAX), MemoryLimitExceeded);
}

// --- the bias -------------------------------------------------------------------------------

struct Case {
  std::size_t B, H, Tq, Tk, start;
  AlibiForm form;
};

// The plain reference: the bias in double (exact: a float slope times an integer below 2^24),
// rounded once to float, added in float; -inf over keys after the query in the causal form.
void reference_forward(MatrixView<float> s, const std::vector<float>& slopes, const Case& c) {
  for (std::size_t b = 0; b < c.B; ++b) {
    for (std::size_t h = 0; h < c.H; ++h) {
      for (std::size_t i = 0; i < c.Tq; ++i) {
        const auto q = static_cast<std::int64_t>(c.start + i);
        for (std::size_t j = 0; j < c.Tk; ++j) {
          float& v = s((b * c.H + h) * c.Tq + i, j);
          const std::int64_t d = q - static_cast<std::int64_t>(j);
          if (c.form == AlibiForm::causal && d < 0) {
            v = -std::numeric_limits<float>::infinity();
          } else {
            // |d| as float first (exact below 2^24): the documented rounding of far distances.
            const double dist = static_cast<float>(std::llabs(d));
            const double bias = -static_cast<double>(slopes[h]) * dist;
            v = v + static_cast<float>(bias);
          }
        }
      }
    }
  }
}

// dL/dslopes for dscores g: sum of g * -|d| over the unmasked keys, in long double.
std::vector<long double> reference_dslopes(MatrixView<const float> g, const Case& c) {
  std::vector<long double> out(c.H, 0.0L);
  for (std::size_t r = 0; r < g.rows(); ++r) {
    const std::size_t h = (r / c.Tq) % c.H;
    const auto q = static_cast<std::int64_t>(c.start + r % c.Tq);
    for (std::size_t j = 0; j < c.Tk; ++j) {
      const std::int64_t d = q - static_cast<std::int64_t>(j);
      if (c.form == AlibiForm::causal && d < 0) continue;
      out[h] += static_cast<long double>(g(r, j)) * -static_cast<long double>(std::llabs(d));
    }
  }
  return out;
}

std::string describe(const Case& c) {
  return "B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) + " Tq=" + std::to_string(c.Tq) +
         " Tk=" + std::to_string(c.Tk) + " start=" + std::to_string(c.start) +
         (c.form == AlibiForm::causal ? " causal" : " symmetric");
}

// Scores as a strided view (one spare column on each side, shifted off alignment): forward and
// backward against the references; the spare columns untouched.
void check_case(const Case& c) {
  SCOPED_TRACE(describe(c));
  const std::size_t rows = c.B * c.H * c.Tq;
  const std::vector<float> slopes = alibi_slopes(c.H);
  const AlibiOptions o{c.form, c.start};
  Matrix<float> buf = random_matrix(rows, c.Tk + 2, 7, 3.0f);
  const Matrix<float> before = buf;
  MatrixView<float> s(buf.data() + 1, rows, c.Tk, c.Tk + 2);
  Matrix<float> want(s);
  reference_forward(want.view(), slopes, c);
  alibi_forward(s, slopes, c.B, c.Tq, o);
  EXPECT_EQ(bytes_of(s), bytes_of(want));

  // Backward: masked keys' gradient zeroed, the rest unchanged; dslopes added into.
  Matrix<float> g0 = random_matrix(rows, c.Tk, 9);
  Matrix<float> g = g0;
  std::vector<float> dslopes(c.H, 0.5f);
  alibi_backward(g.view(), dslopes, c.H, c.B, c.Tq, o);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < c.Tk; ++j) {
      const bool masked = c.form == AlibiForm::causal && j > c.start + r % c.Tq;
      ASSERT_EQ(g(r, j), masked ? 0.0f : g0(r, j)) << r << ", " << j;
    }
  }
  const std::vector<long double> want_d = reference_dslopes(g0.cview(), c);
  for (std::size_t h = 0; h < c.H; ++h) {
    // Summed in double, rounded to float, added to 0.5 in float: two float roundings of the
    // result; each distance rounded to float (exact below 2^24, else within 2^-24 of it) and
    // the double sum's error: within 2^-22 of the terms' magnitude.
    long double mag = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      if ((r / c.Tq) % c.H != h) continue;
      for (std::size_t j = 0; j < c.Tk; ++j) {
        mag += std::fabs(g0(r, j) * static_cast<long double>(c.start + r % c.Tq + c.Tk));
      }
    }
    const long double exact = 0.5L + want_d[h];
    const long double tol = 0x1p-23L * (std::fabs(exact) + 1) + 0x1p-22L * mag;
    EXPECT_LE(std::fabs(dslopes[h] - exact), tol) << "head " << h;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(buf(r, 0), before(r, 0));
    EXPECT_EQ(buf(r, c.Tk + 1), before(r, c.Tk + 1));
  }
}

TEST(Alibi, EqualsTheScalarReferenceBitForBit) {
  const Case cases[] = {
      {1, 1, 1, 1, 0, AlibiForm::causal},
      {2, 3, 5, 5, 0, AlibiForm::causal},
      {1, 12, 7, 7, 0, AlibiForm::symmetric},
      {2, 5, 3, 11, 8, AlibiForm::causal},
      {3, 2, 1, 701, 700, AlibiForm::causal},
      {1, 4, 9, 4, 0, AlibiForm::causal},
      {2, 8, 6, 17, 3, AlibiForm::symmetric},
      {1, 3, 2, 5, 20, AlibiForm::causal},
      {1, 2, 3, 0, 0, AlibiForm::causal},
      {1, 2, 2, 3, (1u << 24) + 5, AlibiForm::symmetric},
      {1, 2, 2, 3, (std::size_t{1} << 33) + 1, AlibiForm::causal},
  };
  for (const Case& c : cases) check_case(c);
}

TEST(Alibi, LargeScoresAreTheSameOnOneAndTwoThreads) {
  // 2*12*64 rows of 512 keys: 786432 elements, above the parallel threshold.
  const Case c{2, 12, 64, 512, 448, AlibiForm::causal};
  const std::size_t rows = c.B * c.H * c.Tq;
  const std::vector<float> slopes = alibi_slopes(c.H);
  const Matrix<float> s0 = random_matrix(rows, c.Tk, 21);
  Matrix<float> want = s0;
  reference_forward(want.view(), slopes, c);
  std::vector<std::vector<float>> dslopes;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Matrix<float> s = s0;
    alibi_forward(s.view(), slopes, c.B, c.Tq, {c.form, c.start});
    EXPECT_EQ(bytes_of(s), bytes_of(want)) << threads << " threads";
    std::vector<float> d(c.H, 0.0f);
    alibi_backward(s.view(), d, c.H, c.B, c.Tq, {c.form, c.start});  // s: finite and -inf
    dslopes.push_back(d);
  }
  omp_set_num_threads(1);
  EXPECT_EQ(dslopes[0], dslopes[1]);
}

// L(m) = sum over unmasked entries of w * biased(m), from zero scores, in double; its central
// difference in each slope against alibi_backward's dslopes.
TEST(Alibi, SlopeGradientMatchesFiniteDifferences) {
  for (AlibiForm form : {AlibiForm::causal, AlibiForm::symmetric}) {
    const Case c{2, 3, 4, 9, 3, form};
    const std::size_t rows = c.B * c.H * c.Tq;
    const AlibiOptions o{c.form, c.start};
    const Matrix<float> w = random_matrix(rows, c.Tk, 31);
    const std::vector<float> m = {0.5f, 0.125f, 0.03125f};
    auto loss = [&](const std::vector<float>& slopes) {
      Matrix<float> s(rows, c.Tk);
      alibi_forward(s.view(), slopes, c.B, c.Tq, o);
      double sum = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (std::isfinite(s.data()[i])) sum += double(w.data()[i]) * double(s.data()[i]);
      }
      return sum;
    };
    Matrix<float> g = w;
    std::vector<float> d(c.H, 0.0f);
    alibi_backward(g.view(), d, c.H, c.B, c.Tq, o);
    for (std::size_t h = 0; h < c.H; ++h) {
      // A step of 1/64 of the slope, a power of two times it: m +- eps and every m * |d| (|d| <
      // 16) are exact in float, so the difference is exact up to the double sum.
      const float eps = m[h] / 64;
      std::vector<float> up = m, down = m;
      up[h] += eps;
      down[h] -= eps;
      const double fd = (loss(up) - loss(down)) / (2.0 * eps);
      EXPECT_NEAR(d[h], fd, 1e-5 * (std::fabs(fd) + 1)) << "head " << h;
    }
  }
}

// --- bad input ------------------------------------------------------------------------------

TEST(Alibi, RejectsBadArgumentsAndWritesNothing) {
  Matrix<float> s = random_matrix(2 * 3 * 4, 5, 1);
  const auto before = bytes_of(s);
  const std::vector<float> slopes = alibi_slopes(3);
  std::vector<float> d(3, 1.0f);
  expect_invalid("scores has 24 rows, expected B*H*Tq = 2*3*5",
                 [&] { alibi_forward(s.view(), slopes, 2, 5); });
  expect_invalid("scores has 24 rows, expected B*H*Tq = 2*4*4",
                 [&] { alibi_forward(s.view(), alibi_slopes(4), 2, 4); });
  expect_invalid("scores has 24 rows, expected B*H*Tq = 1*3*4",
                 [&] { alibi_backward(s.view(), d, 3, 1, 4); });
  expect_invalid("no heads", [&] { alibi_forward(s.view(), {}, 2, 4); });
  expect_invalid("empty batch (B = 0, Tq = 4)", [&] { alibi_forward(s.view(), slopes, 0, 4); });
  expect_invalid("empty batch (B = 2, Tq = 0)", [&] { alibi_backward(s.view(), d, 3, 2, 0); });
  const std::vector<float> nan = {0.5f, std::nanf(""), 0.25f};
  expect_invalid("slope 1 is nan", [&] { alibi_forward(s.view(), nan, 2, 4); });
  expect_invalid("start 4611686018427387905 is past 2^62", [&] {
    alibi_forward(s.view(), slopes, 2, 4, {.start = (std::size_t{1} << 62) + 1});
  });
  expect_invalid("form 7", [&] {
    alibi_forward(s.view(), slopes, 2, 4, {.form = static_cast<AlibiForm>(7)});
  });
  std::vector<float> d2(2, 1.0f);
  expect_invalid("dslopes holds 2 values, expected 0 (slopes not trained) or H = 3",
                 [&] { alibi_backward(s.view(), d2, 3, 2, 4); });
  // Rows that overflow B*H*Tq.
  expect_invalid("expected B*H*Tq", [&] {
    alibi_forward(s.view(), slopes, std::size_t{1} << 62, std::size_t{1} << 62);
  });
  EXPECT_EQ(bytes_of(s), before);
  EXPECT_EQ(d, std::vector<float>(3, 1.0f));
  EXPECT_EQ(d2, std::vector<float>(2, 1.0f));
}

}  // namespace
}  // namespace posemb
