// posemb/layer.hpp: a trainable learned positional embedding, owning its table and gradient.
//
//   posemb::LearnedPositionalEmbedding pe(1024, 768);            // N(0, 0.02), seed 0
//   auto rows = pe.forward(128);                                  // (128, 768), zero-copy view
//   pe.forward_add(x, B, T, posemb::PositionSource::contiguous()); // x (B*T, 768) += rows
//   pe.backward_add(dx, B, T, posemb::PositionSource::contiguous()); // grad() += ...
//   posemb::AdamW opt;  posemb::ParamRef p{pe.table().view(), pe.grad()};
//   opt.step({&p, 1});  pe.zero_grad();
//   pe.untrained_rows();                                          // rows 128..1023
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "posemb/initializers.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb {

class LearnedPositionalEmbedding {
 public:
  // A (max_seq_len, embed_dim) table filled by init, a zero gradient of the same shape.
  // Throws std::invalid_argument when either dimension is 0.
  LearnedPositionalEmbedding(std::size_t max_seq_len, std::size_t embed_dim,
                             const Initializer& init = {});

  std::size_t max_seq_len() const noexcept { return table_.rows(); }
  std::size_t embed_dim() const noexcept { return table_.cols(); }
  Matrix<float>& table() noexcept { return table_; }  // (max_seq_len, C)
  const Matrix<float>& table() const noexcept { return table_; }
  Matrix<float>& grad() noexcept { return grad_; }  // (max_seq_len, C)
  const Matrix<float>& grad() const noexcept { return grad_; }

  // Rows [start, start + seq_len) of the table: the core operation, O(1), a view into the
  // table. Throws SequenceTooLong past the table.
  MatrixView<const float> forward(std::size_t seq_len, std::size_t start = 0) const;

  // x[b*T + t, :] += table[pos[b,t], :] (see add_positions_forward).
  void forward_add(MatrixView<float> x,  // (B*T, C), added into
                   std::size_t batch, std::size_t seq_len, const PositionSource& positions,
                   MatrixView<const TokenId> tokens = {}) const;

  // grad[pos[b,t], :] += dx[b*T + t, :] (ADDS into grad(); see add_positions_backward) and
  // records the rows that received a gradient.
  void backward_add(MatrixView<const float> dx,  // (B*T, C)
                    std::size_t batch, std::size_t seq_len, const PositionSource& positions,
                    MatrixView<const TokenId> tokens = {});

  // Sets grad() to zero (the trained-row record is kept).
  void zero_grad();
  // Rows that never received a gradient, ascending.
  std::vector<std::size_t> untrained_rows() const;
  // True when row r has received a gradient; throws std::out_of_range for r >= max_seq_len.
  bool row_trained(std::size_t r) const;

 private:
  Matrix<float> table_;
  Matrix<float> grad_;
  std::vector<std::uint8_t> trained_;
};

}  // namespace posemb
