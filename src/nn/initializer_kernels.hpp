// Internal: the initializers' fill loop (initializers.cpp), compiled for every SIMD target
// (initializer_simd.cpp). Element k = r * cols + c of the table is a pure function of (seed, k),
// computed with the operations of posemb/random.hpp in the same order (the logarithm and cosine
// by the C library, lane by lane), so every target and thread count gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace posemb::detail {

enum class FillKind : std::uint8_t {
  normal,   // scale * counter_normal(seed, k)
  uniform,  // scale * (2 * counter_uniform01(seed, 3, k) - 1)
  zeros
};

struct FillJob {
  float* table;
  std::size_t stride, cols;
  FillKind kind;
  std::uint64_t seed;
  double scale;
};
// Fills rows [r0, r1).
using FillRowsFn = void (*)(const FillJob& job, std::size_t r0, std::size_t r1);
FillRowsFn fill_rows();

}  // namespace posemb::detail
