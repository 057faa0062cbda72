// bench/peers/llmc_encoder.hpp: the peer posemb's embedding kernels are measured against, the
// loop shape of llm.c's CPU encoder (train_gpt2.c, encoder_forward / encoder_backward):
//   for b, for t, for i: out[b,t,i] = wte[inp[b,t], i] + wpe[t, i]
// and the backward adding dout into both rows, written here in a few lines (not copied), built
// as llm.c's Makefile builds it: -O3 -march=native (llmc_encoder.cpp). Serial, plus the forward
// with `#pragma omp parallel for`.
//
// The -march=native code may use instructions this CPU lacks when the program was built on
// another machine: call llmc_peer_available() first (llmc_guard.cpp, built for the baseline),
// which checks every instruction-set extension the build enabled.
#pragma once

#include <string>

extern "C" {
// inp (B, T); wte (V, C); wpe (>= T, C); out (B*T, C) written over.
void posemb_llmc_encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                                 int B, int T, int C);
// The same loop with `#pragma omp parallel for collapse(2)` over (b, t).
void posemb_llmc_encoder_forward_omp(float* out, const int* inp, const float* wte, const float* wpe,
                                     int B, int T, int C);
// dwte[inp[b,t], :] += dout[b,t,:]; dwpe[t, :] += dout[b,t,:], for b, for t (added into).
void posemb_llmc_encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                                  int B, int T, int C);
// The position-only add (the same loops without the token term): x[b,t,:] += wpe[t,:] (serial,
// and with `#pragma omp parallel for collapse(2)`), and dwpe[t,:] += dx[b,t,:] for b, for t.
void posemb_llmc_add_positions_forward(float* x, const float* wpe, int B, int T, int C);
void posemb_llmc_add_positions_forward_omp(float* x, const float* wpe, int B, int T, int C);
void posemb_llmc_add_positions_backward(float* dwpe, const float* dx, int B, int T, int C);
}

namespace posemb::bench {
// True when this CPU runs the -march=native peer; otherwise `why` names the missing extensions.
bool llmc_peer_available(std::string& why);
}  // namespace posemb::bench
