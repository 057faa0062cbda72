// T5's relative position bias (posemb/relative_bias.hpp): the forward bit for bit against a
// plain gather through t5_relative_bucket, element by element (strided and misaligned views,
// offsets, awkward sizes, several bucketings, 1 to 3 threads); the backward bit for bit against a
// plain loop summing in the documented order, within a derived bound of the exact sum, and
// against central finite differences; every bad argument refused with the numbers and nothing
// written.
#include <gtest/gtest.h>
#include <omp.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"
#include "posemb/relative_bias.hpp"
#include "posemb/simd.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;
using testing::expect_invalid;
using testing::random_matrix;

struct Case {
  std::size_t H, Tq, Tk, query_start, key_start;
  RelativeBuckets buckets;
};

std::string describe(const Case& c) {
  return "H=" + std::to_string(c.H) + " Tq=" + std::to_string(c.Tq) +
         " Tk=" + std::to_string(c.Tk) + " query_start=" + std::to_string(c.query_start) +
         " key_start=" + std::to_string(c.key_start) + " buckets (" +
         std::to_string(c.buckets.num_buckets) + ", " + std::to_string(c.buckets.max_distance) +
         (c.buckets.bidirectional ? ", bidirectional)" : ", causal)");
}

std::int64_t relative(const Case& c, std::size_t i, std::size_t j) {
  return static_cast<std::int64_t>(c.key_start + j) - static_cast<std::int64_t>(c.query_start + i);
}

// The plain gather: one bucket per element.
void reference_forward(MatrixView<float> bias, MatrixView<const float> table, const Case& c) {
  for (std::size_t h = 0; h < c.H; ++h) {
    for (std::size_t i = 0; i < c.Tq; ++i) {
      for (std::size_t j = 0; j < c.Tk; ++j) {
        bias(h * c.Tq + i, j) = table(t5_relative_bucket(relative(c, i, j), c.buckets), h);
      }
    }
  }
}

// The documented order, written plainly: per head, per block of 64 query rows, each diagonal's
// sum over the block's rows in double, each bucket's block sum over its diagonals (ascending),
// the blocks' sums per bucket in block order; rounded once and added.
void reference_backward(MatrixView<float> dtable, MatrixView<const float> dbias, const Case& c) {
  for (std::size_t h = 0; h < c.H; ++h) {
    std::map<std::size_t, double> total;
    for (std::size_t i0 = 0; i0 < c.Tq; i0 += 64) {
      const std::size_t i1 = std::min(c.Tq, i0 + 64);
      std::map<std::size_t, double> block;
      // Diagonal k holds (i, j) with j - i = k - (Tq - 1); ascending k is ascending position.
      for (std::size_t k = c.Tq - i1; k < c.Tq - i0 + c.Tk - 1; ++k) {
        double diagonal = 0.0;
        std::int64_t d = 0;
        for (std::size_t i = i0; i < i1; ++i) {
          const std::int64_t j =
              static_cast<std::int64_t>(k + i) - static_cast<std::int64_t>(c.Tq - 1);
          if (j < 0 || j >= static_cast<std::int64_t>(c.Tk)) continue;
          diagonal += static_cast<double>(dbias(h * c.Tq + i, static_cast<std::size_t>(j)));
          d = relative(c, i, static_cast<std::size_t>(j));
        }
        block[t5_relative_bucket(d, c.buckets)] += diagonal;
      }
      for (const auto& [b, sum] : block) total[b] += sum;
    }
    for (const auto& [b, sum] : total) dtable(b, h) += static_cast<float>(sum);
  }
}

// Gradients whose sums depend on the order of the additions even in double: 2^60 on the first
// query row of each block of 64, -2^60 on its last, +-2^k (k < 7, under half a double ulp of
// 2^60) between. Summed in the documented order a full diagonal's small terms vanish into 2^60;
// summed in blocks of another size, by rows, or small terms first, some survive. Bit for bit
// against the reference on these, a kernel that sums in another order fails.
Matrix<float> order_revealing(std::size_t rows, std::size_t cols, std::size_t Tq,
                              std::uint64_t seed) {
  Matrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t i = r % Tq;
    for (float& v : m.row(r)) {
      v = i % 64 == 0    ? 0x1p60f
          : i % 64 == 63 ? -0x1p60f
                         : std::ldexp(rng() % 2 ? 1.0f : -1.0f, static_cast<int>(rng() % 7));
    }
  }
  return m;
}

