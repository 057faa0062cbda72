// posemb/learned_positional_embedding.hpp: the core operation, a zero-copy lookup of
// consecutive rows of a learned position table.
//
//   posemb::Matrix<float> table(1024, 768);                        // (max_seq_len, embed_dim)
//   auto pe = posemb::learned_positional_embedding(10, table);     // rows [0, 10): (10, 768)
//   auto next = posemb::learned_positional_embedding(1, table, 10);  // row 10 (cached decoding)
//   posemb::learned_positional_embedding(1025, table);             // throws SequenceTooLong
//
// The result is a read-only view into the table itself: O(1), no element is read or copied,
// and result.data() == table.data() + start * table.row_stride().
//
// Aliasing rule: the view shows the table as it is when the view is read. An optimizer step
// (or any other write to the table) after the call is visible through the view, and the view
// dangles once the table's storage is freed. Take a copy with posemb::Matrix<T>(view) to keep
// the values of the moment.
#pragma once

#include <cstddef>

#include "posemb/errors.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// Rows [start, start + seq_len) of position_table, shape (seq_len, embed_dim), as a read-only
// view with the table's row stride. seq_len == 0 is valid and gives an empty (0, embed_dim)
// view. Throws SequenceTooLong when start + seq_len > position_table.rows() (compared without
// overflow for every value of std::size_t); nothing is clamped or wrapped.
template <class T>
[[nodiscard]] MatrixView<const T> learned_positional_embedding(
    std::size_t seq_len,
    MatrixView<T> position_table,  // (max_seq_len, C)
    std::size_t start = 0) {
  const std::size_t max_seq_len = position_table.rows();
  if (start > max_seq_len || seq_len > max_seq_len - start) {
    throw SequenceTooLong("learned_positional_embedding", seq_len, start, max_seq_len);
  }
  return MatrixView<const T>(position_table).subrows(start, seq_len);
}

template <class T>
[[nodiscard]] MatrixView<const T> learned_positional_embedding(
    std::size_t seq_len,
    const Matrix<T>& position_table,  // (max_seq_len, C)
    std::size_t start = 0) {
  return learned_positional_embedding(seq_len, position_table.view(), start);
}

// A view into a temporary table (const or not) would dangle as soon as the statement ends.
template <class T>
MatrixView<const T> learned_positional_embedding(std::size_t seq_len, Matrix<T>&& position_table,
                                                 std::size_t start = 0) = delete;
template <class T>
MatrixView<const T> learned_positional_embedding(std::size_t seq_len,
                                                 const Matrix<T>&& position_table,
                                                 std::size_t start = 0) = delete;

}  // namespace posemb
