// resolve_positions: every position source on hand-worked examples, every element type of ids
// and masks, every error with the numbers in its message, and the sources that must not
// compile (a temporary matrix would dangle).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
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

// A null operation name is the default one (the message read through the null pointer and
// crashed).
TEST(Positions, NullOperationNameIsTheDefaultName) {
  try {
    (void)resolve_positions(PositionSource::contiguous(5), 1, 3, 4, nullptr);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    EXPECT_EQ(std::string(e.what()).rfind("resolve_positions", 0), 0u) << e.what();
  }
  EXPECT_EQ(flat(resolve_positions(PositionSource::contiguous(1), 1, 3, 4, nullptr)),
            (std::vector<std::int64_t>{1, 2, 3}));
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
    EXPECT_NE(m.find("batch row 1, token 1, explicit position id 1030"), std::string::npos) << m;
    EXPECT_NE(m.find("1024"), std::string::npos) << m;
    // The call's numbers: ids 0..1030 need rows [0, 1031).
    EXPECT_NE(m.find("6 explicit position ids 0..1030 in a (2, 3) batch"), std::string::npos) << m;
    EXPECT_NE(m.find("at least 1031 rows"), std::string::npos) << m;
    EXPECT_EQ(e.start(), 0u);
    EXPECT_EQ(e.required_rows(), 1031u);
  }
}

TEST(Positions, ExplicitIdsPastTheTableNameTheCallsNumbers) {
  // LearnedPositionalEmbedding(64, 64)(arange(100)): 100 positions need 100 rows, whichever id
  // is the first past the table.
  const Matrix<TokenId> tokens(1, 100);
  Matrix<std::int64_t> ids(1, 100);
  for (std::size_t t = 0; t < 100; ++t) ids(0, t) = static_cast<std::int64_t>(t);
  try {
    (void)resolve_positions(PositionSource::explicit_ids(ids), tokens, 64);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.seq_len(), 100u) << m;
    EXPECT_EQ(e.start(), 0u) << m;
    EXPECT_EQ(e.max_seq_len(), 64u) << m;
    EXPECT_NE(m.find("seq_len = 100 positions starting at start = 0 need rows [0, 100)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("batch row 0, token 64, explicit position id 64"), std::string::npos) << m;
  }
}

TEST(Positions, MaskPastTheTableNamesTheRowsRealTokens) {
  const Matrix<TokenId> tokens(1, 6);
  const auto mask = from_rows<std::int64_t>(1, 6, {0, 1, 1, 1, 1, 1});
  try {
    (void)resolve_positions(PositionSource::padding_mask(mask), tokens, 3);
    FAIL() << "no exception";
  } catch (const SequenceTooLong& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.seq_len(), 5u) << m;
    EXPECT_EQ(e.start(), 0u) << m;
    EXPECT_NE(m.find("5 real tokens in batch row 0"), std::string::npos) << m;
    EXPECT_NE(m.find("batch row 0, token 4, real token number 3"), std::string::npos) << m;
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
  EXPECT_EQ(flat(resolve_positions(PositionSource::packed(tokens, sep), tokens, 8)),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 3, 0, 0, 0, 1, 2, 0, 1}));
}

TEST(Positions, PackedDocumentLongerThanTheTableThrows) {
  const auto tokens = from_rows<TokenId>(1, 6, {1, 0, 1, 1, 1, 1});
  try {
    (void)resolve_positions(PositionSource::packed(tokens, 0), tokens, 3);
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
  // packed tokens must be (B, T)
  EXPECT_THROW((void)resolve_positions(PositionSource::packed(tokens, 0), 3, 2, 8),
               std::invalid_argument);
  EXPECT_THROW((void)resolve_positions(PositionSource::packed(tokens, 0), 2, 4, 8),
               std::invalid_argument);
}

// --- element types -------------------------------------------------------------------------

TEST(Positions, ExplicitIdsInt32AndInt64GiveTheSamePositions) {
  const auto ids64 = from_rows<std::int64_t>(2, 3, {5, 0, 2, 7, 7, 1});
  const auto ids32 = from_rows<std::int32_t>(2, 3, {5, 0, 2, 7, 7, 1});
  const auto want = std::vector<std::int64_t>{5, 0, 2, 7, 7, 1};
  EXPECT_EQ(flat(resolve_positions(PositionSource::explicit_ids(ids64), 2, 3, 8)), want);
  EXPECT_EQ(flat(resolve_positions(PositionSource::explicit_ids(ids32), 2, 3, 8)), want);
  // A strided view of int32 ids (columns 1..3 of a 2 x 4 buffer).
  std::vector<std::int32_t> buf = {9, 5, 0, 2, 9, 7, 7, 1};
  const MatrixView<const std::int32_t> strided(buf.data() + 1, 2, 3, 4);
  EXPECT_EQ(flat(resolve_positions(PositionSource::explicit_ids(strided), 2, 3, 8)), want);
  // Errors name the place for int32 too.
  const auto neg = from_rows<std::int32_t>(1, 2, {0, -7});
  try {
    (void)resolve_positions(PositionSource::explicit_ids(neg), 1, 2, 8);
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("-7 at batch row 0, token 1"), std::string::npos)
        << e.what();
  }
  const auto far = from_rows<std::int32_t>(1, 2, {0, 8});
  EXPECT_THROW((void)resolve_positions(PositionSource::explicit_ids(far), 1, 2, 8),
               SequenceTooLong);
}