// bias and dbias as views with a spare column on each side, one float off alignment; the table
// and dtable with a spare column too.
void check_case(const Case& c) {
  SCOPED_TRACE(describe(c));
  const std::size_t rows = c.H * c.Tq, nb = c.buckets.num_buckets;
  Matrix<float> table_buf = random_matrix(nb, c.H + 1, 11, 2.0f);
  const MatrixView<const float> table(table_buf.data(), nb, c.H, c.H + 1);
  Matrix<float> buf = random_matrix(rows, c.Tk + 2, 7, 3.0f);
  const Matrix<float> before = buf;
  MatrixView<float> bias(buf.data() + 1, rows, c.Tk, c.Tk + 2);
  Matrix<float> want(rows, c.Tk);
  reference_forward(want.view(), table, c);
  relative_bias_forward(bias, table, c.buckets, c.Tq, {c.query_start, c.key_start});
  EXPECT_EQ(bytes_of(bias), bytes_of(want));
  for (std::size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(buf(r, 0), before(r, 0));
    EXPECT_EQ(buf(r, c.Tk + 1), before(r, c.Tk + 1));
  }

  // Backward: added into a dtable that starts non-zero.
  Matrix<float> gbuf = random_matrix(rows, c.Tk + 2, 9);
  const MatrixView<const float> dbias(gbuf.data() + 1, rows, c.Tk, c.Tk + 2);
  Matrix<float> dbuf = random_matrix(nb, c.H + 1, 13);
  const Matrix<float> dbefore = dbuf;
  MatrixView<float> dtable(dbuf.data(), nb, c.H, c.H + 1);
  Matrix<float> dwant(dtable);
  reference_backward(dwant.view(), dbias, c);
  relative_bias_backward(dtable, dbias, c.buckets, c.Tq, {c.query_start, c.key_start});
  EXPECT_EQ(bytes_of(dtable), bytes_of(dwant));
  for (std::size_t b = 0; b < nb; ++b) EXPECT_EQ(dbuf(b, c.H), dbefore(b, c.H));

  const Matrix<float> wild = order_revealing(rows, c.Tk, c.Tq, 15);
  Matrix<float> dwild(nb, c.H), dwild_want(nb, c.H);
  reference_backward(dwild_want.view(), wild, c);
  relative_bias_backward(dwild, wild, c.buckets, c.Tq, {c.query_start, c.key_start});
  EXPECT_EQ(bytes_of(dwild), bytes_of(dwild_want));
}

const RelativeBuckets kT5{};                                         // (32, 128) bidirectional
const RelativeBuckets kT5Causal{.bidirectional = false};             // (32, 128) causal
const RelativeBuckets kSmall{.num_buckets = 8, .max_distance = 16};  // bidirectional
const RelativeBuckets kOdd{.num_buckets = 3, .max_distance = 10, .bidirectional = false};
const RelativeBuckets kOddHalves{.num_buckets = 33, .max_distance = 100};

