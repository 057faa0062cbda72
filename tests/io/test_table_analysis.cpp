// The table-analysis module (posemb/table_analysis.hpp) against plain references in long
// double: row norms and their statistics, unit rows, the cosine-similarity matrix (thinned,
// symmetric, zero rows 0, the same bits on 1 and 2 threads), the distance profile, and the
// reserved-row detection and decision. Tolerances follow from float's and double's epsilon and
// the number of terms in each sum.
#include <gtest/gtest.h>
#include <omp.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "posemb/table_analysis.hpp"

namespace posemb {
namespace {

// (rows, dim) of N(0, 0.02) values, every fifth row scaled by 1000 (norms far apart).
Matrix<float> random_table(std::size_t rows, std::size_t dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  Matrix<float> t(rows, dim);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < dim; ++c) {
      t(r, c) = static_cast<float>(normal(rng) * (r % 5 == 4 ? 1000.0 : 1.0));
    }
  }
  return t;
}

long double ref_norm(MatrixView<const float> t, std::size_t r) {
  long double s = 0;
  for (float v : t.row(r)) s += static_cast<long double>(v) * v;
  return std::sqrt(s);
}

long double ref_cosine(MatrixView<const float> t, std::size_t i, std::size_t j) {
  const long double ni = ref_norm(t, i), nj = ref_norm(t, j);
  if (ni == 0 || nj == 0) return 0;
  long double s = 0;
  for (std::size_t c = 0; c < t.cols(); ++c) s += static_cast<long double>(t(i, c)) * t(j, c);
  return s / (ni * nj);
}

// A cosine computed by the module: the unit rows are rounded to float (2 eps), then dim products
// summed in float over 8 partial sums (at most dim / 8 + 9 additions along any path, each
// adding eps times a sum of |a_k b_k| <= 1).
double cosine_tolerance(std::size_t dim) {
  return (static_cast<double>(dim) / 8.0 + 12.0) * FLT_EPSILON;
}

TEST(TableAnalysis, RowNormsAndTheirStatisticsMatchTheDefinition) {
  for (std::size_t dim : {1u, 7u, 8u, 17u, 768u}) {
    const Matrix<float> t = random_table(13, dim, dim);
    const std::vector<double> n = row_norms(t);
    ASSERT_EQ(n.size(), 13u);
    long double sum = 0, sum2 = 0, lo = INFINITY, hi = 0;
    for (std::size_t r = 0; r < 13; ++r) {
      const long double want = ref_norm(t, r);
      EXPECT_NEAR(n[r], static_cast<double>(want),
                  static_cast<double>(want) * (static_cast<double>(dim) + 2) * DBL_EPSILON)
          << "row " << r << ", dim " << dim;
      sum += want;
      sum2 += want * want;
      lo = std::min(lo, want);
      hi = std::max(hi, want);
    }
    const RowNormStats s = row_norm_stats(t);
    const long double mean = sum / 13, sd = std::sqrt(sum2 / 13 - mean * mean);
    const double tol = static_cast<double>(hi) * (static_cast<double>(dim) + 40) * DBL_EPSILON;
    EXPECT_NEAR(s.min, static_cast<double>(lo), tol);
    EXPECT_NEAR(s.max, static_cast<double>(hi), tol);
    EXPECT_NEAR(s.mean, static_cast<double>(mean), tol);
    // The deviation is a difference of squares: its error scales with hi^2 / sd.
    EXPECT_NEAR(s.stddev, static_cast<double>(sd),
                static_cast<double>(hi * hi / sd) * (static_cast<double>(dim) + 40) * DBL_EPSILON);
    EXPECT_EQ(s.min, *std::min_element(n.begin(), n.end())) << "min is one of the norms";
  }
  const RowNormStats none = row_norm_stats(Matrix<float>(0, 4));
  EXPECT_EQ(none.min, 0.0);
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_TRUE(row_norms(Matrix<float>(0, 4)).empty());
}

TEST(TableAnalysis, UnitRowsHaveUnitLengthAndZeroRowsStayZero) {
  Matrix<float> t = random_table(9, 33, 5);
  for (float& v : t.row(3)) v = 0.0f;
  const Matrix<float> u = unit_rows(t);
  ASSERT_EQ(u.rows(), 9u);
  ASSERT_EQ(u.cols(), 33u);
  for (std::size_t r = 0; r < 9; ++r) {
    const long double n = ref_norm(t, r);
    for (std::size_t c = 0; c < 33; ++c) {
      if (r == 3) {
        EXPECT_EQ(u(r, c), 0.0f);
        continue;
      }
      const long double want = t(r, c) / n;
      EXPECT_NEAR(u(r, c), static_cast<double>(want),
                  2.0 * FLT_EPSILON * std::max(std::fabs(static_cast<double>(want)), 1e-30))
          << r << ", " << c;
    }
  }
}

