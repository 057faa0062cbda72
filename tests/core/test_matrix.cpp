// MatrixView and Matrix: the contract of the public types.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/memory.hpp"

namespace posemb {
namespace {

template <class T>
class MatrixTyped : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MatrixTyped, Scalars);

TYPED_TEST(MatrixTyped, ViewAccessorsUseTheStride) {
  using T = TypeParam;
  std::vector<T> buf(3 * 5);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<T>(i);
  MatrixView<T> v(buf.data(), 3, 4, 5);
  EXPECT_EQ(v.rows(), 3u);
  EXPECT_EQ(v.cols(), 4u);
  EXPECT_EQ(v.row_stride(), 5u);
  EXPECT_EQ(v.data(), buf.data());
  EXPECT_EQ(v(2, 3), static_cast<T>(13));
  EXPECT_EQ(&v(1, 0), buf.data() + 5);
  std::span<T> r = v.row(2);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r.data(), buf.data() + 10);
  v(0, 1) = static_cast<T>(-7);
  EXPECT_EQ(buf[1], static_cast<T>(-7));
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_THROW((void)v.at(3, 0), std::out_of_range);
  EXPECT_THROW((void)v.at(0, 4), std::out_of_range);
  EXPECT_EQ(v.at(2, 0), static_cast<T>(10));
}

TYPED_TEST(MatrixTyped, ThreeArgumentViewHasStrideCols) {
  using T = TypeParam;
  std::vector<T> buf(6);
  MatrixView<T> v(buf.data(), 2, 3);
  EXPECT_EQ(v.row_stride(), 3u);
  EXPECT_TRUE(v.is_contiguous());
}

TYPED_TEST(MatrixTyped, ConstViewConvertsImplicitlyAndCannotWrite) {
  using T = TypeParam;
  std::vector<T> buf(4, static_cast<T>(2));
  MatrixView<T> v(buf.data(), 2, 2);
  MatrixView<const T> c = v;  // implicit
  EXPECT_EQ(c.data(), buf.data());
  EXPECT_EQ(c.row_stride(), 2u);
  static_assert(std::is_same_v<decltype(c(0, 0)), const T&>);
  static_assert(std::is_same_v<decltype(c.row(0)), std::span<const T>>);
  static_assert(!std::is_assignable_v<decltype(c(0, 0)), T>);
  // No conversion the other way.
  static_assert(!std::is_convertible_v<MatrixView<const T>, MatrixView<T>>);
  static_assert(std::is_convertible_v<MatrixView<T>, MatrixView<const T>>);
}

TYPED_TEST(MatrixTyped, ViewRejectsOverlappingRowsNullDataAndOverflow) {
  using T = TypeParam;
  std::vector<T> buf(16);
  EXPECT_THROW((MatrixView<T>(buf.data(), 2, 4, 3)), std::invalid_argument);
  EXPECT_NO_THROW((MatrixView<T>(buf.data(), 1, 4, 0)));  // one row: stride irrelevant
  EXPECT_THROW((MatrixView<T>(nullptr, 2, 2)), std::invalid_argument);
  EXPECT_NO_THROW((MatrixView<T>(nullptr, 0, 2)));
  EXPECT_NO_THROW((MatrixView<T>(nullptr, 3, 0)));
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_THROW((MatrixView<T>(buf.data(), 3, 2, big)), std::invalid_argument);
  EXPECT_THROW((MatrixView<T>(buf.data(), 2, std::numeric_limits<std::size_t>::max())),
               std::invalid_argument);
}

TYPED_TEST(MatrixTyped, SubrowsAreCheckedWithoutOverflow) {
  using T = TypeParam;
  std::vector<T> buf(20);
  MatrixView<T> v(buf.data(), 4, 3, 5);
  auto s = v.subrows(1, 2);
  EXPECT_EQ(s.data(), buf.data() + 5);
  EXPECT_EQ(s.rows(), 2u);
  EXPECT_EQ(s.row_stride(), 5u);
  EXPECT_EQ(v.subrows(4, 0).rows(), 0u);
  EXPECT_THROW((void)v.subrows(5, 0), std::out_of_range);
  EXPECT_THROW((void)v.subrows(1, std::numeric_limits<std::size_t>::max()), std::out_of_range);
  EXPECT_THROW((void)v.subrows(std::numeric_limits<std::size_t>::max(), 2), std::out_of_range);
}

