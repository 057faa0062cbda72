// lab/gemm.hpp: the lab's matrix product, the same bits on every x86-64 CPU and SIMD target.
//
//   // y (M, N) = x (M, K) w (K, N): written over
//   lab::gemm(false, false, m, n, k, 1.0f, x, k, w, n, 0.0f, y, n);
//   // dw (K, N) += x^T dy, x (M, K), dy (M, N): added into
//   lab::gemm(true, false, k, n, m, 1.0f, x, k, dy, n, 1.0f, dw, n);
//
// cblas_sgemm's arguments in its order, row-major only (no layout argument). Every element of C
// is one plain sequential float sum over k in ascending order, which this header defines exactly
// (separate multiply and add, never a fused multiply-add):
//
//   c = 0 when beta == 0 (C written over: what C held, NaN included, is ignored),
//       C[i][j] when beta == 1 (added into), beta * C[i][j] otherwise;
//   c = c + op(A)[i][p] * (alpha * op(B)[p][j])   for p = 0, 1, ..., k-1 in that order;
//   C[i][j] = c.
//
// So the result depends on neither the SIMD target (posemb/simd_dispatch.hpp chooses it, as for
// the lab's other kernels: lab/gemm_simd.cpp), nor how the caller splits C into row or column
// blocks, nor the thread count; k may be split too (a second call with beta = 1 continues the
// same sum). tests/lab/test_lab_gemm.cpp holds the scalar reference and compares bit for bit on
// every target. Single-threaded: the lab's OpenMP loops call it once per block, several at once
// (each thread has its own packing buffer).
#pragma once

#include <cstddef>

namespace posemb::lab {

// C (M, N) = alpha op(A) op(B) + beta C, in the order above. Row-major; op(A) is (M, K): A is
// (M, K) with row stride lda >= K, or (K, M) with lda >= M when trans_a; op(B) is (K, N): B is
// (K, N) with ldb >= N, or (N, K) with ldb >= K when trans_b; C (M, N), ldc >= N, must not
// overlap A or B. Nothing is read or written when M or N is 0; K = 0 scales C by beta (0: zeros).
// Throws std::invalid_argument naming the stride and the width it must cover.
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc);

}  // namespace posemb::lab
