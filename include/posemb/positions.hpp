// posemb/positions.hpp: where each token's position comes from, validated once per call.
//
//   // tokens (B=2, T=4); row 0 left-padded:   mask = {0 0 1 1 | 1 1 1 1}
//   auto src = posemb::PositionSource::padding_mask(mask);
//   auto pos = posemb::resolve_positions(src, 2, 4, 1024);  // {-1 -1 0 1 | 0 1 2 3}
//
//   PositionSource::contiguous(start)      position = start + t (cached decoding, a shard)
//   PositionSource::explicit_ids(ids)      position = ids(b, t); ids (B, T), int32 or int64
//   PositionSource::padding_mask(mask)     mask (B, T), uint8, bool, int32 or int64 (HF's
//                                          attention_mask): 1 real, 0 pad. A real token's
//                                          position is the number of real tokens before it in
//                                          its row; pads get no position (-1): no embedding,
//                                          no gradient, no rotation
//   PositionSource::packed(tokens, sep)    tokens (B, T): positions count from 0 and restart at
//                                          0 on the token after each `sep` token (the separator
//                                          ends its document and takes that document's next
//                                          position)
//
// The matrices given to explicit_ids, padding_mask and packed are referenced, not copied: keep
// them alive while the PositionSource is used. A named Matrix or any view may be passed; a
// temporary Matrix (a function's return value) does not compile, since the source would
// dangle as soon as the statement ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

using TokenId = std::int32_t;

// Where each token's position comes from. A value type; cheap to copy.
class PositionSource {
 public:
  enum class Kind { contiguous, explicit_ids, padding_mask, packed };
  // The element types an explicit-id matrix and a padding mask may have.
  using Ids = std::variant<MatrixView<const std::int32_t>, MatrixView<const std::int64_t>>;
  using Mask = std::variant<MatrixView<const std::uint8_t>, MatrixView<const bool>,
                            MatrixView<const std::int32_t>, MatrixView<const std::int64_t>>;

  // position = start + t.
  static PositionSource contiguous(std::size_t start = 0);
  // position = ids(b, t); ids (B, T), referenced not copied.
  static PositionSource explicit_ids(MatrixView<const std::int32_t> ids);
  static PositionSource explicit_ids(MatrixView<const std::int64_t> ids);
  // mask (B, T), 1 = real, 0 = pad; left or right padding (any pattern); referenced.
  static PositionSource padding_mask(MatrixView<const std::uint8_t> mask);
  static PositionSource padding_mask(MatrixView<const bool> mask);
  static PositionSource padding_mask(MatrixView<const std::int32_t> mask);
  static PositionSource padding_mask(MatrixView<const std::int64_t> mask);
  // tokens (B, T), referenced: positions restart at 0 after each separator token.
  static PositionSource packed(MatrixView<const TokenId> tokens, TokenId separator);

  // A temporary matrix would be freed at the end of the statement, leaving the source dangling.
  template <class T>
  static PositionSource explicit_ids(Matrix<T>&& ids) = delete;
  template <class T>
  static PositionSource explicit_ids(const Matrix<T>&& ids) = delete;
  template <class T>
  static PositionSource padding_mask(Matrix<T>&& mask) = delete;
  template <class T>
  static PositionSource padding_mask(const Matrix<T>&& mask) = delete;
  template <class T>
  static PositionSource packed(Matrix<T>&& tokens, TokenId separator) = delete;
  template <class T>
  static PositionSource packed(const Matrix<T>&& tokens, TokenId separator) = delete;

  Kind kind() const noexcept { return kind_; }
  std::size_t start() const noexcept { return start_; }
  const Ids& ids() const& noexcept { return ids_; }
  const Mask& mask() const& noexcept { return mask_; }
  // By value from a temporary source (a reference into it would dangle).
  Ids ids() const&& noexcept { return ids_; }
  Mask mask() const&& noexcept { return mask_; }
  MatrixView<const TokenId> tokens() const noexcept { return tokens_; }
  TokenId separator() const noexcept { return separator_; }

 private:
  PositionSource() = default;
  Kind kind_ = Kind::contiguous;
  std::size_t start_ = 0;
  Ids ids_;
  Mask mask_;
  MatrixView<const TokenId> tokens_;
  TokenId separator_ = 0;
};

// The position of every token of a (batch, seq_len) batch, (B, T), with -1 for "no position"
// (pads). Validates every position once: throws SequenceTooLong (its detail names "batch row
// b, token t") for a position >= max_seq_len, std::out_of_range for a negative explicit id,
// std::invalid_argument for a matrix whose shape is not (batch, seq_len), an empty batch, or a
// mask value other than 0 and 1. `operation` names the caller in error messages (nullptr: the
// default name).
Matrix<std::int64_t> resolve_positions(const PositionSource& src, std::size_t batch,
                                       std::size_t seq_len, std::size_t max_seq_len,
                                       const char* operation = "resolve_positions");

// The same for the batch shape (B, T) of tokens (only their shape is read).
Matrix<std::int64_t> resolve_positions(const PositionSource& src,
                                       MatrixView<const TokenId> tokens,  // (B, T)
                                       std::size_t max_seq_len);

}  // namespace posemb