TEST(TableAnalysis, CosineSimilarityMatchesTheDefinitionIsSymmetricAndThins) {
  for (std::size_t dim : {1u, 5u, 8u, 9u, 64u, 300u}) {
    Matrix<float> t = random_table(11, dim, 100 + dim);
    for (float& v : t.row(6)) v = 0.0f;  // a zero row: similarity 0 with everything
    const Matrix<float> s = cosine_similarity(t);
    ASSERT_EQ(s.rows(), 11u);
    ASSERT_EQ(s.cols(), 11u);
    for (std::size_t i = 0; i < 11; ++i) {
      for (std::size_t j = 0; j < 11; ++j) {
        EXPECT_NEAR(s(i, j), static_cast<double>(ref_cosine(t, i, j)), cosine_tolerance(dim))
            << i << ", " << j << ", dim " << dim;
        EXPECT_EQ(std::memcmp(&s(i, j), &s(j, i), sizeof(float)), 0) << "symmetric";
        EXPECT_LE(std::fabs(s(i, j)), 1.0f);
      }
      EXPECT_EQ(s(i, 6), 0.0f);
    }
    // Every step-th row: the same cells, bit for bit; ceil(rows / step) of them.
    for (std::size_t step : {2u, 3u, 10u, 11u, 12u}) {
      const Matrix<float> thin = cosine_similarity(t, step);
      const std::size_t n = (11 + step - 1) / step;
      ASSERT_EQ(thin.rows(), n) << step;
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          EXPECT_EQ(std::memcmp(&thin(i, j), &s(i * step, j * step), sizeof(float)), 0)
              << "step " << step << ": " << i << ", " << j;
        }
      }
    }
  }
  EXPECT_THROW(cosine_similarity(Matrix<float>(2, 2), 0), std::invalid_argument);
  EXPECT_EQ(cosine_similarity(Matrix<float>(0, 3)).rows(), 0u);
  // Opposite rows: exactly -1 (clamped), a row with itself 1 within rounding.
  Matrix<float> opposite(2, 3);
  opposite(0, 0) = 1;
  opposite(1, 0) = -2;
  EXPECT_EQ(cosine_similarity(opposite)(0, 1), -1.0f);
}

TEST(TableAnalysis, CosineSimilarityIsTheSameBitsOnAnyThreadCount) {
  // 300 x 300 cells of 64 columns: enough work for parallel_for to use helpers.
  const Matrix<float> t = random_table(300, 64, 9);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Matrix<float> one = cosine_similarity(t);
  omp_set_num_threads(2);
  const Matrix<float> two = cosine_similarity(t);
  const Matrix<float> two_thin = cosine_similarity(t, 7);
  omp_set_num_threads(1);
  const Matrix<float> one_thin = cosine_similarity(t, 7);
  omp_set_num_threads(before);
  EXPECT_EQ(std::memcmp(one.flat().data(), two.flat().data(), one.size() * sizeof(float)), 0);
  EXPECT_EQ(
      std::memcmp(one_thin.flat().data(), two_thin.flat().data(), one_thin.size() * sizeof(float)),
      0);
}

TEST(TableAnalysis, DistanceProfileIsTheMeanCosineAtPowersOfTwo) {
  for (std::size_t rows : {0u, 1u, 2u, 3u, 17u, 64u, 65u}) {
    const Matrix<float> t = random_table(rows, 24, rows);
    const auto p = distance_profile(t);
    std::size_t k = 0;
    for (std::size_t d = 1; d < rows; d *= 2, ++k) {
      ASSERT_LT(k, p.size()) << rows;
      EXPECT_EQ(p[k].offset, d);
      long double sum = 0;
      for (std::size_t i = 0; i + d < rows; ++i) sum += ref_cosine(t, i, i + d);
      EXPECT_NEAR(p[k].mean_cosine, static_cast<double>(sum / (rows - d)),
                  cosine_tolerance(24) + 4.0 * FLT_EPSILON)
          << "rows " << rows << ", d " << d;
    }
    EXPECT_EQ(p.size(), k) << rows;
  }
  // Rows that repeat with period 4: offsets 4, 8, ... are exactly alike.
  Matrix<float> periodic(32, 6);
  for (std::size_t r = 0; r < 32; ++r) {
    for (std::size_t c = 0; c < 6; ++c) periodic(r, c) = static_cast<float>((r % 4) * 7 + c) - 9;
  }
  for (const auto& [d, c] : distance_profile(periodic)) {
    if (d % 4 == 0) {
      EXPECT_NEAR(c, 1.0, cosine_tolerance(6)) << d;
    }
  }
}

