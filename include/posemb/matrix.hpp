// posemb/matrix.hpp: an owning, row-major, zero-initialized matrix.
//
//   posemb::Matrix<float> table(1024, 768);              // (max_seq_len, embed_dim), all zeros
//   table(0, 0) = 0.5f;
//   posemb::MatrixView<float> v = table.view();          // mutable, non-owning
//   posemb::MatrixView<const float> ro = table;          // read-only, implicit
//   posemb::MatrixView<float> rw = table;                // mutable, implicit from an lvalue
//   posemb::Matrix<float> copy(ro);                      // a deep copy of any view
//
// Storage is contiguous (row_stride() == cols()) and 64-byte aligned, so rows can be streamed
// with vector loads. Every allocation is checked against the memory budget (posemb/memory.hpp)
// first.
//
// A Matrix passes wherever a view is expected: to a MatrixView<const T> always (a temporary
// lives until the end of the call it is passed to), to a mutable MatrixView<T> (an output) when
// it is a named matrix. A mutable view of a temporary matrix would dangle, so that conversion
// does not compile; nor do view(), cview(), row(), flat() and data() of a temporary (const or
// not). An element of a temporary, `make()(0, 0)` or `make().at(0, 0)`, is returned by value.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "posemb/matrix_view.hpp"
#include "posemb/memory.hpp"

namespace posemb {

template <class T>
class Matrix {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "Matrix<T> holds trivially copyable, non-const elements");

 public:
  using value_type = T;
  static constexpr std::size_t alignment = 64;

  // An empty 0 x 0 matrix.
  Matrix() noexcept = default;

  // rows x cols, every element zero. Throws std::length_error when rows * cols * sizeof(T)
  // overflows std::size_t, and std::bad_alloc when the memory is not available.
  Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols) {
    const std::size_t n = checked_count(rows, cols);
    data_.reset(allocate(n));
    if (n != 0) std::memset(static_cast<void*>(data_.get()), 0, n * sizeof(T));
  }

  // A deep copy of any view (its stride is not kept: the copy is contiguous).
  explicit Matrix(MatrixView<const T> src) : Matrix(uninitialized_tag{}, src.rows(), src.cols()) {
    if (cols_ == 0) return;  // no elements, however many rows
    for (std::size_t r = 0; r < rows_; ++r) {
      std::memcpy(static_cast<void*>(data_.get() + r * cols_), src.row(r).data(),
                  cols_ * sizeof(T));
    }
  }

  Matrix(const Matrix& other) : Matrix(MatrixView<const T>(other)) {}
  Matrix& operator=(const Matrix& other) {
    if (this != &other) *this = Matrix(other);
    return *this;
  }
  Matrix(Matrix&& other) noexcept
      : data_(std::move(other.data_)),
        rows_(std::exchange(other.rows_, 0)),
        cols_(std::exchange(other.cols_, 0)) {}
  Matrix& operator=(Matrix&& other) noexcept {
    data_ = std::move(other.data_);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    return *this;
  }
  ~Matrix() = default;

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t row_stride() const noexcept { return cols_; }
  std::size_t size() const noexcept { return rows_ * cols_; }
  bool empty() const noexcept { return size() == 0; }
  T* data() & noexcept { return data_.get(); }
  const T* data() const& noexcept { return data_.get(); }

  // Element (r, c); unchecked in release builds (asserted in debug builds). Of a temporary
  // matrix, the element is returned by value (a reference would dangle).
  T& operator()(std::size_t r, std::size_t c) & noexcept {
    assert(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }
  const T& operator()(std::size_t r, std::size_t c) const& noexcept {
    assert(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }
  T operator()(std::size_t r, std::size_t c) const&& noexcept {
    assert(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }
  // Element (r, c), throwing std::out_of_range outside the matrix; by value for a temporary.
  T& at(std::size_t r, std::size_t c) & { return view().at(r, c); }
  const T& at(std::size_t r, std::size_t c) const& { return cview().at(r, c); }
  T at(std::size_t r, std::size_t c) const&& { return cview().at(r, c); }

  // Row r as cols() contiguous elements; unchecked in release builds.
  std::span<T> row(std::size_t r) & noexcept {
    assert(r < rows_);
    return {data_.get() + r * cols_, cols_};
  }
  std::span<const T> row(std::size_t r) const& noexcept {
    assert(r < rows_);
    return {data_.get() + r * cols_, cols_};
  }

  // All elements, row after row.
  std::span<T> flat() & noexcept { return {data_.get(), size()}; }
  std::span<const T> flat() const& noexcept { return {data_.get(), size()}; }

  // A mutable view of the whole matrix (valid while this matrix lives and is not moved from).
  MatrixView<T> view() & noexcept { return MatrixView<T>(data_.get(), rows_, cols_); }
  MatrixView<const T> view() const& noexcept { return cview(); }
  MatrixView<const T> cview() const& noexcept {
    return MatrixView<const T>(data_.get(), rows_, cols_);
  }
  // Spans and views of a temporary matrix (const or not) would dangle at the end of the
  // statement: `make().view()`, `make().cview()`, `make().row(0)`, `make().flat()`,
  // `make().data()` do not compile.
  void data() && = delete;
  void data() const&& = delete;
  void row(std::size_t r) && = delete;
  void row(std::size_t r) const&& = delete;
  void flat() && = delete;
  void flat() const&& = delete;
  void view() && = delete;
  void view() const&& = delete;
  void cview() const&& = delete;
  // Matrix<T> converts implicitly to a read-only view, and (named matrices only) to a mutable
  // one, so a Matrix can be passed as an output.
  operator MatrixView<const T>() const noexcept { return cview(); }  // NOLINT
  operator MatrixView<T>() & noexcept { return view(); }             // NOLINT
  operator MatrixView<T>() && = delete;

 private:
  struct uninitialized_tag {};
  Matrix(uninitialized_tag, std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols) {
    data_.reset(allocate(checked_count(rows, cols)));
  }

  static std::size_t checked_count(std::size_t rows, std::size_t cols) {
    constexpr std::size_t max_elems = std::numeric_limits<std::size_t>::max() / sizeof(T);
    if (cols != 0 && rows > max_elems / cols) {
      throw std::length_error("Matrix: " + std::to_string(rows) + " x " + std::to_string(cols) +
                              " elements of " + std::to_string(sizeof(T)) +
                              " bytes overflow std::size_t");
    }
    return rows * cols;
  }

  struct aligned_delete {
    void operator()(T* p) const noexcept { ::operator delete[](p, std::align_val_t{alignment}); }
  };

  static T* allocate(std::size_t n) {
    if (n == 0) return nullptr;
    check_allocation("Matrix", n * sizeof(T));
    T* p = static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t{alignment}));
    if (n * sizeof(T) >= (std::size_t{4} << 20)) advise_huge_pages(p, n * sizeof(T));
    return p;
  }

  std::unique_ptr<T[], aligned_delete> data_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
};

// Two matrices are equal when they have the same shape and the same elements (compared with
// operator==, so NaN != NaN; compare bytes for bit-exactness).
template <class T>
bool operator==(const Matrix<T>& a, const Matrix<T>& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::equal(a.flat().begin(), a.flat().end(), b.flat().begin());
}

}  // namespace posemb
