// Internal: the embedding kernels behind embed_forward / embed_backward and the layer. They
// assume validated arguments (checked with assert only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb::detail {

// out[n, :] = (wte ? wte[tokens[n], :] : out[n, :]) + (pos[n] >= 0 ? wpe[pos[n], :] : 0),
// n = b*T + t. With wte empty (position-only forward) x is added into in place.
void gather_add_rows(MatrixView<float> out,             // (B*T, C)
                     MatrixView<const TokenId> tokens,  // (B, T), or empty for position-only
                     MatrixView<const float> wte,       // (V, C), or empty for position-only
                     const Matrix<std::int64_t>& pos,   // (B, T), -1: no position
                     MatrixView<const float> wpe);      // (max_seq_len, C)

// dst[target[n], :] += src[n, :] for every n with target[n] >= 0, each row summing its
// contributions in ascending n; rows are shared out among threads (deterministic).
// target is given either as int64 (positions) or int32 (token ids).
void scatter_add_rows(MatrixView<float> dst,         // (R, C), added into
                      MatrixView<const float> src,   // (N, C)
                      const std::int64_t* target64,  // N entries, or null
                      const TokenId* target32,       // N entries (with stride), or null
                      std::size_t seq_len, std::size_t token_stride);

// The rows of `pos` that are >= 0, marked in `seen` (size max_seq_len).
void mark_rows(const Matrix<std::int64_t>& pos, std::uint8_t* seen);

}  // namespace posemb::detail
