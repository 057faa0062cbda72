// posemb/positions.hpp: where each token's position comes from, validated once per call.
//
//   // tokens (B=2, T=4); row 0 left-padded:   mask = {0 0 1 1 | 1 1 1 1}
//   auto src = posemb::PositionSource::padding_mask(mask);
//   auto pos = posemb::resolve_positions(src, tokens, 1024);  // {-1 -1 0 1 | 0 1 2 3}
//
//   PositionSource::contiguous(start)   position = start + t (cached decoding, a shard)
//   PositionSource::explicit_ids(ids)   position = ids(b, t); ids is (B, T), not copied
//   PositionSource::padding_mask(mask)  mask (B, T): 1 real, 0 pad. A real token's position is
//                                       the number of real tokens before it in its row; pads
//                                       get no position (-1): no embedding, no gradient
//   PositionSource::packed(sep)         positions count from 0 and restart at 0 on the token
//                                       after each `sep` token (the separator ends its
//                                       document and takes that document's next position)
//
// The views given to explicit_ids and padding_mask are referenced, not copied: keep them alive
// while the PositionSource is used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

using TokenId = std::int32_t;

// Where each token's position comes from. A value type; cheap to copy.
class PositionSource {
 public:
  enum class Kind { contiguous, explicit_ids, padding_mask, packed };

  // position = start + t.
  static PositionSource contiguous(std::size_t start = 0);
  // position = ids(b, t); ids (B, T), referenced not copied.
  static PositionSource explicit_ids(MatrixView<const std::int64_t> ids);
  // mask (B, T), 1 = real, 0 = pad; left or right padding (any pattern); referenced.
  static PositionSource padding_mask(MatrixView<const std::uint8_t> mask);
  // Positions restart at 0 after each separator token.
  static PositionSource packed(TokenId separator);

  Kind kind() const noexcept { return kind_; }
  std::size_t start() const noexcept { return start_; }
  MatrixView<const std::int64_t> ids() const noexcept { return ids_; }
  MatrixView<const std::uint8_t> mask() const noexcept { return mask_; }
  TokenId separator() const noexcept { return separator_; }
  // True when the source reads the token ids (packed).
  bool needs_tokens() const noexcept { return kind_ == Kind::packed; }

 private:
  PositionSource() = default;
  Kind kind_ = Kind::contiguous;
  std::size_t start_ = 0;
  MatrixView<const std::int64_t> ids_;
  MatrixView<const std::uint8_t> mask_;
  TokenId separator_ = 0;
};

// The position of every token, (B, T), with -1 for "no position" (pads). Validates every
// position once: throws SequenceTooLong (its detail names "batch row b, token t") for a
// position >= max_seq_len, std::out_of_range for a negative explicit id, std::invalid_argument
// for shape mismatches, an empty batch or a mask value other than 0 and 1.
Matrix<std::int64_t> resolve_positions(const PositionSource& src,
                                       MatrixView<const TokenId> tokens,  // (B, T)
                                       std::size_t max_seq_len);

// The same for a batch given by its shape: tokens are read only by PositionSource::packed
// (pass an empty view otherwise; when given, tokens must be (batch, seq_len)).
// `operation` names the caller in error messages.
Matrix<std::int64_t> resolve_positions(const PositionSource& src, std::size_t batch,
                                       std::size_t seq_len, std::size_t max_seq_len,
                                       MatrixView<const TokenId> tokens = {},  // (B, T) or empty
                                       const char* operation = "resolve_positions");

}  // namespace posemb
