#include "posemb/layer.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/overlap.hpp"
#include "embedding_kernels.hpp"
#include "posemb/learned_positional_embedding.hpp"

namespace posemb {
namespace {

void check_activation(const char* op, MatrixView<const float> x, std::size_t batch,
                      std::size_t seq_len, std::size_t embed_dim) {
  if (batch != 0 && seq_len > std::numeric_limits<std::uint32_t>::max() / batch) {
    throw std::invalid_argument(std::string(op) + ": batch (" + std::to_string(batch) + ", " +
                                std::to_string(seq_len) + ") has more than 2^32 - 1 tokens");
  }
  if (x.rows() != batch * seq_len || x.cols() != embed_dim) {
    throw std::invalid_argument(std::string(op) + ": activation has shape (" +
                                std::to_string(x.rows()) + ", " + std::to_string(x.cols()) +
                                "), expected (B*T, C) = (" + std::to_string(batch * seq_len) +
                                ", " + std::to_string(embed_dim) + ")");
  }
}

}  // namespace

LearnedPositionalEmbedding::LearnedPositionalEmbedding(std::size_t max_seq_len,
                                                       std::size_t embed_dim,
                                                       const Initializer& init) {
  if (max_seq_len == 0 || embed_dim == 0) {
    throw std::invalid_argument("LearnedPositionalEmbedding: max_seq_len (" +
                                std::to_string(max_seq_len) + ") and embed_dim (" +
                                std::to_string(embed_dim) + ") must both be at least 1");
  }
  Matrix<float> table(max_seq_len, embed_dim);
  initialize_table(table.view(), init);
  table_ = std::move(table);
  grad_ = Matrix<float>(max_seq_len, embed_dim);
  trained_.assign(max_seq_len, 0);
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(Matrix<float> table) {
  if (table.rows() == 0 || table.cols() == 0) {
    throw std::invalid_argument("LearnedPositionalEmbedding: the table is " +
                                std::to_string(table.rows()) + " x " +
                                std::to_string(table.cols()) +
                                "; it needs at least one row and "
                                "one column");
  }
  for (std::size_t r = 0; r < table.rows(); ++r) {
    for (std::size_t c = 0; c < table.cols(); ++c) {
      if (!std::isfinite(table(r, c))) {
        throw std::invalid_argument("LearnedPositionalEmbedding: the table holds " +
                                    std::to_string(table(r, c)) + " at row " + std::to_string(r) +
                                    ", column " + std::to_string(c) +
                                    "; a position table must be finite");
      }
    }
  }
  grad_ = Matrix<float>(table.rows(), table.cols());
  trained_.assign(table.rows(), 0);
  table_ = std::move(table);
}

MatrixView<const float> LearnedPositionalEmbedding::forward(std::size_t seq_len,
                                                            std::size_t start) const& {
  return learned_positional_embedding(seq_len, table_, start);
}

void LearnedPositionalEmbedding::forward_add(MatrixView<float> x, std::size_t batch,
                                             std::size_t seq_len,
                                             const PositionSource& positions) const {
  constexpr const char* op = "LearnedPositionalEmbedding::forward_add";
  const detail::KernelPositions pos(positions, batch, seq_len, max_seq_len(), op);
  check_activation(op, x, batch, seq_len, embed_dim());
  detail::check_no_overlap(op, "x", x, "the layer's table", table_.cview());
  detail::embed_rows_forward(x, {}, batch, seq_len, {}, detail::table_ref(table_), pos.view());
}

void LearnedPositionalEmbedding::backward_add(MatrixView<const float> dx, std::size_t batch,
                                              std::size_t seq_len,
                                              const PositionSource& positions) {
  constexpr const char* op = "LearnedPositionalEmbedding::backward_add";
  const detail::KernelPositions pos(positions, batch, seq_len, max_seq_len(), op);
  check_activation(op, dx, batch, seq_len, embed_dim());
  detail::check_no_overlap(op, "the layer's gradient", grad_.cview(), "dx", dx);
  detail::embed_rows_backward({}, grad_.view(), dx, {}, batch, seq_len, pos.view());
}

bool LearnedPositionalEmbedding::grad_row_nonzero(std::size_t r) const noexcept {
  for (const float g : grad_.row(r)) {
    if (g != 0.0f) return true;
  }
  return false;
}

void LearnedPositionalEmbedding::zero_grad() {
  for (std::size_t r = 0; r < trained_.size(); ++r) {
    if (trained_[r] == 0 && grad_row_nonzero(r)) trained_[r] = 1;
  }
  for (float& g : grad_.flat()) g = 0.0f;
}

std::vector<std::size_t> LearnedPositionalEmbedding::untrained_rows() const {
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < trained_.size(); ++r) {
    if (!row_trained(r)) rows.push_back(r);
  }
  return rows;
}

bool LearnedPositionalEmbedding::row_trained(std::size_t r) const {
  if (r >= trained_.size()) {
    throw std::out_of_range("LearnedPositionalEmbedding::row_trained: row " + std::to_string(r) +
                            " is outside the table of " + std::to_string(trained_.size()) +
                            " rows");
  }
  return trained_[r] != 0 || grad_row_nonzero(r);
}

}  // namespace posemb
