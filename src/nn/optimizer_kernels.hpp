// Internal: the elementwise update loops of AdamW and Sgd (optimizers.cpp), compiled for every
// SIMD target (optimizer_simd.cpp). Each performs, per element and in this order, exactly the
// float operations of the scalar formula in its comment, so every target gives the same bits.
#pragma once

#include <cstddef>

namespace posemb::detail {

// Rows [r0, r1) of one parameter; value, grad and the state are (rows, cols) with strides.
struct AdamWJob {
  float* value;
  std::size_t value_stride;
  const float* grad;
  std::size_t grad_stride;
  float* m;  // (rows, cols), contiguous
  float* v;  // (rows, cols), contiguous
  std::size_t cols;
  float decay;          // 1 - lr * weight_decay
  float b1, one_b1;     // beta1, 1 - beta1
  float b2, one_b2;     // beta2, 1 - beta2
  float bc2_sqrt, eps;  // sqrt(1 - beta2^t), eps
  float step_size;      // lr / (1 - beta1^t)
};
// p *= decay;  m = b1*m + one_b1*g;  v = b2*v + (one_b2*g)*g;
// p -= step_size * (m / (sqrt(v) / bc2_sqrt + eps))
using AdamWRowsFn = void (*)(const AdamWJob& job, std::size_t r0, std::size_t r1);
AdamWRowsFn adamw_rows();

struct SgdJob {
  float* value;
  std::size_t value_stride;
  const float* grad;
  std::size_t grad_stride;
  float* velocity;  // (rows, cols), contiguous
  std::size_t cols;
  float lr, momentum, weight_decay;
};
// d = g + weight_decay*p;  buf = momentum*buf + d;  p -= lr*buf
using SgdRowsFn = void (*)(const SgdJob& job, std::size_t r0, std::size_t r1);
SgdRowsFn sgd_rows();

}  // namespace posemb::detail
