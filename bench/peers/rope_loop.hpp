// bench/peers/rope_loop.hpp: the peer posemb's rotary kernels are measured against, the plain
// rotate-half loop over cached cos and sin that a C programmer writes first (GPT-NeoX / HF Llama
// pairing, the cache holding D/2 cosines and sines per position, as posemb's RopeCache does):
//   for b, for t, for h, for i < D/2:
//     x1 = x[i], x2 = x[i + D/2]
//     x[i] = x1 * cos[t][i] - x2 * sin[t][i];  x[i + D/2] = x2 * cos[t][i] + x1 * sin[t][i]
// and its inverse, written here (not copied), built -O3 -march=native like the llm.c peer
// (rope_loop.cpp). Serial, plus the forward with `#pragma omp parallel for collapse(2)`.
//
// Built with -march=native: call llmc_peer_available() (llmc_encoder.hpp) first, which checks
// every instruction-set extension the build enabled (the same flags as the llm.c peer).
#pragma once

extern "C" {
// x (B*T, H*D) rows in place; cos, sin (>= T, D/2), position t's row at t * (D/2).
void posemb_loop_rope_forward(float* x, const float* cos, const float* sin, int B, int T, int H,
                              int D);
void posemb_loop_rope_forward_omp(float* x, const float* cos, const float* sin, int B, int T, int H,
                                  int D);
// The inverse rotation (the backward): x[i] = x1 c + x2 s, x[i + D/2] = x2 c - x1 s.
void posemb_loop_rope_backward(float* x, const float* cos, const float* sin, int B, int T, int H,
                               int D);
}
