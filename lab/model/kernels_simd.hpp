// lab/kernels_simd.hpp: the lab's row kernels, compiled for every SIMD target
// (lab/kernels_simd.cpp) and run on posemb's target (posemb/simd_dispatch.hpp). kernels.cpp and
// attention.cpp split the work into rows and call these; each getter returns the chosen target's
// function (take it once per call of the outer kernel, outside its loops).
//
// Every target gives the same bits: each function performs, per element and in this order, the
// float operations its comment spells out (separate multiplies and adds, no fused multiply-add,
// IEEE division and square root), and every sum over a row uses the fixed 16-partial order:
//
//   p[j] = 0 for j < 16;  p[i % 16] += term(i) for i = 0, 1, ..., n-1 (in that order);
//   then p[j] += p[j + 8] (j < 8), p[j] += p[j + 4] (j < 4), p[j] += p[j + 2] (j < 2),
//   sum = p[0] + p[1].
//
// (On SSE4 the partials are 4 vectors of 4 lanes, on AVX2 2 of 8, on AVX-512 1 of 16.) exp is
// lab_exp (below), our own, not the C library's. tests/lab/lab_reference.hpp holds the same
// formulas as plain scalar code, and tests/lab/test_lab_simd.cpp compares them bit for bit on
// every target.
#pragma once

#include <cstddef>