template <class T>
Matrix<T> left_padded_mask() {  // row 0: 2 pads then 3 tokens; row 1: 4 tokens then a pad
  return from_rows<T>(2, 5, {T(0), T(0), T(1), T(1), T(1), T(1), T(1), T(1), T(1), T(0)});
}

TEST(Positions, PaddingMasksOfEveryElementTypeGiveTheSamePositions) {
  const auto want = std::vector<std::int64_t>{-1, -1, 0, 1, 2, 0, 1, 2, 3, -1};
  const auto m8 = left_padded_mask<std::uint8_t>();
  const auto mb = left_padded_mask<bool>();
  const auto m32 = left_padded_mask<std::int32_t>();
  const auto m64 = left_padded_mask<std::int64_t>();  // HF's attention_mask is int64
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(m8), 2, 5, 8)), want);
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(mb), 2, 5, 8)), want);
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(m32), 2, 5, 8)), want);
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(m64), 2, 5, 8)), want);
  EXPECT_EQ(flat(resolve_positions(PositionSource::padding_mask(m64.view()), 2, 5, 8)), want);
}

template <class T>
void expect_bad_mask_value(T bad, const std::string& shown) {
  auto mask = left_padded_mask<T>();
  mask(1, 3) = bad;
  try {
    (void)resolve_positions(PositionSource::padding_mask(mask), 2, 5, 8);
    ADD_FAILURE() << "no exception for " << shown;
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("padding mask value " + shown + " at batch row 1, token 3"), std::string::npos)
        << m;
  }
}

TEST(Positions, MaskValuesOtherThanZeroAndOneNameTheValueRowAndToken) {
  expect_bad_mask_value<std::uint8_t>(2, "2");
  expect_bad_mask_value<std::uint8_t>(255, "255");
  expect_bad_mask_value<std::int32_t>(-1, "-1");
  expect_bad_mask_value<std::int32_t>(2, "2");
  expect_bad_mask_value<std::int64_t>(std::int64_t{1} << 40, "1099511627776");
  expect_bad_mask_value<std::int64_t>(-1, "-1");
  // A bool mask whose byte is neither 0 nor 1 (memory filled from elsewhere) is reported, not
  // read as a bool (which would be undefined behaviour).
  auto mask = left_padded_mask<bool>();
  const unsigned char two = 2;
  std::memcpy(&mask(0, 4), &two, 1);
  try {
    (void)resolve_positions(PositionSource::padding_mask(mask), 2, 5, 8);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("value 2 at batch row 0, token 4"), std::string::npos)
        << e.what();
  }
}

// --- what must not compile ------------------------------------------------------------------

// Functions returning a Matrix by value, as a user's would (only named in unevaluated
// requires-expressions).
const auto make_ids = [] { return Matrix<std::int64_t>(2, 3); };
const auto make_ids32 = [] { return Matrix<std::int32_t>(2, 3); };
const auto make_mask = [] { return Matrix<std::uint8_t>(2, 3); };
const auto make_mask64 = [] { return Matrix<std::int64_t>(2, 3); };
const auto make_bool_mask = [] { return Matrix<bool>(2, 3); };
const auto make_tokens = [] { return Matrix<TokenId>(2, 3); };

