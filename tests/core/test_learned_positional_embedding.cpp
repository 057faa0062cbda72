// learned_positional_embedding: every clause of the contract, typed over float and double, and
// property-based over random shapes, strides, offsets and lengths (rapidcheck).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/posemb.hpp"
#include "test_support.hpp"

namespace posemb {
namespace {

using testing::bytes_of;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// A table whose every element has a distinct bit pattern, so any misplaced row shows.
template <class T>
Matrix<T> numbered_table(std::size_t rows, std::size_t cols) {
  Matrix<T> t(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      t(r, c) = static_cast<T>(r) + static_cast<T>(c) / static_cast<T>(1000) + static_cast<T>(0.5);
    }
  }
  return t;
}

template <class M>
concept CanLookUp = requires(M&& m) {
  learned_positional_embedding(std::size_t{1}, std::forward<M>(m));
};

template <class T>
class Lookup : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Lookup, Scalars);

TYPED_TEST(Lookup, ReturnsFirstSeqLenRowsAsAZeroCopyView) {
  using T = TypeParam;
  const Matrix<T> table = numbered_table<T>(16, 5);
  MatrixView<const T> pe = learned_positional_embedding(7, table);
  EXPECT_EQ(pe.rows(), 7u);
  EXPECT_EQ(pe.cols(), 5u);
  EXPECT_EQ(pe.data(), table.data());
  EXPECT_EQ(pe.row_stride(), table.row_stride());
  for (std::size_t r = 0; r < 7; ++r) {
    EXPECT_EQ(std::memcmp(pe.row(r).data(), table.row(r).data(), 5 * sizeof(T)), 0);
  }
}

TYPED_TEST(Lookup, AcceptsMatrixMutableViewAndConstView) {
  using T = TypeParam;
  Matrix<T> table = numbered_table<T>(10, 3);
  MatrixView<T> mv = table.view();
  MatrixView<const T> cv = table;
  auto a = learned_positional_embedding(4, table);
  auto b = learned_positional_embedding(4, mv);
  auto c = learned_positional_embedding(4, cv);
  static_assert(std::is_same_v<decltype(a), MatrixView<const T>>);
  static_assert(std::is_same_v<decltype(b), MatrixView<const T>>);
  static_assert(std::is_same_v<decltype(c), MatrixView<const T>>);
  EXPECT_EQ(a.data(), table.data());
  EXPECT_EQ(b.data(), table.data());
  EXPECT_EQ(c.data(), table.data());
  // A temporary table would leave the view dangling: that overload is deleted.
  static_assert(CanLookUp<const Matrix<T>&>);
  static_assert(CanLookUp<Matrix<T>&>);
  static_assert(CanLookUp<MatrixView<T>>);
  static_assert(!CanLookUp<Matrix<T>&&>);
  // A const temporary (`const Matrix<T> make_table();`) dangles the same way.
  static_assert(!CanLookUp<const Matrix<T>&&> && !CanLookUp<const Matrix<T>>);
}

TYPED_TEST(Lookup, StartSelectsRowsForCachedDecoding) {
  using T = TypeParam;
  const Matrix<T> table = numbered_table<T>(12, 4);
  auto pe = learned_positional_embedding(3, table, 5);
  EXPECT_EQ(pe.rows(), 3u);
  EXPECT_EQ(pe.data(), table.data() + 5 * 4);
  EXPECT_EQ(pe(0, 0), table(5, 0));
  EXPECT_EQ(pe(2, 3), table(7, 3));
  auto last = learned_positional_embedding(1, table, 11);
  EXPECT_EQ(last.data(), table.data() + 11 * 4);
  auto none = learned_positional_embedding(0, table, 12);  // empty, at the end: valid
  EXPECT_EQ(none.rows(), 0u);
  EXPECT_EQ(none.cols(), 4u);
}

TYPED_TEST(Lookup, SeqLenZeroIsValidEvenForAnEmptyTable) {
  using T = TypeParam;
  const Matrix<T> table(0, 8);
  auto pe = learned_positional_embedding(0, table);
  EXPECT_EQ(pe.rows(), 0u);
  EXPECT_EQ(pe.cols(), 8u);
  EXPECT_THROW((void)learned_positional_embedding(1, table), SequenceTooLong);
}

