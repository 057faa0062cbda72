// The overlap check (src/core/overlap.hpp) against the set of elements each view covers: views
// of one grid exactly, any other pair never missing a shared element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "core/overlap.hpp"

namespace posemb {
namespace {

// The byte addresses a view covers (the reference: no cleverness).
template <class T>
std::set<std::uintptr_t> bytes_of(MatrixView<T> m) {
  std::set<std::uintptr_t> s;
  for (std::size_t r = 0; r < m.rows(); ++r) {
    for (std::size_t c = 0; c < m.cols(); ++c) {
      const auto p = reinterpret_cast<std::uintptr_t>(&m(r, c));
      for (std::size_t b = 0; b < sizeof(T); ++b) s.insert(p + b);
    }
  }
  return s;
}

template <class A, class B>
bool share_bytes(MatrixView<A> a, MatrixView<B> b) {
  const auto sa = bytes_of(a), sb = bytes_of(b);
  return std::any_of(sa.begin(), sa.end(), [&](std::uintptr_t p) { return sb.count(p) != 0; });
}

// Random blocks (offset, rows, cols) of one buffer with row stride `stride`.
MatrixView<float> block(std::vector<float>& buf, std::size_t stride, std::mt19937_64& rng) {
  const std::size_t rows_total = buf.size() / stride;
  const std::size_t r0 = rng() % rows_total, c0 = rng() % stride;
  const std::size_t rows = 1 + rng() % (rows_total - r0), cols = 1 + rng() % (stride - c0);
  return MatrixView<float>(buf.data() + r0 * stride + c0, rows, cols, stride);
}

TEST(Overlap, BlocksOfOneMatrixAreComparedExactly) {
  std::mt19937_64 rng(7);
  for (const std::size_t stride : {1u, 2u, 3u, 7u, 16u}) {
    std::vector<float> buf(stride * 9);
    for (int i = 0; i < 3000; ++i) {
      const MatrixView<float> a = block(buf, stride, rng), b = block(buf, stride, rng);
      ASSERT_EQ(detail::overlaps(a, b), share_bytes(a, b))
          << "stride " << stride << " a at " << (a.data() - buf.data()) << " " << a.rows() << "x"
          << a.cols() << ", b at " << (b.data() - buf.data()) << " " << b.rows() << "x" << b.cols();
      ASSERT_EQ(detail::overlaps(a, b), detail::overlaps(b, a));
    }
  }
}

TEST(Overlap, OtherPairsNeverMissASharedElement) {
  std::mt19937_64 rng(11);
  std::vector<float> buf(200);
  for (int i = 0; i < 3000; ++i) {
    // Different strides, and a half-float view of the same bytes.
    const std::size_t sa = 1 + rng() % 12, sb = 1 + rng() % 12;
    const MatrixView<float> a = block(buf, sa, rng);
    const MatrixView<float> b = block(buf, sb, rng);
    if (share_bytes(a, b)) {
      ASSERT_TRUE(detail::overlaps(a, b));
    }
    const MatrixView<const std::uint16_t> h(reinterpret_cast<const std::uint16_t*>(b.data()) + 1,
                                            b.rows(), b.cols(), 2 * b.row_stride());
    if (share_bytes(a, h)) {
      ASSERT_TRUE(detail::overlaps(a, h));
    }
  }
}

TEST(Overlap, DisjointBuffersAndEmptyViewsNeverOverlap) {
  std::vector<float> x(64), y(64);
  EXPECT_FALSE(
      detail::overlaps(MatrixView<float>(x.data(), 8, 8), MatrixView<float>(y.data(), 8, 8)));
  EXPECT_FALSE(
      detail::overlaps(MatrixView<float>(x.data(), 0, 8), MatrixView<float>(x.data(), 8, 8)));
  EXPECT_FALSE(
      detail::overlaps(MatrixView<float>(x.data(), 8, 0), MatrixView<float>(x.data(), 8, 8)));
  // The left and right halves of one matrix share no element; the same view does.
  const MatrixView<float> left(x.data(), 8, 4, 8), right(x.data() + 4, 8, 4, 8);
  EXPECT_FALSE(detail::overlaps(left, right));
  EXPECT_TRUE(detail::overlaps(left, left));
}

TEST(Overlap, TheErrorNamesTheOperationAndBothArguments) {
  std::vector<float> x(64);
  const MatrixView<float> a(x.data(), 4, 8), b(x.data() + 8, 2, 8);
  try {
    detail::check_no_overlap("embed_forward", "out", a, "wte", b);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "embed_forward: out (4 x 8) overlaps wte (2 x 8) in memory; embed_forward "
                 "writes out while it uses wte, so pass separate arrays");
  }
  EXPECT_NO_THROW(detail::check_no_overlap("op", "a", MatrixView<float>(x.data(), 1, 8), "b",
                                           MatrixView<float>(x.data() + 8, 7, 8)));
}

}  // namespace
}  // namespace posemb
