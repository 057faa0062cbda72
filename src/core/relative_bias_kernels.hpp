// Internal (core): the row kernels of T5's relative position bias (relative_bias.cpp), compiled
// for every SIMD target (relative_bias_simd.cpp). A copy and a sum of float values widened to
// double, lane by lane: every target gives the same bits.
#pragma once

#include <cstddef>

namespace posemb::detail {

// Bias rows [r0, r1) of (H*Tq, Tk): row r = h*Tq + i is the slice [Tq - 1 - i, Tq - 1 - i + Tk)
// of head h's values (values + h * diagonals, diagonals = Tq + Tk - 1). With `stream`, whole
// vectors are written with non-temporal stores (from the first vector-aligned element of each
// row on), made visible before the call returns.
struct BiasRowsJob {
  float* bias;
  std::size_t bias_stride;
  const float* values;
  std::size_t diagonals, queries, keys;
  bool stream;
};
using BiasRowsFn = void (*)(const BiasRowsJob& job, std::size_t r0, std::size_t r1);
BiasRowsFn bias_rows();

// acc[k] += double(row[k]) for k < n.
using AddWidenedFn = void (*)(double* acc, const float* row, std::size_t n);
AddWidenedFn add_widened();

}  // namespace posemb::detail