TYPED_TEST(Lookup, KeepsTheStrideOfAStridedTable) {
  using T = TypeParam;
  std::vector<T> buf(6 * 9);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<T>(i);
  MatrixView<const T> table(buf.data(), 6, 7, 9);
  auto pe = learned_positional_embedding(2, table, 3);
  EXPECT_EQ(pe.row_stride(), 9u);
  EXPECT_EQ(pe.data(), buf.data() + 27);
  EXPECT_EQ(pe(1, 6), static_cast<T>(4 * 9 + 6));
}

TYPED_TEST(Lookup, TooLongThrowsSequenceTooLongWithTheNumbers) {
  using T = TypeParam;
  const Matrix<T> table(1024, 4);
  try {
    (void)learned_positional_embedding(1030, table);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_EQ(e.seq_len(), 1030u);
    EXPECT_EQ(e.start(), 0u);
    EXPECT_EQ(e.max_seq_len(), 1024u);
    EXPECT_EQ(e.required_rows(), 1030u);
    const std::string m = e.what();
    EXPECT_NE(m.find("learned_positional_embedding"), std::string::npos) << m;
    EXPECT_NE(m.find("1030"), std::string::npos) << m;
    EXPECT_NE(m.find("1024"), std::string::npos) << m;
    EXPECT_NE(m.find("extend"), std::string::npos) << m;
    EXPECT_NE(m.find("sinusoidal"), std::string::npos) << m;
    EXPECT_NE(m.find("longer table"), std::string::npos) << m;
  }
  // Publicly derived from std::out_of_range: catchable as that and as std::exception.
  static_assert(std::is_base_of_v<std::out_of_range, SequenceTooLong>);
  EXPECT_THROW((void)learned_positional_embedding(1025, table), std::out_of_range);
  EXPECT_THROW((void)learned_positional_embedding(1, table, 1024), std::out_of_range);
  EXPECT_NO_THROW((void)learned_positional_embedding(1024, table));
  EXPECT_NO_THROW((void)learned_positional_embedding(0, table, 1024));
}

TYPED_TEST(Lookup, OffsetOverflowIsDetectedForEveryExtremeValue) {
  using T = TypeParam;
  const Matrix<T> table(8, 2);
  const std::size_t cases[][2] = {{kMax, 0},     {0, kMax}, {kMax, kMax},
                                  {1, kMax},     {kMax, 1}, {kMax - 7, 8},
                                  {8, kMax - 7}, {9, 0},    {kMax / 2 + 1, kMax / 2 + 1}};
  for (const auto& c : cases) {
    const std::size_t seq_len = c[0];
    const std::size_t start = c[1];
    try {
      (void)learned_positional_embedding(seq_len, table, start);
      ADD_FAILURE() << "no exception for seq_len " << seq_len << " start " << start;
    } catch (const SequenceTooLong& e) {
      EXPECT_EQ(e.seq_len(), seq_len);
      EXPECT_EQ(e.start(), start);
      EXPECT_EQ(e.max_seq_len(), 8u);
      const std::string m = e.what();
      EXPECT_NE(m.find(std::to_string(seq_len)), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(start)), std::string::npos) << m;
    }
  }
  // start + seq_len = 2^64 exactly: the message gives the true sum, not a wrapped one.
  try {
    (void)learned_positional_embedding(kMax, table, 1);
  } catch (const SequenceTooLong& e) {
    EXPECT_TRUE(e.required_rows_overflowed());
    EXPECT_NE(std::string(e.what()).find("18446744073709551616"), std::string::npos) << e.what();
  }
}

TYPED_TEST(Lookup, AliasingRuleViewSeesLaterWritesCopyDoesNot) {
  using T = TypeParam;
  Matrix<T> table = numbered_table<T>(4, 3);
  auto pe = learned_positional_embedding(2, table);
  Matrix<T> snapshot(pe);
  table(1, 2) = static_cast<T>(-42);  // an "optimizer step" after the lookup
  EXPECT_EQ(pe(1, 2), static_cast<T>(-42));
  EXPECT_NE(snapshot(1, 2), static_cast<T>(-42));
}

// The lookup never reads or writes the table's memory: it works on a table whose pages cannot
// be accessed at all (any touch would be a segmentation fault).
TYPED_TEST(Lookup, NeverTouchesTheTableMemory) {
  using T = TypeParam;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  const std::size_t cols = 16;
  const std::size_t rows = 4 * page / (cols * sizeof(T));
  MatrixView<const T> table(static_cast<const T*>(mem), rows, cols);
  auto pe = learned_positional_embedding(rows - 3, table, 2);
  EXPECT_EQ(pe.data(), static_cast<const T*>(mem) + 2 * cols);
  EXPECT_EQ(pe.rows(), rows - 3);
  EXPECT_THROW((void)learned_positional_embedding(rows, table, 1), SequenceTooLong);
  munmap(mem, 4 * page);
}

