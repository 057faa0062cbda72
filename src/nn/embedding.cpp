#include "posemb/embedding.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/overlap.hpp"
#include "embedding_kernels.hpp"

namespace posemb {
namespace {

std::string shape(std::size_t r, std::size_t c) {
  std::string s = std::to_string(r);
  s += ", ";
  s += std::to_string(c);
  return '(' + s + ')';
}

[[noreturn]] void bad_shape(const char* op, const char* what, std::size_t r, std::size_t c,
                            std::size_t er, std::size_t ec) {
  throw std::invalid_argument(std::string(op) + ": " + what + " has shape " + shape(r, c) +
                              ", expected " + shape(er, ec));
}

void expect_shape(const char* op, const char* what, std::size_t r, std::size_t c, std::size_t er,
                  std::size_t ec) {
  if (r != er || c != ec) bad_shape(op, what, r, c, er, ec);
}

// The batch (B, T): non-empty, B*T rows addressable by the kernels' 32-bit indices.
void check_batch(const char* op, std::size_t batch, std::size_t seq_len, std::size_t embed_dim) {
  if (batch == 0 || seq_len == 0) {
    throw std::invalid_argument(std::string(op) + ": empty batch " + shape(batch, seq_len) +
                                " (B, T); B and T must both be at least 1");
  }
  if (embed_dim == 0) {
    throw std::invalid_argument(std::string(op) + ": embedding dimension C is 0");
  }
  if (seq_len > std::numeric_limits<std::uint32_t>::max() / batch) {
    throw std::invalid_argument(std::string(op) + ": batch " + shape(batch, seq_len) +
                                " has more than 2^32 - 1 tokens");
  }
}

// The token ids the kernels read: a copy of `tokens`, every id of it checked to be in
// [0, vocab). The kernels read only the copy, so ids that change in the caller's memory while
// they run (another thread, a Python caller without the GIL) cannot take them outside the table:
// what is checked is what is read.
Matrix<TokenId> checked_token_ids(const char* op, MatrixView<const TokenId> tokens,
                                  std::size_t vocab) {
  Matrix<TokenId> ids(tokens.rows(), tokens.cols());
  for (std::size_t b = 0; b < tokens.rows(); ++b) {
    std::copy(tokens.row(b).begin(), tokens.row(b).end(), ids.row(b).begin());
  }
  // Each row gets one pass without branches first (it vectorizes). Read as unsigned, a negative
  // id is at least 2^31, so one comparison with min(vocab, 2^31) finds every id outside
  // [0, vocab).
  const auto limit = static_cast<std::uint32_t>(std::min<std::size_t>(vocab, std::size_t{1} << 31));
  for (std::size_t b = 0; b < ids.rows(); ++b) {
    unsigned bad = 0;
    for (const TokenId id : ids.row(b)) bad |= static_cast<std::uint32_t>(id) >= limit ? 1u : 0u;
    if (bad == 0) continue;
    for (std::size_t t = 0; t < ids.cols(); ++t) {
      const TokenId id = ids(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= vocab) {
        throw std::out_of_range(std::string(op) + ": token id " + std::to_string(id) +
                                " at batch row " + std::to_string(b) + ", token " +
                                std::to_string(t) + " is outside the vocabulary of " +
                                std::to_string(vocab) + " rows (valid ids: 0 to " +
                                std::to_string(vocab == 0 ? 0 : vocab - 1) + ")");
      }
    }
  }
  return ids;
}

template <class E>
void embed_forward_impl(MatrixView<float> out, MatrixView<const TokenId> tokens,
                        const PositionSource& positions, MatrixView<const E> wte,
                        MatrixView<const E> wpe) {
  constexpr const char* op = "embed_forward";
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = wte.cols();
  check_batch(op, B, T, C);
  expect_shape(op, "wpe", wpe.rows(), wpe.cols(), wpe.rows(), C);
  expect_shape(op, "out", out.rows(), out.cols(), B * T, C);
  detail::check_no_overlap(op, "out", out, "wte", wte);
  detail::check_no_overlap(op, "out", out, "wpe", wpe);
  const Matrix<TokenId> ids = checked_token_ids(op, tokens, wte.rows());
  const detail::KernelPositions pos(positions, B, T, wpe.rows(), op);
  detail::embed_rows_forward(out, ids.cview(), B, T, detail::table_ref(wte), detail::table_ref(wpe),
                             pos.view());
}

template <class E>
void embed_forward_tokens_impl(MatrixView<float> out, MatrixView<const TokenId> tokens,
                               MatrixView<const E> wte) {
  constexpr const char* op = "embed_forward";
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = wte.cols();
  check_batch(op, B, T, C);
  expect_shape(op, "out", out.rows(), out.cols(), B * T, C);
  detail::check_no_overlap(op, "out", out, "wte", wte);
  const Matrix<TokenId> ids = checked_token_ids(op, tokens, wte.rows());
  detail::embed_rows_forward(out, ids.cview(), B, T, detail::table_ref(wte), {}, {});  // no pos
}

template <class E>
void add_positions_forward_impl(MatrixView<float> x, std::size_t batch, std::size_t seq_len,
                                const PositionSource& positions, MatrixView<const E> wpe) {
  constexpr const char* op = "add_positions_forward";
  check_batch(op, batch, seq_len, wpe.cols());
  expect_shape(op, "x", x.rows(), x.cols(), batch * seq_len, wpe.cols());
  detail::check_no_overlap(op, "x", x, "wpe", wpe);
  const detail::KernelPositions pos(positions, batch, seq_len, wpe.rows(), op);
  detail::embed_rows_forward(x, {}, batch, seq_len, {}, detail::table_ref(wpe), pos.view());
}

}  // namespace

void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   const PositionSource& positions, MatrixView<const float> wte,
                   MatrixView<const float> wpe) {
  embed_forward_impl(out, tokens, positions, wte, wpe);
}
void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   const PositionSource& positions, MatrixView<const bfloat16> wte,
                   MatrixView<const bfloat16> wpe) {
  embed_forward_impl(out, tokens, positions, wte, wpe);
}
void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   const PositionSource& positions, MatrixView<const float16> wte,
                   MatrixView<const float16> wpe) {
  embed_forward_impl(out, tokens, positions, wte, wpe);
}

