// posemb/alibi.hpp: ALiBi, attention with linear biases (Press, Smith and Lewis, "Train Short,
// Test Long", ICLR 2022; BLOOM, MPT): no position embedding at all, a bias on the attention
// scores that falls linearly with the distance between query and key, with one slope per head.
//
//   // scores (B*H*Tq, Tk): row (b*H + h)*Tq + i holds q_i . k_j / sqrt(D) for keys j < Tk
//   std::vector<float> slopes = posemb::alibi_slopes(H);        // 2^(-8h/H), h = 1..H
//   posemb::alibi_forward(scores.view(), slopes, B, Tq);          // causal, queries at 0..Tq-1
//   // ... softmax over each row, attention, its backward gives dscores ...
//   posemb::alibi_backward(dscores.view(), {}, H, B, Tq);         // fixed slopes: no dslopes
//   // cached decoding: one new query at position 700 against keys 0..700
//   posemb::alibi_forward(step.view(), slopes, B, 1, {.start = 700});  // step (B*H, 701)
//
// The bias of head h (slope m_h) for the query at position q = start + i and the key at
// position j, d = q - j:
//   AlibiForm::causal     scores[i][j] += -(m_h * d) for j <= q; scores[i][j] = -inf for j > q
//                         (the causal mask, written over: a key after its query gets no weight)
//   AlibiForm::symmetric  scores[i][j] += -(m_h * |d|) for every j (encoders, no mask)
// d is converted to float (exactly while below 2^24) and the product rounded once, then added.
// BLOOM's and fairseq's `slope * j` differs from `-slope * (q - j)` by `slope * q` in each row,
// which the softmax cancels: the attention weights are the same.
//
// The bias has no parameters unless the caller trains the slopes: alibi_backward leaves the
// gradient of the scores as it is (the bias is added: its Jacobian is the identity) except at the
// masked keys of the causal form, whose gradient is 0 (written over), and adds the gradient of
// each head's slope into dslopes when asked to (a non-empty span): sum over its rows and keys of
// dscores * -d (-|d| symmetric; unmasked keys only), summed in double.
//
// Threads: rows are spread over posemb::parallel_for; each row is computed alone and dslopes is
// summed in a fixed order, so the results are the same for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "posemb/matrix_view.hpp"

namespace posemb {

// The slopes of Press et al. for `heads` heads, head h (0-based) first: for a power of two n,
// 2^(-8(h+1)/n); otherwise, with n' the largest power of two below `heads`, the n' slopes of n'
// followed by the slopes 1, 3, 5, ... (1-based) of 2n' until there are `heads` (the reference
// code's get_slopes, HF BLOOM's build_alibi_tensor; MPT's gen_slopes with alibi_bias_max 8 gives
// the same list).
// Each is 2 to an exact rational power, computed in long double and rounded once to float.
// Throws std::invalid_argument when heads is 0, MemoryLimitExceeded when the slopes are over the
// memory budget (posemb/memory.hpp).
std::vector<float> alibi_slopes(std::size_t heads);

// Which keys a query is biased against (see the header comment).
enum class AlibiForm : std::uint8_t {
  causal,     // decoders (BLOOM, MPT): keys up to the query, later keys masked with -inf
  symmetric,  // encoders: -m |q - j| for every key
};

struct AlibiOptions {
  AlibiForm form = AlibiForm::causal;
  std::size_t start = 0;  // position of query row 0 (cached decoding); keys are at 0..Tk-1
};

// Adds the bias into the scores of `batch` sequences of `queries` queries, heads =
// slopes.size(). Throws std::invalid_argument (naming the numbers) for no slopes, a slope that
// is not finite, an empty batch or query count, scores whose rows are not batch * heads *
// queries, a start past 2^62, or slopes that share memory with scores. Nothing is written when
// it throws.
void alibi_forward(MatrixView<float> scores,       // (B*H*Tq, Tk), added into (-inf: masked)
                   std::span<const float> slopes,  // (H)
                   std::size_t batch, std::size_t queries, const AlibiOptions& options = {});

// The backward of alibi_forward, with the same options: dscores holds dL/d(biased scores) and is
// written over with dL/dscores (unchanged but for masked keys, set to 0); when dslopes is not
// empty, dL/dslopes is added into it. Throws like alibi_forward, and when dslopes holds neither
// 0 nor `heads` values or shares memory with dscores. Nothing is written when it throws.
void alibi_backward(MatrixView<float> dscores,  // (B*H*Tq, Tk), written over (in place)
                    std::span<float> dslopes,   // (H) or empty, added into
                    std::size_t heads, std::size_t batch, std::size_t queries,
                    const AlibiOptions& options = {});

}  // namespace posemb