TEST(RelativeBias, EqualsThePlainLoopsBitForBit) {
  const Case cases[] = {
      {1, 1, 1, 0, 0, kT5},
      {2, 5, 5, 0, 0, kT5Causal},
      {12, 7, 7, 0, 0, kT5},
      {3, 64, 64, 0, 0, kT5Causal},
      {3, 65, 130, 0, 0, kT5},         // two blocks of queries, keys past max_distance
      {4, 130, 63, 0, 0, kSmall},      // three blocks, more queries than keys
      {2, 1, 701, 700, 0, kT5Causal},  // cached decoding: one query against its past
      {2, 3, 11, 8, 0, kOdd},
      {5, 9, 4, 0, 20, kOddHalves},  // keys after the queries
      {2, 70, 200, 1000, 3, kT5},    // every key far before the queries
      {3, 2, 5, std::size_t{1} << 40, (std::size_t{1} << 40) + 3, kT5},
      {2, 200, 1, 0, 100, kOddHalves},
      {1, 129, 129, 0, 0, {.num_buckets = 1000, .max_distance = 4096, .bidirectional = false}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST(RelativeBias, EmptyShapesWriteNothing) {
  Matrix<float> table = random_matrix(32, 4, 1);
  Matrix<float> dtable = random_matrix(32, 4, 2);
  const auto before = bytes_of(dtable);
  Matrix<float> none(0, 7), no_keys(4 * 3, 0);
  relative_bias_forward(none, table, kT5, 0);
  relative_bias_forward(no_keys, table, kT5, 3);
  relative_bias_backward(dtable, none, kT5, 0);
  relative_bias_backward(dtable, no_keys, kT5, 3);
  // No heads: a (32, 0) table, no rows whatever Tq.
  Matrix<float> headless(32, 0), zero_rows(0, 5);
  relative_bias_forward(zero_rows, headless, kT5, 9);
  relative_bias_backward(headless, zero_rows, kT5, 9);
  EXPECT_EQ(bytes_of(dtable), before);
}

// Large enough for several threads (parallel from 1 MiB moved here): the same bits on 1, 2 and 3
// threads, and the reference's.
TEST(RelativeBias, TheSameBitsOnAnyThreadCount) {
  const detail::ScopedMinStreamBytes parallel_from(std::size_t{1} << 20);
  const Case c{6, 300, 260, 40, 0, kT5Causal};
  const Matrix<float> table = random_matrix(32, c.H, 3);
  const Matrix<float> dbias = order_revealing(c.H * c.Tq, c.Tk, c.Tq, 4);
  Matrix<float> want(c.H * c.Tq, c.Tk), dwant(32, c.H);
  reference_forward(want.view(), table, c);
  reference_backward(dwant.view(), dbias, c);
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    Matrix<float> bias(c.H * c.Tq, c.Tk), dtable(32, c.H);
    relative_bias_forward(bias, table, c.buckets, c.Tq, {c.query_start, c.key_start});
    relative_bias_backward(dtable, dbias, c.buckets, c.Tq, {c.query_start, c.key_start});
    EXPECT_EQ(bytes_of(bias), bytes_of(want)) << threads << " threads";
    EXPECT_EQ(bytes_of(dtable), bytes_of(dwant)) << threads << " threads";
  }
  omp_set_num_threads(2);
}

// The row kernels on every SIMD target this CPU runs: the same bits as the reference, the
// forward of a bias of 8 MiB with streaming stores (rows one float off alignment) and of a small
// one without, the backward's widened sums.
TEST(RelativeBias, EveryTargetGivesTheReferenceBits) {
  const Case large{8, 512, 512, 0, 0, kT5Causal};  // 8 MiB: streaming stores
  const Matrix<float> table = random_matrix(32, large.H, 5);
  Matrix<float> want(large.H * large.Tq, large.Tk);
  reference_forward(want.view(), table, large);
  const Matrix<float> dbias = order_revealing(large.H * large.Tq, large.Tk, large.Tq, 6);
  Matrix<float> dwant(32, large.H);
  reference_backward(dwant.view(), dbias, large);
  Matrix<float> buf(large.H * large.Tq, large.Tk + 1);
  const MatrixView<float> bias(buf.data() + 1, large.H * large.Tq, large.Tk, large.Tk + 1);
  for (const std::string& target : simd_targets()) {
    detail::set_simd_target(target);
    SCOPED_TRACE(target);
    relative_bias_forward(bias, table, large.buckets, large.Tq);
    EXPECT_EQ(bytes_of(bias), bytes_of(want));
    Matrix<float> dtable(32, large.H);
    relative_bias_backward(dtable, dbias, large.buckets, large.Tq);
    EXPECT_EQ(bytes_of(dtable), bytes_of(dwant));
    check_case({3, 65, 130, 5, 0, kT5});
  }
  detail::set_simd_target("");
}

// A table holding its own bucket numbers turns the forward into the bucket of every (i, j):
// the run-by-run buckets of the kernel against t5_relative_bucket one by one, over random
// bucketings, lengths and offsets.
RC_GTEST_PROP(RelativeBiasProperty, ForwardBucketsAreTheBucketFunctions, ()) {
  const bool bidirectional = *rc::gen::arbitrary<bool>();
  const auto nb = *rc::gen::inRange<std::size_t>(bidirectional ? 4 : 2, 300);
  const std::size_t max_exact = (bidirectional ? nb / 2 : nb) / 2;
  const auto md = *rc::gen::inRange<std::size_t>(max_exact + 1, max_exact + 3000);
  const Case c{1,
               *rc::gen::inRange<std::size_t>(1, 90),
               *rc::gen::inRange<std::size_t>(1, 400),
               *rc::gen::inRange<std::size_t>(0, 5000),
               *rc::gen::inRange<std::size_t>(0, 5000),
               {nb, md, bidirectional}};
  Matrix<float> table(nb, 1);
  for (std::size_t b = 0; b < nb; ++b) table(b, 0) = static_cast<float>(b);
  Matrix<float> bias(c.Tq, c.Tk);
  relative_bias_forward(bias, table, c.buckets, c.Tq, {c.query_start, c.key_start});
  for (std::size_t i = 0; i < c.Tq; ++i) {
    for (std::size_t j = 0; j < c.Tk; ++j) {
      RC_ASSERT(bias(i, j) == static_cast<float>(t5_relative_bucket(relative(c, i, j), c.buckets)));
    }
  }
}

// The backward within a derived bound of the exact sum (long double): double sums of float terms
// (relative error below count * 2^-53 of the terms' magnitude), then one rounding to float and
// one float add.
TEST(RelativeBias, BackwardIsTheExactSumRoundedOnce) {
  const Case c{3, 150, 170, 0, 0, kT5};
  const Matrix<float> dbias = random_matrix(c.H * c.Tq, c.Tk, 17);
  Matrix<float> dtable(32, c.H);
  relative_bias_backward(dtable, dbias, c.buckets, c.Tq);
  std::vector<long double> exact(32 * c.H, 0.0L), magnitude(32 * c.H, 0.0L);
  for (std::size_t h = 0; h < c.H; ++h) {
    for (std::size_t i = 0; i < c.Tq; ++i) {
      for (std::size_t j = 0; j < c.Tk; ++j) {
        const std::size_t b = t5_relative_bucket(relative(c, i, j), c.buckets);
        exact[b * c.H + h] += dbias(h * c.Tq + i, j);
        magnitude[b * c.H + h] += std::fabs(dbias(h * c.Tq + i, j));
      }
    }
  }
  const long double terms = static_cast<long double>(c.Tq * c.Tk);
  for (std::size_t k = 0; k < exact.size(); ++k) {
    const long double tol = 0x1p-24L * std::fabs(exact[k]) + terms * 0x1p-53L * magnitude[k];
    EXPECT_LE(std::fabs(dtable.data()[k] - exact[k]), tol) << "bucket " << k / c.H;
  }
}

// L(table) = sum of w * bias in double; its central difference in every table entry against the
// backward of dbias = w. The bias is linear in the table: with steps of a power of two (exact in
// float) only the double sums' rounding separates them.
TEST(RelativeBias, GradientMatchesFiniteDifferences) {
  for (const RelativeBuckets& buckets : {kT5, kT5Causal, kOdd}) {
    const Case c{2, 9, 13, 3, 0, buckets};
    const std::size_t nb = buckets.num_buckets;
    const Matrix<float> w = random_matrix(c.H * c.Tq, c.Tk, 31);
    Matrix<float> table = random_matrix(nb, c.H, 32);
    auto loss = [&] {
      Matrix<float> bias(c.H * c.Tq, c.Tk);
      relative_bias_forward(bias, table, c.buckets, c.Tq, {c.query_start, c.key_start});
      double sum = 0;
      for (std::size_t k = 0; k < bias.size(); ++k) {
        sum += static_cast<double>(w.data()[k]) * static_cast<double>(bias.data()[k]);
      }
      return sum;
    };
    Matrix<float> dtable(nb, c.H);
    relative_bias_backward(dtable, w, c.buckets, c.Tq, {c.query_start, c.key_start});
    for (std::size_t b = 0; b < nb; ++b) {
      for (std::size_t h = 0; h < c.H; ++h) {
        const float v = table(b, h), eps = 0x1p-6f;
        table(b, h) = v + eps;
        const double up = loss();
        table(b, h) = v - eps;
        const double down = loss();
        table(b, h) = v;
        const double fd = (up - down) / (2.0 * eps);
        EXPECT_NEAR(dtable(b, h), fd, 1e-9 * w.size() + 1e-6 * std::fabs(fd))
            << "bucket " << b << ", head " << h;
      }
    }
  }
}

// --- bad input ------------------------------------------------------------------------------

TEST(RelativeBias, RejectsBadArgumentsAndWritesNothing) {
  const Matrix<float> table = random_matrix(32, 3, 1);
  Matrix<float> bias = random_matrix(3 * 4, 5, 2);
  Matrix<float> dtable = random_matrix(32, 3, 3);
  const auto bias_before = bytes_of(bias), dtable_before = bytes_of(dtable);
  expect_invalid("relative_bias_forward: bias has 12 rows, expected H*Tq = 3*5",
                 [&] { relative_bias_forward(bias, table, kT5, 5); });
  expect_invalid("relative_bias_backward: dbias has 12 rows, expected H*Tq = 3*3",
                 [&] { relative_bias_backward(dtable, bias, kT5, 3); });
  expect_invalid("table has 32 rows, expected num_buckets = 16",
                 [&] { relative_bias_forward(bias, table, {.num_buckets = 16}, 4); });
  expect_invalid("dtable has 32 rows, expected num_buckets = 64",
                 [&] { relative_bias_backward(dtable, bias, {.num_buckets = 64}, 4); });
  expect_invalid("relative_bias_forward: max_distance = 4 must be above max_exact = 8",
                 [&] { relative_bias_forward(bias, table, {.max_distance = 4}, 4); });
  expect_invalid("relative_bias_backward: num_buckets = 3 leaves no bucket", [&] {
    relative_bias_backward(dtable, bias, {.num_buckets = 3, .max_distance = 9}, 4);
  });
  expect_invalid("query_start = 4611686018427387905 is past 2^62", [&] {
    relative_bias_forward(bias, table, kT5, 4, {.query_start = (std::size_t{1} << 62) + 1});
  });
  expect_invalid("key_start = 18446744073709551615 is past 2^62",
                 [&] { relative_bias_backward(dtable, bias, kT5, 4, {.key_start = SIZE_MAX}); });
  expect_invalid("expected H*Tq = 3*6148914691236517206",
                 [&] { relative_bias_forward(bias, table, kT5, SIZE_MAX / 3 + 1); });
  EXPECT_EQ(bytes_of(bias), bias_before);
  EXPECT_EQ(bytes_of(dtable), dtable_before);

  // Outputs that share memory with the input they read.
  Matrix<float> shared = random_matrix(32 + 3 * 4, 3, 4);
  const auto shared_before = bytes_of(shared);
  const MatrixView<float> all = shared.view();
  expect_invalid("bias (12 x 3) overlaps table (32 x 3) in memory",
                 [&] { relative_bias_forward(all.subrows(20, 12), all.subrows(0, 32), kT5, 4); });
  expect_invalid("dtable (32 x 3) overlaps dbias (12 x 3) in memory",
                 [&] { relative_bias_backward(all.subrows(0, 32), all.subrows(30, 12), kT5, 4); });
  EXPECT_EQ(bytes_of(shared), shared_before);
}

TEST(RelativeBias, RefusesScratchOverTheMemoryBudgetBeforeWriting) {
  // Two queries against 2^40 keys, a bias over a one-float buffer: the forward's values of
  // 2^40 + 1 diagonals (and the backward's sums of one query's 2^40) are refused before any
  // element of the bias is touched (touching one would crash).
  const Matrix<float> table = random_matrix(32, 1, 1);
  float one = 1.5f;
  const std::size_t keys = std::size_t{1} << 40;
  const MatrixView<float> huge(&one, 2, keys, keys);
  EXPECT_THROW(relative_bias_forward(huge, table, kT5, 2), MemoryLimitExceeded);
  Matrix<float> dtable(32, 1);
  EXPECT_THROW(relative_bias_backward(dtable, huge.subrows(0, 1), kT5, 1), MemoryLimitExceeded);
  EXPECT_EQ(one, 1.5f);
  EXPECT_EQ(dtable(0, 0), 0.0f);
}

}  // namespace
}  // namespace posemb