void embed_backward(MatrixView<float> dwte, MatrixView<float> dwpe, MatrixView<const float> dout,
                    MatrixView<const TokenId> tokens, const PositionSource& positions) {
  constexpr const char* op = "embed_backward";
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = dwte.cols();
  check_batch(op, B, T, C);
  expect_shape(op, "dwpe", dwpe.rows(), dwpe.cols(), dwpe.rows(), C);
  expect_shape(op, "dout", dout.rows(), dout.cols(), B * T, C);
  detail::check_no_overlap(op, "dwte", dwte, "dwpe", dwpe);
  detail::check_no_overlap(op, "dwte", dwte, "dout", dout);
  detail::check_no_overlap(op, "dwpe", dwpe, "dout", dout);
  const Matrix<TokenId> ids = checked_token_ids(op, tokens, dwte.rows());
  const detail::KernelPositions pos(positions, B, T, dwpe.rows(), op);
  detail::embed_rows_backward(dwte, dwpe, dout, ids.cview(), B, T, pos.view());
}

void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   MatrixView<const float> wte) {
  embed_forward_tokens_impl(out, tokens, wte);
}
void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   MatrixView<const bfloat16> wte) {
  embed_forward_tokens_impl(out, tokens, wte);
}
void embed_forward(MatrixView<float> out, MatrixView<const TokenId> tokens,
                   MatrixView<const float16> wte) {
  embed_forward_tokens_impl(out, tokens, wte);
}

void embed_backward(MatrixView<float> dwte, MatrixView<const float> dout,
                    MatrixView<const TokenId> tokens) {
  constexpr const char* op = "embed_backward";
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = dwte.cols();
  check_batch(op, B, T, C);
  expect_shape(op, "dout", dout.rows(), dout.cols(), B * T, C);
  detail::check_no_overlap(op, "dwte", dwte, "dout", dout);
  const Matrix<TokenId> ids = checked_token_ids(op, tokens, dwte.rows());
  detail::embed_rows_backward(dwte, {}, dout, ids.cview(), B, T, {});  // no positions
}

void add_positions_forward(MatrixView<float> x, std::size_t batch, std::size_t seq_len,
                           const PositionSource& positions, MatrixView<const float> wpe) {
  add_positions_forward_impl(x, batch, seq_len, positions, wpe);
}
void add_positions_forward(MatrixView<float> x, std::size_t batch, std::size_t seq_len,
                           const PositionSource& positions, MatrixView<const bfloat16> wpe) {
  add_positions_forward_impl(x, batch, seq_len, positions, wpe);
}
void add_positions_forward(MatrixView<float> x, std::size_t batch, std::size_t seq_len,
                           const PositionSource& positions, MatrixView<const float16> wpe) {
  add_positions_forward_impl(x, batch, seq_len, positions, wpe);
}

void add_positions_backward(MatrixView<float> dwpe, MatrixView<const float> dx, std::size_t batch,
                            std::size_t seq_len, const PositionSource& positions) {
  constexpr const char* op = "add_positions_backward";
  check_batch(op, batch, seq_len, dwpe.cols());
  expect_shape(op, "dx", dx.rows(), dx.cols(), batch * seq_len, dwpe.cols());
  detail::check_no_overlap(op, "dwpe", dwpe, "dx", dx);
  const detail::KernelPositions pos(positions, batch, seq_len, dwpe.rows(), op);
  detail::embed_rows_backward({}, dwpe, dx, {}, batch, seq_len, pos.view());
}

}  // namespace posemb