// Lengths that matter most: 0, 1, the table size, one past it, and the extremes.
std::size_t interesting_size(std::size_t rows) {
  const std::size_t choices[] = {0, 1, 2, rows, rows + 1, rows / 2, kMax, kMax - 1, kMax / 2};
  const auto i = *rc::gen::inRange<std::size_t>(0, std::size(choices) + 1);
  if (i == std::size(choices)) return *rc::gen::inRange<std::size_t>(0, rows + 4);
  return choices[i];
}

template <class T>
void check_lookup_property() {
  const auto rows = *rc::gen::inRange<std::size_t>(0, 70);
  const auto cols = *rc::gen::inRange<std::size_t>(0, 19);
  const auto pad = *rc::gen::inRange<std::size_t>(0, 6);
  const std::size_t stride = cols + pad;
  std::vector<T> buf(rows * stride + 1);
  for (std::size_t i = 0; i < buf.size(); ++i) {
    buf[i] = static_cast<T>(static_cast<double>(i) * 1.25 - 7.0);
  }
  MatrixView<T> table(buf.data(), rows, cols, stride);
  const std::vector<T> before = buf;
  const std::size_t seq_len = interesting_size(rows);
  const std::size_t start = interesting_size(rows);
  const bool fits = start <= rows && seq_len <= rows - start;
  if (fits) {
    const auto pe = learned_positional_embedding(seq_len, table, start);
    RC_ASSERT(pe.rows() == seq_len);
    RC_ASSERT(pe.cols() == cols);
    RC_ASSERT(pe.row_stride() == stride);
    if (seq_len > 0) RC_ASSERT(pe.data() == buf.data() + start * stride);
    for (std::size_t r = 0; r < seq_len; ++r) {
      RC_ASSERT(
          std::memcmp(pe.row(r).data(), buf.data() + (start + r) * stride, cols * sizeof(T)) == 0);
    }
  } else {
    try {
      (void)learned_positional_embedding(seq_len, table, start);
      RC_FAIL("no SequenceTooLong");
    } catch (const SequenceTooLong& e) {
      RC_ASSERT(e.seq_len() == seq_len);
      RC_ASSERT(e.start() == start);
      RC_ASSERT(e.max_seq_len() == rows);
      RC_ASSERT(std::string(e.what()).find(std::to_string(seq_len)) != std::string::npos);
    }
  }
  // The table is byte for byte what it was.
  RC_ASSERT(std::memcmp(before.data(), buf.data(), buf.size() * sizeof(T)) == 0);
}

RC_GTEST_PROP(LookupProperty, FloatViewsMatchTheTableOrThrow, ()) {
  check_lookup_property<float>();
}
RC_GTEST_PROP(LookupProperty, DoubleViewsMatchTheTableOrThrow, ()) {
  check_lookup_property<double>();
}

RC_GTEST_PROP(LookupProperty, MatrixOverloadAgreesWithViewOverload, ()) {
  const auto rows = *rc::gen::inRange<std::size_t>(0, 40);
  const auto cols = *rc::gen::inRange<std::size_t>(1, 9);
  const auto seq_len = *rc::gen::inRange<std::size_t>(0, rows + 2);
  const auto start = *rc::gen::inRange<std::size_t>(0, rows + 2);
  const Matrix<double> table = numbered_table<double>(rows, cols);
  const auto before = bytes_of<double>(table);
  bool threw_m = false;
  bool threw_v = false;
  MatrixView<const double> a;
  MatrixView<const double> b;
  try {
    a = learned_positional_embedding(seq_len, table, start);
  } catch (const SequenceTooLong&) {
    threw_m = true;
  }
  try {
    b = learned_positional_embedding(seq_len, table.view(), start);
  } catch (const SequenceTooLong&) {
    threw_v = true;
  }
  RC_ASSERT(threw_m == threw_v);
  RC_ASSERT(threw_m == (start + seq_len > rows));
  if (!threw_m) {
    RC_ASSERT(a.data() == b.data());
    RC_ASSERT(a.rows() == b.rows());
  }
  RC_ASSERT(before == bytes_of<double>(table));
}

}  // namespace
}  // namespace posemb
