// lab/model/kernels.hpp: the model's element-wise and matrix kernels, forward and backward.
//
// Conventions: row-major float32, one token per row. Forward and backward take the same
// arguments in the same order, outputs first; each comment says whether a result is written over
// or added into. Every kernel is deterministic whatever the thread count: work is split
// into fixed chunks (never "one chunk per thread") and every reduction runs in a fixed order.
// Matrix products are lab::gemm calls (lab/model/gemm.hpp), one per chunk: the same bits on every
// CPU and SIMD target.
//
//   lab::linear_forward(y, x, w, b);            // y (M, N) = x (M, K) w (K, N) + b (1, N)
//   lab::linear_backward(dx, dw, db, dy, x, w); // dx written over; dw, db added into
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "posemb/matrix_view.hpp"

namespace posemb::lab {

// y = x w + b. x: (M, K), w: (K, N), b: (1, N) or empty; y: (M, N), written over.
void linear_forward(MatrixView<float> y, MatrixView<const float> x, MatrixView<const float> w,
                    MatrixView<const float> b);
// Gradients of linear_forward. dx (M, K): written over, or added into when accumulate_dx (skipped
// when empty); dw (K, N) and db (1, N, may be empty): added into.
void linear_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                     MatrixView<const float> dy, MatrixView<const float> x,
                     MatrixView<const float> w, bool accumulate_dx = false);

// LayerNorm over each row: y = (x - mean) * rstd * w + b, eps 1e-5 (PyTorch's default).
// y (M, C) written over; mean, rstd (M) written over (kept for the backward).
void layernorm_forward(MatrixView<float> y, std::span<float> mean, std::span<float> rstd,
                       MatrixView<const float> x, MatrixView<const float> w,
                       MatrixView<const float> b);
// dx (M, C): added into; dw, db (1, C): added into.
void layernorm_backward(MatrixView<float> dx, MatrixView<float> dw, MatrixView<float> db,
                        MatrixView<const float> dy, MatrixView<const float> x,
                        std::span<const float> mean, std::span<const float> rstd,
                        MatrixView<const float> w);

// GELU, tanh approximation (GPT-2's; PyTorch GELU(approximate="tanh")):
// y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). y written over; th (same shape,
// may be empty) written over with tanh(u), which the backward reuses.
void gelu_forward(MatrixView<float> y, MatrixView<float> th, MatrixView<const float> x);
// dx = dy * gelu'(x), written over (dx may alias dy). th: tanh(u) from the forward.
void gelu_backward(MatrixView<float> dx, MatrixView<const float> dy, MatrixView<const float> x,
                   MatrixView<const float> th);

// x += y, element-wise (residual connection): added into.
void add_into(MatrixView<float> x, MatrixView<const float> y);

// Softmax cross-entropy on the rows whose target is >= 0 (target -1: ignored).
// losses (M): per-row loss written over (0 for ignored rows). dlogits (M, V): written over with
// d(mean loss)/d(logits), i.e. (softmax - onehot) / count, 0 on ignored rows. Returns the mean
// loss over the counted rows (summed in row order in double), 0 when no row counts.
// normalizer: divide by this count instead (the whole batch's count when these rows are one
// micro-batch of it); 0 = the rows' own count.
double softmax_cross_entropy(MatrixView<float> dlogits, std::span<float> losses,
                             MatrixView<const float> logits, std::span<const std::int32_t> targets,
                             std::size_t normalizer = 0);

// Index of the largest element of a row (the first one on ties).
std::size_t argmax(std::span<const float> row);

// Whether every element of x is finite (no infinity, no NaN): the trainer's check of its
// parameters after an update and evaluate()'s of the logits it decodes from.
bool all_finite(std::span<const float> x);

}  // namespace posemb::lab
