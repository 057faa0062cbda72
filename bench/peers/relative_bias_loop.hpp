// bench/peers/relative_bias_loop.hpp: the peer posemb's T5 relative bias kernels are measured
// against, the plain loops a C programmer writes over a precomputed (Tq, Tk) matrix of bucket
// ids (what HF's compute_bias builds before its embedding lookup; here built once, outside the
// timing):
//   forward:  for h, for i, for j: bias[h][i][j] = table[bucket[i][j]][h]
//   backward: for h, for i, for j: dtable[bucket[i][j]][h] += dbias[h][i][j]
// written here, built -O3 -march=native like the llm.c peer (relative_bias_loop.cpp). Serial,
// plus the forward with `#pragma omp parallel for` over the rows.
//
// Built with -march=native: call llmc_peer_available() (llmc_encoder.hpp) first.
#pragma once

extern "C" {
// bias (H*Tq, Tk); table (num_buckets, H); bucket (Tq, Tk).
void posemb_loop_relative_bias_forward(float* bias, const float* table, const int* bucket, int H,
                                       int Tq, int Tk);
void posemb_loop_relative_bias_forward_omp(float* bias, const float* table, const int* bucket,
                                           int H, int Tq, int Tk);
// dtable (num_buckets, H), added into; dbias (H*Tq, Tk).
void posemb_loop_relative_bias_backward(float* dtable, const float* dbias, const int* bucket, int H,
                                        int Tq, int Tk);
}