TEST(TableAnalysis, LikelyReservedRowsFromLeadingZeroRows) {
  Matrix<float> t(10, 3);
  for (std::size_t r = 0; r < 10; ++r) {
    for (std::size_t c = 0; c < 3; ++c) t(r, c) = 0.1f * static_cast<float>(r + c + 1);
  }
  EXPECT_EQ(likely_reserved_rows(t), 0u);
  // RoBERTa: row 1 (the padding row) all zeros, row 0 not.
  for (std::size_t c = 0; c < 3; ++c) t(1, c) = c == 1 ? -0.0f : 0.0f;
  EXPECT_EQ(likely_reserved_rows(t), 2u);
  // A zero row past the first kReservedRowScan rows is not a reserved row.
  Matrix<float> u(20, 3);
  for (float& v : u.flat()) v = 1.0f;
  for (std::size_t c = 0; c < 3; ++c) u(kReservedRowScan, c) = 0.0f;
  EXPECT_EQ(likely_reserved_rows(u), 0u);
  for (std::size_t c = 0; c < 3; ++c) u(kReservedRowScan - 1, c) = 0.0f;
  EXPECT_EQ(likely_reserved_rows(u), kReservedRowScan);
  // All zeros (a zeros-initialized table) says nothing; nor does a single row.
  EXPECT_EQ(likely_reserved_rows(Matrix<float>(6, 3)), 0u);
  EXPECT_EQ(likely_reserved_rows(Matrix<float>(1, 3)), 0u);
}

TEST(TableAnalysis, UnstatedReservedRowsOnlyWhenNobodySaid) {
  PositionTable t;
  t.values = Matrix<float>(12, 3);
  for (float& v : t.values.flat()) v = 0.5f;
  for (float& v : t.values.row(1)) v = 0.0f;  // RoBERTa's padding row
  EXPECT_EQ(unstated_reserved_rows(t), 2u);
  EXPECT_FALSE(unstated_reserved_rows(t, true)) << "the caller gave them";
  t.reserved_rows_recorded = true;  // the file's posemb.reserved_rows gave them
  EXPECT_FALSE(unstated_reserved_rows(t));
  t.reserved_rows_recorded = false;
  t.reserved_rows = 2;  // already as many as they look
  EXPECT_FALSE(unstated_reserved_rows(t));
  t.reserved_rows = 1;
  EXPECT_EQ(unstated_reserved_rows(t), 2u);
  for (float& v : t.values.row(1)) v = 0.25f;  // nothing looks reserved
  t.reserved_rows = 0;
  EXPECT_FALSE(unstated_reserved_rows(t));
}

// Tables with rows and no columns: answered without a pass over the rows (these looped over
// 2^40 or 2^64 rows; row_norm_stats refused them with MemoryLimitExceeded), and row_norms' one
// double per row is checked against the memory budget (MemoryLimitExceeded, not bad_alloc).
TEST(TableAnalysis, RowsWithoutColumnsAreAnsweredAtOnce) {
  for (const std::size_t rows : {std::size_t{1} << 40, SIZE_MAX}) {
    const MatrixView<const float> t(nullptr, rows, 0);
    EXPECT_EQ(likely_reserved_rows(t), 0u);
    const Matrix<float> u = unit_rows(t);
    EXPECT_EQ(u.rows(), rows);
    EXPECT_EQ(u.cols(), 0u);
    const std::vector<OffsetSimilarity> p = distance_profile(t);
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.front().offset, 1u);
    for (const auto& [d, c] : p) {
      EXPECT_LT(d, rows);
      EXPECT_EQ(c, 0.0);
    }
    EXPECT_EQ(p.size(), rows == SIZE_MAX ? 64u : 40u);  // 1, 2, 4, ... below the rows
    EXPECT_THROW((void)row_norms(t), MemoryLimitExceeded);
    const RowNormStats s = row_norm_stats(t);  // every norm is 0, found without row_norms
    EXPECT_EQ(s.min, 0.0);
    EXPECT_EQ(s.mean, 0.0);
    EXPECT_EQ(s.max, 0.0);
    EXPECT_EQ(s.stddev, 0.0);
  }
  // A few rows without columns: the same answers as before, norms 0.
  const MatrixView<const float> small(nullptr, 5, 0);
  EXPECT_EQ(row_norms(small), std::vector<double>(5, 0.0));
  EXPECT_EQ(row_norm_stats(small).max, 0.0);
  const auto p = distance_profile(small);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].offset, 4u);
}

}  // namespace
}  // namespace posemb
