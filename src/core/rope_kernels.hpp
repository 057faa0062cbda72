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

// A block of `rows` rows to rotate in place, row r at x + r * stride (heads * head_dim floats
// each), every head of row r by the angles whose cosines and sines are c[r * cs_stride + i] and
// s[r * cs_stride + i] (i < pairs): consecutive rows of consecutive positions (cs_stride: the
// cache's row stride) or of one position (cs_stride 0).
struct RopeRows {
  float* x;
  const float* c;
  const float* s;
  std::size_t rows;
};

// Rotates n blocks (x, stride and cs_stride shared), row r of every block before row r + 1 of
// any: blocks far apart in memory are read as that many streams at once, which one core reads
// faster from memory than one stream after another (docs/layer.md).
//   forward  a' = a * c - b * s,  b' = a * s + b * c
//   inverse  a' = a * c + b * s,  b' = b * c - a * s   (the transpose)
using RotateRowsFn = void (*)(const RopeRows* blocks, std::size_t n, std::size_t stride,
                              std::size_t cs_stride, const RopeGeometry& g);
RotateRowsFn rotate_rows(bool inverse);

}  // namespace posemb::detail
