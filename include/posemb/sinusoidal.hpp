// posemb/sinusoidal.hpp: the sinusoidal positional encoding of Vaswani et al. 2017, a formula
// that can be evaluated at any position (unlike a learned table, which has a fixed number of
// rows).
//
//   posemb::Matrix<float> pe = posemb::sinusoidal_positional_encoding(16, 64);   // (16, 64)
//   posemb::Matrix<float> far = posemb::sinusoidal_positional_encoding(4, 64, 1'000'000);
//
// Row r is position p = start + r. With inv_freq_i = base^(-2i / embed_dim):
//   column 2i     = sin(p * inv_freq_i)
//   column 2i + 1 = cos(p * inv_freq_i)
// (interleaved; an odd embed_dim ends with a sine column). Angles are evaluated in double, and
// in long double once they exceed 2^24, so every element is within 3e-7 of the exact value
// for every position up to 2^31 (float32 angles would be off by whole radians there).
#pragma once

#include <cstddef>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// The (seq_len, embed_dim) encoding of positions [start, start + seq_len).
// Throws std::invalid_argument when base is not finite and > 0, and std::out_of_range when
// start + seq_len overflows std::size_t.
Matrix<float> sinusoidal_positional_encoding(std::size_t seq_len, std::size_t embed_dim,
                                             std::size_t start = 0, double base = 10000.0);

// Writes the encoding of positions [start, start + out.rows()) into out (embed_dim =
// out.cols()), overwriting it. Same errors as above; nothing is written when it throws.
void sinusoidal_positional_encoding_into(MatrixView<float> out,  // (seq_len, embed_dim)
                                         std::size_t start = 0, double base = 10000.0);
void sinusoidal_positional_encoding_into(MatrixView<double> out,  // (seq_len, embed_dim)
                                         std::size_t start = 0, double base = 10000.0);

}  // namespace posemb
