// lab/model/attention.hpp: causal multi-head self-attention (the part between the qkv and output
// projections), forward and backward, and one cached decoding step.
//
// Layout: qkv is (B*T, 3C), row b*T + t holding [q | k | v] of token t of sequence b; head h
// uses columns [h*hd, (h+1)*hd) of each of q, k, v (hd = C / H). Scores are scaled by
// 1/sqrt(hd); token t attends to tokens 0..t of its own sequence.
//
// A bias on the scores (an encoding's scores_bias, lab/encodings/encoding.hpp): one row per head
// indexed by distance, bias(h, d); the scaled score of query t and key s <= t gets bias(h, t - s)
// added (ALiBi: -(m_h d); a trained bias: its values). Empty: no bias. The backward reads the
// forward's weights, so it is the same with or without a bias; given dbias, it also adds the
// gradient of each bias value: the scores' gradients summed along each diagonal t - s = d, over
// the batch (before the 1/sqrt(hd) scaling, which applies to q.k only).
//
//   lab::attention_forward(y, probs, qkv, B, T, H);           // y (B*T, C), probs (B*H*T*T)
//   lab::attention_forward(y, probs, qkv, B, T, H, bias);     // bias (H, >= T) by distance
//   lab::attention_backward(dqkv, {}, dy, probs, qkv, B, T, H);
//   lab::attention_backward(dqkv, dbias, dy, probs, qkv, B, T, H);   // dbias (H, >= T) added
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "posemb/matrix_view.hpp"

namespace posemb::lab {

// y (B*T, C): written over. probs (B*H*T*T): softmax weights, written over (0 above the
// diagonal), kept for the backward. Throws std::invalid_argument for a bias of other than H rows
// or fewer than T columns.
void attention_forward(MatrixView<float> y,          // (B*T, C), written over
                       std::span<float> probs,       // (B*H*T*T), written over
                       MatrixView<const float> qkv,  // (B*T, 3C)
                       std::size_t batch, std::size_t seq_len, std::size_t heads,
                       MatrixView<const float> bias = {});  // (H, >= T) by distance, or empty
// dqkv (B*T, 3C): written over. dbias (H, >= T) or empty: the gradient of the forward's bias by
// distance, added into (each value a sum in a fixed order: rows t ascending within a sequence,
// then the sequences in order).
void attention_backward(MatrixView<float> dqkv,        // (B*T, 3C), written over
                        MatrixView<float> dbias,       // (H, >= T) by distance, added into
                        MatrixView<const float> dy,    // (B*T, C)
                        std::span<const float> probs,  // (B*H*T*T)
                        MatrixView<const float> qkv,   // (B*T, 3C)
                        std::size_t batch, std::size_t seq_len, std::size_t heads);
// One decoding step: the query of token t of every sequence attends to tokens 0..t, read from
// the cache qkv (B*T_cap, 3C) whose rows b*T_cap + s, s <= t, are filled. y (B, C): written over.
// scratch: at least B*H*(t+1) floats. bias: (H, >= t + 1) by distance, or empty (as
// attention_forward).
void attention_step(MatrixView<float> y, std::span<float> scratch, MatrixView<const float> qkv,
                    std::size_t batch, std::size_t cap, std::size_t t, std::size_t heads,
                    MatrixView<const float> bias = {});

}  // namespace posemb::lab