TYPED_TEST(MatrixTyped, SubcolsAreAColumnBlockWithTheSameStride) {
  using T = TypeParam;
  std::vector<T> buf(3 * 7);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<T>(i);
  MatrixView<T> v(buf.data(), 3, 6, 7);  // a fused (rows, 3C) buffer with C = 2, one spare column
  auto k = v.subcols(2, 2);
  EXPECT_EQ(k.data(), buf.data() + 2);
  EXPECT_EQ(k.rows(), 3u);
  EXPECT_EQ(k.cols(), 2u);
  EXPECT_EQ(k.row_stride(), 7u);
  EXPECT_EQ(k(2, 1), static_cast<T>(2 * 7 + 3));
  EXPECT_EQ(v.subcols(6, 0).cols(), 0u);
  EXPECT_THROW((void)v.subcols(5, 2), std::out_of_range);
  EXPECT_THROW((void)v.subcols(7, 0), std::out_of_range);
  EXPECT_THROW((void)v.subcols(1, std::numeric_limits<std::size_t>::max()), std::out_of_range);
  EXPECT_EQ(MatrixView<T>().subcols(0, 0).data(), nullptr);
}

// A view variable can be re-pointed; a temporary view cannot be assigned to (it would change
// nothing, as `layer.table() = other` did not replace the table).
TYPED_TEST(MatrixTyped, OnlyAViewVariableCanBeAssigned) {
  using T = TypeParam;
  static_assert(std::is_assignable_v<MatrixView<T>&, MatrixView<T>>);
  static_assert(!std::is_assignable_v<MatrixView<T>, MatrixView<T>>);
  static_assert(!std::is_assignable_v<MatrixView<T>, const Matrix<T>&>);
  static_assert(!std::is_assignable_v<MatrixView<T>, Matrix<T>>);
  static_assert(std::is_trivially_copyable_v<MatrixView<T>>);
  std::vector<T> a(4), b(6);
  MatrixView<T> v(a.data(), 2, 2);
  v = MatrixView<T>(b.data(), 2, 3);
  EXPECT_EQ(v.data(), b.data());
  EXPECT_EQ(v.cols(), 3u);
}

// A named Matrix passes as an output (a mutable view); a temporary one does not compile, since
// the view would dangle at the end of the statement. Read-only views come from either.
TYPED_TEST(MatrixTyped, MatrixPassesAsAMutableViewOnlyWhenNamed) {
  using T = TypeParam;
  static_assert(std::is_convertible_v<Matrix<T>&, MatrixView<T>>);
  static_assert(!std::is_convertible_v<Matrix<T>, MatrixView<T>>);
  static_assert(!std::is_convertible_v<Matrix<T>&&, MatrixView<T>>);
  static_assert(!std::is_convertible_v<const Matrix<T>&, MatrixView<T>>);
  static_assert(std::is_convertible_v<const Matrix<T>&, MatrixView<const T>>);
  static_assert(std::is_convertible_v<Matrix<T>, MatrixView<const T>>);
  Matrix<T> m(2, 3);
  const auto fill = [](MatrixView<T> out) { out(1, 2) = static_cast<T>(7); };
  fill(m);
  EXPECT_EQ(m(1, 2), static_cast<T>(7));
}

