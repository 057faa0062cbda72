// lab/attention.hpp: causal multi-head self-attention (the part between the qkv and output
// projections), forward and backward, and one cached decoding step.
//
// Layout: qkv is (B*T, 3C), row b*T + t holding [q | k | v] of token t of sequence b; head h
// uses columns [h*hd, (h+1)*hd) of each of q, k, v (hd = C / H). Scores are scaled by
// 1/sqrt(hd); token t attends to tokens 0..t of its own sequence.
//
// ALiBi (Press et al. 2022): given one slope per head (slopes, H values, posemb::alibi_slopes),
// the scaled score of query t and key s <= t gets the bias -(m_h (t - s)) added, the rows of
// posemb::alibi_forward (one query at position T-1 against keys 0..T-1, computed once per call;
// no second copy of the formula). Empty slopes: no bias. The bias is a constant of the scores,
// so the backward is the same with or without it (it reads the forward's weights): no slope is
// trained.
//
//   lab::attention_forward(y, probs, qkv, B, T, H);            // y (B*T, C), probs (B*H*T*T)
//   lab::attention_forward(y, probs, qkv, B, T, H, posemb::alibi_slopes(H));   // with ALiBi
//   lab::attention_backward(dqkv, dy, probs, qkv, B, T, H);
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "posemb/matrix_view.hpp"

namespace posemb::lab {

// y (B*T, C): written over. probs (B*H*T*T): softmax weights, written over (0 above the
// diagonal), kept for the backward. slopes: (H) ALiBi slopes, or empty.
void attention_forward(MatrixView<float> y, std::span<float> probs, MatrixView<const float> qkv,
                       std::size_t batch, std::size_t seq_len, std::size_t heads,
                       std::span<const float> slopes = {});
// dqkv (B*T, 3C): written over.
void attention_backward(MatrixView<float> dqkv, MatrixView<const float> dy,
                        std::span<const float> probs, MatrixView<const float> qkv,
                        std::size_t batch, std::size_t seq_len, std::size_t heads);
// One decoding step: the query of token t of every sequence attends to tokens 0..t, read from
// the cache qkv (B*T_cap, 3C) whose rows b*T_cap + s, s <= t, are filled. y (B, C): written over.
// scratch: at least B*H*(t+1) floats. slopes: (H) ALiBi slopes, or empty (as attention_forward).
void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads,
                    std::span<const float> slopes = {});

}  // namespace posemb::lab
