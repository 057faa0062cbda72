#include "posemb/layer.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

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

MatrixView<const float> LearnedPositionalEmbedding::forward(std::size_t seq_len,
                                                            std::size_t start) const {
  return learned_positional_embedding(seq_len, table_, start);
}

void LearnedPositionalEmbedding::forward_add(MatrixView<float> x, std::size_t batch,
                                             std::size_t seq_len, const PositionSource& positions,
                                             MatrixView<const TokenId> tokens) const {
  constexpr const char* op = "LearnedPositionalEmbedding::forward_add";
  const Matrix<std::int64_t> pos =
      resolve_positions(positions, batch, seq_len, max_seq_len(), tokens, op);
  check_activation(op, x, batch, seq_len, embed_dim());
  detail::gather_add_rows(x, {}, {}, pos, table_);
}

void LearnedPositionalEmbedding::backward_add(MatrixView<const float> dx, std::size_t batch,
                                              std::size_t seq_len, const PositionSource& positions,
                                              MatrixView<const TokenId> tokens) {
  constexpr const char* op = "LearnedPositionalEmbedding::backward_add";
  const Matrix<std::int64_t> pos =
      resolve_positions(positions, batch, seq_len, max_seq_len(), tokens, op);
  check_activation(op, dx, batch, seq_len, embed_dim());
  detail::scatter_add_rows({grad_.view(), pos.data(), nullptr, seq_len, 0}, dx);
  detail::mark_rows(pos, trained_.data());
}

void LearnedPositionalEmbedding::zero_grad() {
  for (float& g : grad_.flat()) g = 0.0f;
}

std::vector<std::size_t> LearnedPositionalEmbedding::untrained_rows() const {
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < trained_.size(); ++r) {
    if (trained_[r] == 0) rows.push_back(r);
  }
  return rows;
}

bool LearnedPositionalEmbedding::row_trained(std::size_t r) const {
  if (r >= trained_.size()) {
    throw std::out_of_range("LearnedPositionalEmbedding::row_trained: row " + std::to_string(r) +
                            " is outside the table of " + std::to_string(trained_.size()) +
                            " rows");
  }
  return trained_[r] != 0;
}

}  // namespace posemb