// view(), cview(), row() and flat() of a temporary matrix, const or not, would dangle at the
// end of the statement (`mk().view()` was a mutable view of a temporary): they do not compile.
template <class M>
concept ViewOf = requires(M&& m) {
  std::forward<M>(m).view();
};
template <class M>
concept CviewOf = requires(M&& m) {
  std::forward<M>(m).cview();
};
template <class M>
concept RowOf = requires(M&& m) {
  std::forward<M>(m).row(0);
};
template <class M>
concept FlatOf = requires(M&& m) {
  std::forward<M>(m).flat();
};
TYPED_TEST(MatrixTyped, ViewsAndSpansOfATemporaryDoNotCompile) {
  using M = Matrix<TypeParam>;
  static_assert(ViewOf<M&> && ViewOf<const M&> && !ViewOf<M> && !ViewOf<const M>);
  static_assert(CviewOf<M&> && CviewOf<const M&> && !CviewOf<M> && !CviewOf<const M>);
  static_assert(RowOf<M&> && RowOf<const M&> && !RowOf<M> && !RowOf<const M>);
  static_assert(FlatOf<M&> && FlatOf<const M&> && !FlatOf<M> && !FlatOf<const M>);
  M m(2, 3);
  const M& c = m;
  EXPECT_EQ(m.view().data(), m.data());
  EXPECT_EQ(c.view().data(), m.data());
  EXPECT_EQ(c.cview().data(), m.data());
  EXPECT_EQ(m.row(1).data(), m.data() + 3);
  EXPECT_EQ(c.flat().size(), 6u);
}

// data() of a temporary matrix would be a pointer into it, dangling at the end of the
// statement: it does not compile. An element of a temporary, `mk()(0, 0)` or `mk().at(0, 0)`,
// is a copy (a reference to it dangled); of a named matrix it stays a reference.
template <class M>
concept DataOf = requires(M&& m) {
  std::forward<M>(m).data();
};
template <class M>
using ElementOf = decltype(std::declval<M>()(0, 0));
template <class M>
using AtOf = decltype(std::declval<M>().at(0, 0));
TYPED_TEST(MatrixTyped, DataOfATemporaryDoesNotCompileAndItsElementsAreCopies) {
  using T = TypeParam;
  using M = Matrix<T>;
  static_assert(DataOf<M&> && DataOf<const M&> && !DataOf<M> && !DataOf<const M>);
  static_assert(std::is_same_v<ElementOf<M&>, T&> && std::is_same_v<ElementOf<const M&>, const T&>);
  static_assert(std::is_same_v<ElementOf<M>, T> && std::is_same_v<ElementOf<const M>, T>);
  static_assert(std::is_same_v<AtOf<M&>, T&> && std::is_same_v<AtOf<const M&>, const T&>);
  static_assert(std::is_same_v<AtOf<M>, T> && std::is_same_v<AtOf<const M>, T>);
  const auto mk = [] {
    M m(2, 3);
    m(1, 2) = static_cast<T>(5);
    return m;
  };
  EXPECT_EQ(mk()(1, 2), static_cast<T>(5));
  EXPECT_EQ(mk().at(1, 2), static_cast<T>(5));
  EXPECT_THROW((void)mk().at(2, 0), std::out_of_range);
}

// A copy of a view without columns makes no pass over its rows, however many it claims.
TYPED_TEST(MatrixTyped, CopyOfRowsWithoutColumnsReturnsAtOnce) {
  using T = TypeParam;
  const Matrix<T> m(MatrixView<const T>(nullptr, std::size_t{1} << 40, 0));
  EXPECT_EQ(m.rows(), std::size_t{1} << 40);
  EXPECT_EQ(m.cols(), 0u);
}