namespace posemb::lab::simd {

// y[i] = lab_exp(x[i]), written over: exp(x) within 2 float ulp for x in [-87.3, 88.7]; gradual
// underflow below (0 from about -103.9 down to -inf), +inf above 88.73. For the tests; the other
// kernels inline it. Range reduction n = round(x log2 e), r = (x - n c1) - n c2 (c1 + c2 = ln 2,
// c1 exact in 9 bits), Cephes' degree-5 polynomial, then two multiplications by powers of 2.
using ExpRowFn = void (*)(float* y, const float* x, std::size_t n);
ExpRowFn exp_row();

// GELU (lab/kernels.hpp): u = s * (x + ((a * x) * x) * x), t = 1 - 2 / (lab_exp(2u) + 1),
// y = (0.5 x) (1 + t), written over; th (may be null): t, written over.
using GeluForwardRowFn = void (*)(float* y, float* th, const float* x, std::size_t n);
GeluForwardRowFn gelu_forward_row();
// dx = dy * (0.5 (1 + t) + ((0.5 x) (1 - t t)) (s (1 + ((3a) x) x))), written over (dx may be
// dy).
using GeluBackwardRowFn = void (*)(float* dx, const float* dy, const float* x, const float* th,
                                   std::size_t n);
GeluBackwardRowFn gelu_backward_row();

// x[i] += y[i].
using AddRowFn = void (*)(float* x, const float* y, std::size_t n);
AddRowFn add_row();

// One LayerNorm row: mu = sum(x) / c, var = sum((x - mu) (x - mu)) / c,
// rs = 1 / sqrt(var + 1e-5), y = ((x - mu) rs) w + b (y written over, mean and rstd too).
using LayerNormForwardRowFn = void (*)(float* y, float* mean, float* rstd, const float* x,
                                       const float* w, const float* b, std::size_t c);
LayerNormForwardRowFn layernorm_forward_row();
// One row of LayerNorm's dx: g = dy w, s1 = sum(g) / c, s2 = sum((g (x - mu)) rs) / c,
// dx += rs ((g - s1) - ((x - mu) rs) s2), added into.
using LayerNormBackwardRowFn = void (*)(float* dx, const float* dy, const float* x, float mean,
                                        float rstd, const float* w, std::size_t c);
LayerNormBackwardRowFn layernorm_backward_row();
// LayerNorm's dw, db over `rows` rows for `n` columns (pointers at the first column):
// aw[j] += (dy[r][j] (x[r][j] - mean[r])) rstd[r], ab[j] += dy[r][j], rows in order; added into.
using LayerNormParamColumnsFn = void (*)(float* aw, float* ab, const float* dy,
                                         std::size_t dy_stride, const float* x,
                                         std::size_t x_stride, const float* mean, const float* rstd,
                                         std::size_t rows, std::size_t n);
LayerNormParamColumnsFn layernorm_param_columns();

// One row of softmax cross-entropy: mx = max(l), d[i] = lab_exp(l[i] - mx), s = sum(d),
// d[i] = (d[i] (1 / s)) inv, d[target] -= inv (d written over). Returns s and mx: the loss is
// log(s) + mx - l[target].
struct SoftmaxSums {
  float sum, max;
};
using SoftmaxRowFn = SoftmaxSums (*)(float* d, const float* l, std::size_t n, std::size_t target,
                                     float inv);
SoftmaxRowFn softmax_row();

// One query row of causal attention for one head (lab/attention.cpp): p[s] = dot(q, k_s) scale
// for s <= t (dot: the 16-partial sum of q[i] k_s[i]), mx = max p, p[s] = lab_exp(p[s] - mx),
// p[s] *= 1 / sum(p) (the 16-partial sum over s), out = 0, then out += p[s] v_s for s = 0..t in
// order (written over). Row s starts at seq + s stride, its key at +c and its value at +2c.
// bias (t+1 floats, or nullptr: none): p[s] = p[s] + bias[s] right after the scaling (ALiBi).
using AttendRowFn = void (*)(float* out, float* p, const float* q, const float* seq,
                             std::size_t stride, std::size_t c, std::size_t hd, std::size_t t,
                             float scale, const float* bias);
AttendRowFn attend_row();

// The columns of the transposed keys (or values) a head kernel keeps in its scratch: T rounded
// up to a multiple of 16 (the widest vector).
constexpr std::size_t ScratchColumns(std::size_t T) {
  return (T + 15) / 16 * 16;
}
// The query rows a head kernel works on at a time (each step over all of them, so that their
// dependency chains overlap).
constexpr std::size_t kHeadRows = 8;
// A head kernel's scratch: the transpose (hd rows), then kHeadRows rows of scores.
constexpr std::size_t HeadScratchFloats(std::size_t hd, std::size_t T) {
  return (hd + kHeadRows) * ScratchColumns(T);
}

// One head of one sequence of causal attention (lab/attention.cpp): for every t, AttendRow's
// operations (the dot products computed for several keys at once from the keys' transpose, the
// same operations per key), y row t (hd columns at y + t y_stride) and probs row t (T floats,
// zeros after t) written over. Rows t of the sequence start at qkv with qkv_stride; the head's
// q, k, v at +0, +c, +2c. kt: HeadScratchFloats(hd, T) floats of scratch. bias (nullptr: none):
// the scores of query t get bias[T - 1 - t + s] added to key s's (AttendRow's bias of row t at
// bias + T - 1 - t); it holds T + ScratchColumns(T) floats (whole vectors are read past the row).
struct AttendHeadJob {
  float* y;
  std::size_t y_stride;
  float* probs;  // (T, T)
  const float* qkv;
  std::size_t qkv_stride;
  float* kt;
  std::size_t seq_len, c, hd;
  float scale;
  const float* bias = nullptr;
};
using AttendHeadFn = void (*)(const AttendHeadJob& job);
AttendHeadFn attend_head();

// One head of one sequence of attention's backward (lab/attention.cpp), dqkv's head columns
// written over: rows t of the sequence start at qkv, dqkv and dy with their strides; the head's
// q, k, v at +0, +c, +2c (dy at +0); P: (T, T) weights. For each t: dp[s] = dot(g, v_s),
// dot += p[s] dp[s] (s in order), dv_s += p[s] g; then for each s: ds = ((p[s] (dp[s] - dot))
// scale), dq_t += ds k_s, dk_s += ds q_t. Every dv_s and dk_s adds its contributions in
// ascending t. dbias (T floats, or nullptr: none): the gradient of the scores' bias by distance,
// dbias[t - s] += p[s] (dp[s] - dot) (ds before its scaling) for every t and s <= t, rows t in
// ascending order (added into).
struct AttentionHeadJob {
  float* dqkv;
  std::size_t dqkv_stride;
  const float* dy;
  std::size_t dy_stride;
  const float* qkv;
  std::size_t qkv_stride;
  const float* probs;  // (T, T)
  float* vt;           // HeadScratchFloats(hd, T) floats of scratch
  std::size_t seq_len, c, hd;
  float scale;
  float* dbias = nullptr;  // (T), added into; nullptr: no bias gradient
};
using AttentionBackwardHeadFn = void (*)(const AttentionHeadJob& job);
AttentionBackwardHeadFn attention_backward_head();

}  // namespace posemb::lab::simd
