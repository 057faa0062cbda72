// posemb/sinusoidal.hpp: the sinusoidal positional encoding of Vaswani et al. 2017, a formula
// that can be evaluated at any position (unlike a learned table, which has a fixed number of
// rows), in the layouts and frequency spacings of the implementations in use.
//
//   posemb::Matrix<float> pe = posemb::sinusoidal_positional_encoding(16, 64);   // (16, 64)
//   posemb::Matrix<float> far = posemb::sinusoidal_positional_encoding(4, 64, 1'000'000);
//   auto marian = posemb::sinusoidal_positional_encoding(
//       512, 512, 0, {.layout = posemb::SinusoidalLayout::concatenated});
//   auto fairseq = posemb::sinusoidal_positional_encoding(
//       512, 512, 2, {.layout = posemb::SinusoidalLayout::concatenated,
//                     .frequencies = posemb::SinusoidalFrequencies::tensor2tensor});
//
// Row r is position p = start + r; d = embed_dim; s_i = sin(p * f_i), c_i = cos(p * f_i).
// Frequencies f_i:
//   vaswani (default)  f_i = base^(-2i / d), i < ceil(d/2): ceil(d/2) sines, floor(d/2) cosines
//   tensor2tensor      f_i = base^(-i / (h - 1)), i < h = floor(d/2): h sines, h cosines, and an
//                      odd d ends with a zero column. The last frequency is exactly 1/base; for
//                      h = 1 (d = 2, 3) the one frequency is 1 (fairseq divides by zero there)
// Layouts:
//   interleaved (default)  [s_0, c_0, s_1, c_1, ...]; an odd d ends with its last column
//   concatenated           [s_0, s_1, ..., c_0, c_1, ...]: every sine, then every cosine
//
// What each equals (checked against oracles written from their formulas, tests/oracles/):
//   {} (interleaved, vaswani)           Vaswani et al. 2017, section 3.5, as written
//   {.layout = concatenated}            Hugging Face MarianSinusoidalPositionalEmbedding
//                                       (any d; numpy float64 rounded to float32, as Marian does)
//   {.layout = concatenated,            fairseq SinusoidalPositionalEmbedding.get_embedding and
//    .frequencies = tensor2tensor}      tensor2tensor get_timing_signal_1d. fairseq numbers
//                                       positions from padding_idx + 1 (start = 2 for its default
//                                       padding_idx 1) and zeroes row padding_idx, which posemb
//                                       does not; fairseq evaluates the formula in float32, so its
//                                       own table differs from the exact values by up to
//                                       ~p * 2^-22 (posemb's does not).
//
// Accuracy: angles are formed in double, their sine and cosine taken by posemb's own double
// precision kernel (within about 2^-52 of exact; the same bits on every SIMD target), and in long
// double once they exceed 2^24, so every element is within 3e-7 of the exact value for every
// position up to 2^31, in every layout and spacing (float32 angles would be off by whole radians
// there).
#pragma once

#include <cstddef>
#include <cstdint>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb {

// Where the sines and cosines go in a row.
enum class SinusoidalLayout : std::uint8_t {
  interleaved,   // sin, cos of frequency 0, then of frequency 1, ... (Vaswani et al.)
  concatenated,  // every sine, then every cosine (fairseq, HF Marian, tensor2tensor)
};

// How the frequencies are spaced.
enum class SinusoidalFrequencies : std::uint8_t {
  vaswani,        // base^(-2i / d): Vaswani et al., HF Marian
  tensor2tensor,  // base^(-i / (floor(d/2) - 1)): tensor2tensor, fairseq
};

struct SinusoidalOptions {
  SinusoidalLayout layout = SinusoidalLayout::interleaved;
  SinusoidalFrequencies frequencies = SinusoidalFrequencies::vaswani;
  double base = 10000.0;  // in [1e-300, 1e300]
};

// The (seq_len, embed_dim) encoding of positions [start, start + seq_len).
// Throws std::invalid_argument when options.base is outside [1e-300, 1e300] or an enum holds no
// listed value, and std::out_of_range when start + seq_len overflows std::size_t.
Matrix<float> sinusoidal_positional_encoding(std::size_t seq_len, std::size_t embed_dim,
                                             std::size_t start = 0,
                                             const SinusoidalOptions& options = {});

// Writes the encoding of positions [start, start + out.rows()) into out (embed_dim =
// out.cols()), overwriting it. Same errors as above; nothing is written when it throws.
void sinusoidal_positional_encoding_into(MatrixView<float> out,  // (seq_len, embed_dim)
                                         std::size_t start = 0,
                                         const SinusoidalOptions& options = {});
void sinusoidal_positional_encoding_into(MatrixView<double> out,  // (seq_len, embed_dim)
                                         std::size_t start = 0,
                                         const SinusoidalOptions& options = {});

}  // namespace posemb