TYPED_TEST(MatrixTyped, MatrixIsZeroFilledAlignedAndContiguous) {
  using T = TypeParam;
  Matrix<T> m(7, 13);
  EXPECT_EQ(m.rows(), 7u);
  EXPECT_EQ(m.cols(), 13u);
  EXPECT_EQ(m.row_stride(), 13u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.data()) % Matrix<T>::alignment, 0u);
  for (T x : m.flat()) EXPECT_EQ(x, static_cast<T>(0));
  m(6, 12) = static_cast<T>(3);
  EXPECT_EQ(m.data()[6 * 13 + 12], static_cast<T>(3));
  EXPECT_EQ(m.row(6).data(), m.data() + 78);
  MatrixView<T> v = m.view();
  EXPECT_EQ(v.data(), m.data());
  MatrixView<const T> c = m;  // implicit
  EXPECT_EQ(c.data(), m.data());
  EXPECT_EQ(c.rows(), 7u);
  const Matrix<T>& cm = m;
  static_assert(std::is_same_v<decltype(cm(0, 0)), const T&>);
  static_assert(std::is_same_v<decltype(cm.view()), MatrixView<const T>>);
}

TYPED_TEST(MatrixTyped, MatrixFromViewIsADeepContiguousCopy) {
  using T = TypeParam;
  std::vector<T> buf(4 * 6);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<T>(i) / 3;
  MatrixView<const T> v(buf.data(), 4, 5, 6);
  Matrix<T> copy(v);
  ASSERT_EQ(copy.rows(), 4u);
  ASSERT_EQ(copy.cols(), 5u);
  EXPECT_EQ(copy.row_stride(), 5u);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(std::memcmp(copy.row(r).data(), v.row(r).data(), 5 * sizeof(T)), 0);
  }
  buf[0] = static_cast<T>(100);
  EXPECT_EQ(copy(0, 0), static_cast<T>(0));  // a copy, not an alias
  MatrixView<T> mv(buf.data(), 4, 6);
  Matrix<T> from_mutable(mv);  // a mutable view converts too
  EXPECT_EQ(from_mutable(0, 0), static_cast<T>(100));
}

TYPED_TEST(MatrixTyped, CopyMoveAndEquality) {
  using T = TypeParam;
  Matrix<T> a(3, 2);
  a(1, 1) = static_cast<T>(5);
  Matrix<T> b = a;
  EXPECT_TRUE(a == b);
  EXPECT_NE(a.data(), b.data());
  b(0, 0) = static_cast<T>(1);
  EXPECT_FALSE(a == b);
  const T* p = a.data();
  Matrix<T> c = std::move(a);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(a.rows(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(a.empty());
  Matrix<T> empty(0, 5);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.cols(), 5u);
}

TYPED_TEST(MatrixTyped, MatrixRejectsOverflowingShapes) {
  using T = TypeParam;
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_THROW((Matrix<T>(huge, 3)), std::length_error);
  EXPECT_THROW((Matrix<T>(std::numeric_limits<std::size_t>::max(), 2)), std::length_error);
}

// Whether this system's transparent huge pages can be asked for (mode "always" or "madvise").
bool huge_pages_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return !mode.empty() && mode.find("[never]") == std::string::npos;
}

// The VmFlags of the mapping holding address p (/proc/self/smaps), or "" if not found.
std::string vm_flags_at(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = a >= lo && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line + " ";
    }
  }
  return "";
}

// Large matrices ask for transparent huge pages (random rows of a table then rarely miss the
// TLB); small ones do not (their pages may share a mapping with unrelated memory).
TEST(Matrix, LargeMatricesAskForHugePages) {
  if (!huge_pages_available()) GTEST_SKIP() << "transparent huge pages are switched off here";
  Matrix<float> big(2048, 2048);  // 16 MiB
  const std::string flags = vm_flags_at(big.data() + big.size() / 2);
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
  EXPECT_EQ(big(1000, 1000), 0.0f);
}

TEST(Matrix, AdviseHugePagesAcceptsAnyRange) {
  advise_huge_pages(nullptr, 1 << 30);
  std::vector<char> small(100);
  advise_huge_pages(small.data(), small.size());
  advise_huge_pages(small.data(), 0);
  // A range whose end would overflow the address space: nothing happens.
  advise_huge_pages(reinterpret_cast<void*>(std::uintptr_t{0} - 4096), std::size_t{1} << 30);
  EXPECT_EQ(small[0], 0);
}

}  // namespace
}  // namespace posemb
