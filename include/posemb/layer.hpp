// posemb/layer.hpp: a trainable learned positional embedding, owning its table and gradient.
//
//   posemb::LearnedPositionalEmbedding pe(1024, 768);            // N(0, 0.02), seed 0
//   auto rows = pe.forward(128);                                  // (128, 768), zero-copy view
//   pe.forward_add(x, B, T, posemb::PositionSource::contiguous()); // x (B*T, 768) += rows
//   pe.backward_add(dx, B, T, posemb::PositionSource::contiguous()); // grad() += ...
//   posemb::AdamW opt;
//   opt.step({pe.parameter()});  pe.zero_grad();
//   pe.untrained_rows();                                          // rows 128..1023
//
//   // A pretrained table (loaded from a checkpoint): the layer takes it over, without a copy.
//   posemb::LearnedPositionalEmbedding gpt2(posemb::load_position_table("gpt2.safetensors")
//                                               .values);
//
// The table, its gradient and the record of trained rows always have the same shape: the layer
// hands out views (whose values may change, as an optimizer changes them) but never the
// matrices themselves, so nothing can swap the table for one of another shape
// (`pe.table() = other` does not compile). Views of a temporary layer do not compile either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "posemb/initializers.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/optimizers.hpp"
#include "posemb/positions.hpp"

namespace posemb {

class LearnedPositionalEmbedding {
 public:
  // A (max_seq_len, embed_dim) table filled by init, a zero gradient of the same shape.
  // Throws std::invalid_argument when either dimension is 0.
  LearnedPositionalEmbedding(std::size_t max_seq_len, std::size_t embed_dim,
                             const Initializer& init = {});
  // A layer around an existing table (a pretrained one), taken over without a copy; the
  // gradient is zero and no row counts as trained. Throws std::invalid_argument when the table
  // is empty or holds a NaN or an infinity (naming the row and column).
  explicit LearnedPositionalEmbedding(Matrix<float> table);

  std::size_t max_seq_len() const noexcept { return table_.rows(); }
  std::size_t embed_dim() const noexcept { return table_.cols(); }
  MatrixView<float> table() & noexcept { return table_.view(); }  // (max_seq_len, C)
  MatrixView<const float> table() const& noexcept { return table_.cview(); }
  MatrixView<float> grad() & noexcept { return grad_.view(); }  // (max_seq_len, C)
  MatrixView<const float> grad() const& noexcept { return grad_.cview(); }
  // The table and its gradient, for an optimizer.
  ParamRef parameter() & noexcept { return {table_.view(), grad_.cview()}; }
  // A view into a temporary layer (const or not) would dangle at the end of the statement.
  void table() && = delete;
  void table() const&& = delete;
  void grad() && = delete;
  void grad() const&& = delete;
  void parameter() && = delete;
  void parameter() const&& = delete;

  // Rows [start, start + seq_len) of the table: the core operation, O(1), a view into the
  // table. Throws SequenceTooLong past the table.
  MatrixView<const float> forward(std::size_t seq_len, std::size_t start = 0) const&;
  void forward(std::size_t seq_len, std::size_t start = 0) && = delete;
  void forward(std::size_t seq_len, std::size_t start = 0) const&& = delete;

  // x[b*T + t, :] += table[pos[b,t], :] (see add_positions_forward).
  void forward_add(MatrixView<float> x,  // (B*T, C), added into
                   std::size_t batch, std::size_t seq_len, const PositionSource& positions) const;

  // grad[pos[b,t], :] += dx[b*T + t, :] (ADDS into grad(); see add_positions_backward).
  void backward_add(MatrixView<const float> dx,  // (B*T, C)
                    std::size_t batch, std::size_t seq_len, const PositionSource& positions);

  // Sets grad() to zero. The rows whose gradient was non-zero are recorded as trained first.
  void zero_grad();
  // Rows that have never received a non-zero gradient, ascending. A gradient counts however it
  // reached grad(): through backward_add, embed_backward into grad(), or a sum of micro-batch
  // gradients written there; it is seen when zero_grad() is called or at this query.
  std::vector<std::size_t> untrained_rows() const;
  // True when row r has received a non-zero gradient; throws std::out_of_range for
  // r >= max_seq_len.
  bool row_trained(std::size_t r) const;

 private:
  bool grad_row_nonzero(std::size_t r) const noexcept;
  Matrix<float> table_;
  Matrix<float> grad_;
  std::vector<std::uint8_t> trained_;
};

}  // namespace posemb
