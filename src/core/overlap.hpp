// Internal (core): do two views share memory? The one check every entry point that writes one
// view while reading (or writing) another makes before it touches anything:
//
//   detail::check_no_overlap("embed_forward", "out", out, "wte", wte);  // throws if they share
//
// Views of one element type and one row stride (two blocks of the same matrix, the common case)
// are compared exactly: a view of the left columns and one of the right columns of a matrix do
// not overlap. Any other pair is compared by the bytes it spans, first to last element, which
// may refuse two interleaved views that share no element; it never misses a shared one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "posemb/matrix_view.hpp"

namespace posemb::detail {

// A view as the addresses it covers: `rows` rows of `cols` elements of `item` bytes, each row
// `stride` elements after the one before.
struct Footprint {
  std::uintptr_t begin = 0;  // first byte
  std::size_t rows = 0, cols = 0, stride = 0, item = 0;

  bool empty() const noexcept { return rows == 0 || cols == 0; }
  // One past the last byte (for a non-empty view).
  std::uintptr_t end() const noexcept { return begin + ((rows - 1) * stride + cols) * item; }
};

template <class T>
Footprint footprint(MatrixView<T> m) noexcept {
  return {reinterpret_cast<std::uintptr_t>(m.data()), m.rows(), m.cols(), m.row_stride(),
          sizeof(T)};
}

// True when some element of a is (or partly is) some element of b.
inline bool overlaps(const Footprint& a, const Footprint& b) noexcept {
  if (a.empty() || b.empty()) return false;
  if (a.end() <= b.begin || b.end() <= a.begin) return false;
  const bool same_grid = a.item == b.item && a.stride == b.stride && a.stride >= a.cols &&
                         a.stride >= b.cols &&
                         (a.begin > b.begin ? a.begin - b.begin : b.begin - a.begin) % a.item == 0;
  if (!same_grid) return true;  // conservative: their byte ranges meet
  // Elements a + i*s + j (0 <= i < a.rows, 0 <= j < a.cols) and b + k*s + l meet when
  // d = b - a = q*s + r with q = i - k in (-b.rows, a.rows) and r = j - l in (-b.cols, a.cols).
  // The r window is narrower than 2s, so at most two q are candidates: floor(d / s) and one more.
  const auto s = static_cast<std::int64_t>(a.stride);
  const std::int64_t d = (static_cast<std::int64_t>(b.begin) - static_cast<std::int64_t>(a.begin)) /
                         static_cast<std::int64_t>(a.item);
  std::int64_t q0 = d / s;
  if (d % s != 0 && d < 0) --q0;  // floor
  for (std::int64_t q = q0; q <= q0 + 1; ++q) {
    const std::int64_t r = d - q * s;
    const bool q_ok =
        q > -static_cast<std::int64_t>(b.rows) && q < static_cast<std::int64_t>(a.rows);
    const bool r_ok =
        r > -static_cast<std::int64_t>(b.cols) && r < static_cast<std::int64_t>(a.cols);
    if (q_ok && r_ok) return true;
  }
  return false;
}

template <class A, class B>
bool overlaps(MatrixView<A> a, MatrixView<B> b) noexcept {
  return overlaps(footprint(a), footprint(b));
}

// A span as a 1 x n view (0 x 0 when empty), to compare it with check_no_overlap.
template <class T>
MatrixView<T> as_row(std::span<T> s) {
  return s.empty() ? MatrixView<T>() : MatrixView<T>(s.data(), 1, s.size());
}

// Throws std::invalid_argument naming the operation and both arguments when a and b share memory
// (an output that is a view of an input, or of another output, would read what it has written).
template <class A, class B>
void check_no_overlap(const char* op, const char* a_name, MatrixView<A> a, const char* b_name,
                      MatrixView<B> b) {
  if (!overlaps(a, b)) return;
  throw std::invalid_argument(std::string(op) + ": " + a_name + " (" + std::to_string(a.rows()) +
                              " x " + std::to_string(a.cols()) + ") overlaps " + b_name + " (" +
                              std::to_string(b.rows()) + " x " + std::to_string(b.cols()) +
                              ") in memory; " + op + " writes " + a_name + " while it uses " +
                              b_name + ", so pass separate arrays");
}

}  // namespace posemb::detail
