// resolve_positions: every position source on hand-worked examples, and every error with the
// numbers in its message.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "posemb/posemb.hpp"

namespace posemb {
namespace {

template <class T>
Matrix<T> from_rows(std::size_t rows, std::size_t cols, std::vector<T> values) {
  Matrix<T> m(rows, cols);
  for (std::size_t i = 0; i < values.size(); ++i) m.data()[i] = values[i];
  return m;
}

std::vector<std::int64_t> flat(const Matrix<std::int64_t>& m) {
  return {m.flat().begin(), m.flat().end()};
}

TEST(Positions, ContiguousFromStart) {
  const Matrix<TokenId> tokens(2, 3);
  EXPECT_EQ(flat(resolve_positions(PositionSource::contiguous(), tokens, 3)),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(flat(resolve_positions(PositionSource::contiguous(5), tokens, 8)),
            (std::vector<std::int64_t>{5, 6, 7, 5, 6, 7}));
}

TEST(Positions, ContiguousPastTheTableNamesTheFirstTokenWithoutARow) {
  const Matrix<TokenId> tokens(2, 4);
  try {
    (void)resolve_positions(PositionSource::contiguous(6), tokens, 8);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_EQ(e.seq_len(), 4u);
    EXPECT_EQ(e.start(), 6u);
    EXPECT_EQ(e.max_seq_len(), 8u);
    EXPECT_NE(std::string(e.what()).find("batch row 0, token 2"), std::string::npos) << e.what();
  }
}

TEST(Positions, ExplicitIds) {
  const Matrix<TokenId> tokens(2, 2);
  const auto ids = from_rows<std::int64_t>(2, 2, {3, 0, 7, 7});
  EXPECT_EQ(flat(resolve_positions(PositionSource::explicit_ids(ids), tokens, 8)),
            (std::vector<std::int64_t>{3, 0, 7, 7}));
}

TEST(Positions, ExplicitIdPastTheTableNamesRowTokenAndNumbers) {
  const Matrix<TokenId> tokens(2, 3);
  const auto ids = from_rows<std::int64_t>(2, 3, {0, 1, 2, 3, 1030, 5});
  try {
    (void)resolve_positions(PositionSource::explicit_ids(ids), tokens, 1024);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("batch row 1, token 1"), std::string::npos) << m;
    EXPECT_NE(m.find("1030"), std::string::npos) << m;
    EXPECT_NE(m.find("1024"), std::string::npos) << m;
    EXPECT_EQ(e.start(), 1030u);
  }
}

TEST(Positions, NegativeExplicitIdIsOutOfRange) {
  const Matrix<TokenId> tokens(1, 3);
  const auto ids = from_rows<std::int64_t>(1, 3, {0, -4, 1});
  try {
    (void)resolve_positions(PositionSource::explicit_ids(ids), tokens, 8);
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("-4"), std::string::npos) << m;
    EXPECT_NE(m.find("batch row 0, token 1"), std::string::npos) << m;
  }
}

TEST(Positions, PaddingMaskLeftAndRight) {
  const Matrix<TokenId> tokens(3, 5);
  // row 0 left-padded, row 1 right-padded, row 2 full
  const auto mask = from_rows<std::uint8_t>(3, 5, {0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(mask), tokens, 5)),
            (std::vector<std::int64_t>{-1, -1, 0, 1, 2, 0, 1, 2, -1, -1, 0, 1, 2, 3, 4}));
}

TEST(Positions, PaddingMaskCountsOnlyRealTokensAgainstTheTable) {
  const Matrix<TokenId> tokens(2, 6);
  // 3 real tokens per row fit a 3-row table even though T = 6.
  const auto ok = from_rows<std::uint8_t>(2, 6, {0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0});
  EXPECT_NO_THROW((void)resolve_positions(PositionSource::padding_mask(ok), tokens, 3));
  const auto bad = from_rows<std::uint8_t>(2, 6, {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  try {
    (void)resolve_positions(PositionSource::padding_mask(bad), tokens, 3);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_NE(std::string(e.what()).find("batch row 1, token 3"), std::string::npos) << e.what();
  }
}

TEST(Positions, PaddingMaskRejectsValuesOtherThanZeroAndOne) {
  const Matrix<TokenId> tokens(1, 3);
  const auto mask = from_rows<std::uint8_t>(1, 3, {1, 2, 1});
  EXPECT_THROW((void)resolve_positions(PositionSource::padding_mask(mask), tokens, 8),
               std::invalid_argument);
}

TEST(Positions, PackedRestartsAfterEachSeparator) {
  constexpr TokenId sep = 9;
  const auto tokens = from_rows<TokenId>(2, 7,
                                         {4, 5, sep, 6, 7, 8, sep,  //
                                          sep, sep, 1, 2, sep, 3, 3});
  EXPECT_EQ(flat(resolve_positions(PositionSource::packed(sep), tokens, 8)),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 3, 0, 0, 0, 1, 2, 0, 1}));
}

TEST(Positions, PackedDocumentLongerThanTheTableThrows) {
  const auto tokens = from_rows<TokenId>(1, 6, {1, 0, 1, 1, 1, 1});
  try {
    (void)resolve_positions(PositionSource::packed(0), tokens, 3);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_NE(std::string(e.what()).find("batch row 0, token 5"), std::string::npos) << e.what();
  }
}

TEST(Positions, ShapeMismatchesAndEmptyBatchesThrow) {
  const Matrix<TokenId> tokens(2, 3);
  const Matrix<std::int64_t> ids(3, 2);
  const Matrix<std::uint8_t> mask(2, 4);
  EXPECT_THROW((void)resolve_positions(PositionSource::explicit_ids(ids), tokens, 8),
               std::invalid_argument);
  EXPECT_THROW((void)resolve_positions(PositionSource::padding_mask(mask), tokens, 8),
               std::invalid_argument);
  EXPECT_THROW((void)resolve_positions(PositionSource::contiguous(), Matrix<TokenId>(0, 3), 8),
               std::invalid_argument);
  EXPECT_THROW((void)resolve_positions(PositionSource::contiguous(), Matrix<TokenId>(2, 0), 8),
               std::invalid_argument);
  // packed needs the tokens
  EXPECT_THROW((void)resolve_positions(PositionSource::packed(0), 2, 3, 8), std::invalid_argument);
  // tokens, when given, must match (B, T)
  EXPECT_THROW((void)resolve_positions(PositionSource::contiguous(), 3, 2, 8, tokens),
               std::invalid_argument);
}

}  // namespace
}  // namespace posemb
