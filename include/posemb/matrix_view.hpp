// posemb/matrix_view.hpp: a non-owning, row-major view of a 2-D array with a row stride.
//
//   std::vector<float> buf(4 * 8);
//   posemb::MatrixView<float> m(buf.data(), 4, 8);        // 4 rows, 8 columns, stride 8
//   m(2, 3) = 1.0f;                                         // element reference
//   std::span<float> r = m.row(2);                          // 8 elements
//   posemb::MatrixView<const float> ro = m;                 // read-only, implicit
//   auto right = m.subcols(4, 4);                           // columns [4, 8): (4, 4), stride 8
//
// Row r starts at data() + r * row_stride(); a row holds cols() contiguous elements. A view
// never owns or frees memory: the caller keeps the storage alive for as long as the view is used.
// A view variable can be re-pointed (v = other), but assigning to a temporary view (a function's
// return value) does not compile: it would change nothing.
#pragma once

#include <cassert>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace posemb {

template <class T>
class MatrixView {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  // An empty view: 0 x 0, null data.
  constexpr MatrixView() noexcept = default;

  // A view of rows x cols elements with row_stride == cols.
  MatrixView(T* data, std::size_t rows, std::size_t cols) : MatrixView(data, rows, cols, cols) {}

  // A view of rows x cols elements, row r starting at data + r * row_stride.
  // Throws std::invalid_argument when rows would overlap (row_stride < cols with more than one
  // row), when data is null for a non-empty view, or when the extent overflows std::size_t.
  MatrixView(T* data, std::size_t rows, std::size_t cols, std::size_t row_stride)
      : data_(data), rows_(rows), cols_(cols), stride_(row_stride) {
    validate();
  }

  constexpr MatrixView(const MatrixView&) noexcept = default;
  constexpr MatrixView(MatrixView&&) noexcept = default;
  constexpr MatrixView& operator=(const MatrixView&) & noexcept = default;
  constexpr MatrixView& operator=(MatrixView&&) & noexcept = default;
  ~MatrixView() = default;

  // MatrixView<T> converts implicitly to MatrixView<const T>.
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) constexpr MatrixView(
      const MatrixView<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : data_(other.data()),
        rows_(other.rows()),
        cols_(other.cols()),
        stride_(other.row_stride()) {}

  constexpr std::size_t rows() const noexcept { return rows_; }
  constexpr std::size_t cols() const noexcept { return cols_; }
  constexpr std::size_t row_stride() const noexcept { return stride_; }
  constexpr T* data() const noexcept { return data_; }
  constexpr bool empty() const noexcept { return rows_ == 0 || cols_ == 0; }
  // Number of elements the view shows (rows * cols).
  constexpr std::size_t size() const noexcept { return rows_ * cols_; }
  // True when rows follow each other with no gap (row_stride == cols, or at most one row).
  constexpr bool is_contiguous() const noexcept { return stride_ == cols_ || rows_ <= 1; }

  // Element (r, c). Unchecked in release builds (asserted in debug builds): use at() for a
  // checked access.
  constexpr T& operator()(std::size_t r, std::size_t c) const noexcept {
    assert(r < rows_ && c < cols_);
    return data_[r * stride_ + c];
  }

  // Element (r, c), throwing std::out_of_range when (r, c) is outside the view.
  T& at(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_) {
      throw std::out_of_range("MatrixView::at: element (" + std::to_string(r) + ", " +
                              std::to_string(c) + ") is outside a " + std::to_string(rows_) +
                              " x " + std::to_string(cols_) + " view");
    }
    return data_[r * stride_ + c];
  }

  // Row r as a span of cols() elements. Unchecked in release builds (asserted in debug builds).
  constexpr std::span<T> row(std::size_t r) const noexcept {
    assert(r < rows_);
    return std::span<T>(data_ + r * stride_, cols_);
  }

  // Rows [first, first + count) as a view with the same stride. Throws std::out_of_range when
  // the range does not fit (checked without overflow).
  MatrixView subrows(std::size_t first, std::size_t count) const {
    if (first > rows_ || count > rows_ - first) {
      throw std::out_of_range("MatrixView::subrows: rows [" + std::to_string(first) + ", " +
                              std::to_string(first) + " + " + std::to_string(count) +
                              ") are outside a view of " + std::to_string(rows_) + " rows");
    }
    // Row `first` of the view; when first == rows() it is one past the view's last element.
    T* begin = data_;
    if (first < rows_) {
      begin = data_ + first * stride_;
    } else if (rows_ != 0) {
      begin = data_ + (rows_ - 1) * stride_ + cols_;
    }
    return MatrixView(unchecked_tag{}, begin, count, cols_, stride_);
  }

  // Columns [first, first + count) of every row, as a view with the same row stride (q and k as
  // column blocks of a fused qkv buffer). Throws std::out_of_range when the range does not fit
  // (checked without overflow).
  MatrixView subcols(std::size_t first, std::size_t count) const {
    if (first > cols_ || count > cols_ - first) {
      throw std::out_of_range("MatrixView::subcols: columns [" + std::to_string(first) + ", " +
                              std::to_string(first) + " + " + std::to_string(count) +
                              ") are outside a view of " + std::to_string(cols_) + " columns");
    }
    if (rows_ == 0 || count == 0) return MatrixView(unchecked_tag{}, data_, rows_, count, stride_);
    return MatrixView(unchecked_tag{}, data_ + first, rows_, count, stride_);
  }

 private:
  struct unchecked_tag {};
  constexpr MatrixView(unchecked_tag, T* data, std::size_t rows, std::size_t cols,
                       std::size_t stride) noexcept
      : data_(data), rows_(rows), cols_(cols), stride_(stride) {}

  void validate() const {
    if (rows_ > 1 && stride_ < cols_) {
      throw std::invalid_argument("MatrixView: row_stride " + std::to_string(stride_) +
                                  " is smaller than cols " + std::to_string(cols_) +
                                  ", so rows would overlap");
    }
    if (rows_ == 0 || cols_ == 0) return;
    if (data_ == nullptr) {
      throw std::invalid_argument("MatrixView: null data for a " + std::to_string(rows_) + " x " +
                                  std::to_string(cols_) + " view");
    }
    // The last element is at (rows - 1) * stride + cols - 1; that must fit in std::size_t and in
    // the address space counted in elements.
    constexpr std::size_t max_elems = std::numeric_limits<std::size_t>::max() / sizeof(T);
    const std::size_t r1 = rows_ - 1;
    if ((stride_ != 0 && r1 > max_elems / stride_) || cols_ > max_elems - r1 * stride_) {
      throw std::invalid_argument("MatrixView: " + std::to_string(rows_) + " rows of stride " +
                                  std::to_string(stride_) + " and " + std::to_string(cols_) +
                                  " columns overflow the address space");
    }
  }

  T* data_ = nullptr;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::size_t stride_ = 0;
};

}  // namespace posemb
