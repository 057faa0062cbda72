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

// One destination of scatter_add_rows: dst[target[n], :] += src[n, :] for every n with
// target[n] >= 0. target is given either as int64 (positions, B*T entries) or int32 (token ids,
// (B, T) with a row stride).
struct ScatterTarget {
  MatrixView<float> dst;                   // (R, C), added into
  const std::int64_t* target64 = nullptr;  // B*T entries, or null
  const TokenId* target32 = nullptr;       // (B, T) with token_stride, or null
  std::size_t seq_len = 1;
  std::size_t token_stride = 0;
};

// target.dst[target[n], :] += src[n, :] (N, C), in one parallel loop over the touched rows.
// Each row sums its contributions in ascending n, whatever the thread count (deterministic,
// and the same rounding as the serial reference).
void scatter_add_rows(const ScatterTarget& target, MatrixView<const float> src);

}  // namespace posemb::detail