template <class Make>
concept IdsFromCall = requires(Make make) {
  PositionSource::explicit_ids(make());
};
template <class Make>
concept MaskFromCall = requires(Make make) {
  PositionSource::padding_mask(make());
};
template <class Make>
concept PackedFromCall = requires(Make make) {
  PositionSource::packed(make(), 0);
};
template <class M>
concept IdsFrom = requires(M&& m) {
  PositionSource::explicit_ids(std::forward<M>(m));
};
template <class M>
concept MaskFrom = requires(M&& m) {
  PositionSource::padding_mask(std::forward<M>(m));
};
template <class M>
concept PackedFrom = requires(M&& m) {
  PositionSource::packed(std::forward<M>(m), 0);
};

// The source keeps a view: the temporary returned by make_ids() is freed at the end of the
// statement, so `PositionSource::explicit_ids(make_ids())` must not compile (it did, and then
// read freed memory).
static_assert(!IdsFromCall<decltype(make_ids)>);
static_assert(!IdsFromCall<decltype(make_ids32)>);
static_assert(!MaskFromCall<decltype(make_mask)>);
static_assert(!MaskFromCall<decltype(make_mask64)>);
static_assert(!MaskFromCall<decltype(make_bool_mask)>);
static_assert(!PackedFromCall<decltype(make_tokens)>);
static_assert(!IdsFrom<Matrix<std::int64_t>>);  // an rvalue (std::move(named) included)
static_assert(!MaskFrom<Matrix<std::uint8_t>>);
static_assert(!PackedFrom<Matrix<TokenId>>);
// A const temporary (`const Matrix<std::int64_t> make();`) dangles the same way, and so does a
// view of a temporary (`make().cview()`, which no longer compiles).
static_assert(!IdsFrom<const Matrix<std::int64_t>> && !IdsFrom<const Matrix<std::int32_t>>);
static_assert(!MaskFrom<const Matrix<std::uint8_t>> && !PackedFrom<const Matrix<TokenId>>);
const auto make_const_ids = []() -> const Matrix<std::int64_t> {
  return Matrix<std::int64_t>(2, 3);
};
static_assert(!IdsFromCall<decltype(make_const_ids)>);
template <class Make>
concept IdsFromCviewOfCall = requires(Make make) {
  PositionSource::explicit_ids(make().cview());
};
static_assert(!IdsFromCviewOfCall<decltype(make_ids)> &&
              !IdsFromCviewOfCall<decltype(make_const_ids)>);
// ids() and mask() of a temporary source are copies, not references into it.
static_assert(std::is_same_v<decltype(std::declval<PositionSource>().ids()), PositionSource::Ids>);
static_assert(std::is_same_v<decltype(std::declval<const PositionSource&>().mask()),
                             const PositionSource::Mask&>);
// Named matrices, const or not, and views of the accepted element types work.
static_assert(IdsFrom<Matrix<std::int64_t>&> && IdsFrom<const Matrix<std::int64_t>&>);
static_assert(IdsFrom<Matrix<std::int32_t>&> && IdsFrom<MatrixView<std::int32_t>>);
static_assert(IdsFrom<MatrixView<const std::int64_t>>);
static_assert(MaskFrom<Matrix<std::uint8_t>&> && MaskFrom<const Matrix<bool>&>);
static_assert(MaskFrom<Matrix<std::int32_t>&> && MaskFrom<MatrixView<const std::int64_t>>);
static_assert(PackedFrom<const Matrix<TokenId>&> && PackedFrom<MatrixView<TokenId>>);
// Other element types are refused at compile time.
static_assert(!IdsFrom<Matrix<float>&> && !IdsFrom<Matrix<std::uint64_t>&>);
static_assert(!MaskFrom<Matrix<float>&> && !MaskFrom<Matrix<std::int8_t>&>);

TEST(Positions, NamedMatricesAndViewsArePassedByReferenceNotCopied) {
  auto ids = from_rows<std::int64_t>(1, 3, {0, 1, 2});
  const auto src = PositionSource::explicit_ids(ids);
  ids(0, 1) = 5;  // the source sees the change: it references ids
  EXPECT_EQ(flat(resolve_positions(src, 1, 3, 8)), (std::vector<std::int64_t>{0, 5, 2}));
  const auto* view = std::get_if<MatrixView<const std::int64_t>>(&src.ids());
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->data(), ids.data());
}

}  // namespace
}  // namespace posemb
