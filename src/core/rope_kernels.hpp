// Internal (core): the rotary embedding's rotation of rows (rope.cpp), compiled for every SIMD
// target (rope_simd.cpp). Each pair is rotated with exactly the float operations of the formulas
// below, in this order and without fused multiply-add, in the vector lanes and the scalar tail
// alike, so every target gives the same bits.
#pragma once

#include <cstddef>

namespace posemb::detail {

// Which columns of a row rotate: heads of head_dim columns, the first 2 * pairs of each; pair i
// is (a, b) = (x[i], x[pairs + i]) (half) or (x[2i], x[2i + 1]) (interleaved).
struct RopeGeometry {
  std::size_t heads;
  std::size_t head_dim;
  std::size_t pairs;
  bool interleaved;
};

// Rotates `rows` rows in place, row r at x + r * stride (heads * head_dim floats each), every
// head of row r by the angles whose cosines and sines are c[r * cs_stride + i] and
// s[r * cs_stride + i] (i < pairs): consecutive rows of consecutive positions (cs_stride: the
// cache's row stride) or of one position (cs_stride 0).
//   forward  a' = a * c - b * s,  b' = a * s + b * c
//   inverse  a' = a * c + b * s,  b' = b * c - a * s   (the transpose)
using RotateRowsFn = void (*)(float* x, std::size_t stride, std::size_t rows, const float* c,
                              const float* s, std::size_t cs_stride, const RopeGeometry& g);
RotateRowsFn rotate_rows(bool inverse);

}  // namespace posemb::detail
