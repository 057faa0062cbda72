// posemb/sincos_2d.hpp: the fixed 2-D sine-cosine position table of vision transformers, in the
// layout of MAE (He et al. 2021, `get_2d_sincos_pos_embed`; Hugging Face ViTMAE).
//
//   posemb::Matrix<float> pe = posemb::sincos_2d_position_table(14, 14, 768, true);
//   // pe: (1 + 14 * 14, 768); row 0 (the class token) is zeros; row 1 + h * 14 + w is patch
//   // (h, w): columns [0, 384) encode w, columns [384, 768) encode h
//
// For a grid of height H and width W and an embedding of D columns (D a multiple of 4),
// patch (h, w) is row prefix + h * W + w, with q = D / 4 and omega_k = 10000^(-k / q):
//   columns [0, q)        sin(w * omega_k)      columns [q, 2q)     cos(w * omega_k)
//   columns [2q, 3q)      sin(h * omega_k)      columns [3q, 4q)    cos(h * omega_k)
// MAE names the first half "emb_h" although it holds meshgrid's first (column) coordinate; the
// layout above is what its code computes. The angles and their sines and cosines are taken in
// double and rounded to float, as MAE's numpy float64 table is when it is copied into a float32
// parameter. With class_token, a zero row comes first (MAE's cls_token=True).
#pragma once

#include <cstddef>

#include "posemb/matrix.hpp"

namespace posemb {

// The (class_token + height * width, dim) table above. Throws std::invalid_argument when dim
// is not a positive multiple of 4 or height or width is 0, std::length_error when the table's
// size overflows.
Matrix<float> sincos_2d_position_table(std::size_t height, std::size_t width, std::size_t dim,
                                       bool class_token = false);

}  // namespace posemb
