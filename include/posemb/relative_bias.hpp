// posemb/relative_bias.hpp: T5's learned relative position bias (Raffel et al., "Exploring the
// Limits of Transfer Learning with a Unified Text-to-Text Transformer", JMLR 2020; Hugging Face
// T5Attention, LongT5, UMT5, Pix2Struct): no position embedding on the tokens; instead one learned
// scalar per head and bucket of relative distance, added to the attention logits. One
// (num_buckets, heads) table is shared by every layer.
//
//   const std::size_t H = 8, T = 64;
//   posemb::RelativeBuckets buckets{.num_buckets = 32, .max_distance = 64, .bidirectional = false};
//   posemb::Matrix<float> table(32, H);                  // (num_buckets, heads), learned
//   posemb::Matrix<float> bias(H * T, T);                // (H, Tq, Tk) as H*Tq rows of Tk
//   posemb::relative_bias_forward(bias, table, buckets, T);       // queries and keys at 0..T-1
//   // ... scores[b][h] += bias[h]; softmax; ...; dbias = sum over the batch of dscores[b] ...
//   posemb::Matrix<float> dtable(32, H);                 // zeros
//   posemb::relative_bias_backward(dtable, dbias, buckets, T);    // added into
//   // cached decoding: the query at position 700 against the keys 0..700, step (H, 701)
//   posemb::relative_bias_forward(step, table, buckets, 1, {.query_start = 700});
//   posemb::t5_relative_bucket(-5, buckets);             // 5: a key 5 positions before its query
//
// The buckets (HF T5Attention._relative_position_bucket, exactly). The relative position is
// r = key - query. Bidirectional (T5's encoder): half = num_buckets / 2 buckets for each
// direction, keys after the query (r > 0) in the upper half [half, 2 half), n = |r|. Causal
// (T5's decoder): half = num_buckets, n = max(-r, 0) (a key after its query falls in bucket 0,
// like the query's own position; the causal mask is the attention's business). Then, with
// max_exact = half / 2:
//   n <  max_exact   bucket n (one bucket per distance)
//   n >= max_exact   bucket min(half - 1, max_exact + trunc(x)) with, in float32 as HF computes
//                    it, x = (log(float(n) / max_exact) / float(log(max_distance / max_exact)))
//                        * float(half - max_exact)
// (log(max_distance / max_exact) in double, as Python's math.log; log(float) correctly rounded
// to float32; every other operation one float32 rounding). The log-spaced buckets reach the last
// one, half - 1, at a distance just below max_distance; every farther key shares it. With
// num_buckets 32 and max_distance 128 the last causal bucket starts at distance 113 (91
// bidirectional): a model trained on sequences of L tokens never sees a distance of L or more,
// so the buckets past bucket(L - 1) stay at their initial values. Set max_distance near the
// training length.
//
// What T5 allows, and what is refused (std::invalid_argument naming the numbers): HF accepts any
// num_buckets and max_distance but divides by zero when max_exact is 0 (num_buckets < 2 causal,
// < 4 bidirectional) and takes log(1) = 0 as a divisor when max_distance == max_exact (and gives
// buckets below max_exact, out of order, when max_distance < max_exact): all three are refused.
// An odd num_buckets is accepted as HF takes it: bidirectional, half = num_buckets / 2 rounded
// down, and the last bucket is never used. num_buckets above 2^31 and max_distance above 2^53
// (where max_distance / max_exact would no longer be Python's exact quotient) are refused.
//
// The bias. Query row i is at position query_start + i and key column j at key_start + j
// (RelativeBiasOptions); bias[h][i][j] = table[bucket(key - query)][h]. The bias is constant
// along each diagonal, so the buckets of the Tq + Tk - 1 relative positions are found once per
// call, run by run (a few logarithms per bucket boundary, not one per position), each head's
// values along them laid out once, and every bias row is a copy of a slice of them (with
// streaming stores from 8 MiB of bias on). The backward adds each bucket's gradient, the sum of
// dbias over the (h, i, j) of that bucket, into dtable, summed in double in a fixed order (see
// relative_bias_backward), rounded once: bitwise the same for any thread count and SIMD target,
// no atomics.
//
// Threads: rows (forward) and blocks of 64 query rows of a head (backward) are spread over
// posemb::parallel_for; each is computed alone and the sums are combined in a fixed order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "posemb/matrix_view.hpp"

namespace posemb {

// T5's bucketing of relative positions (the defaults are T5's encoder: 32 buckets, 128).
struct RelativeBuckets {
  std::size_t num_buckets = 32;  // rows of the table (T5: relative_attention_num_buckets)
  std::size_t max_distance =
      128;                    // where the log-spaced buckets end (relative_attention_max_distance)
  bool bidirectional = true;  // true: encoder (keys on both sides); false: causal decoder
};

// The bucket of relative position `relative_position` = key - query, in [0, num_buckets) (see
// the header comment). Any int64 is a relative position. Throws std::invalid_argument for a
// bucketing T5 cannot compute (see the header comment).
std::size_t t5_relative_bucket(std::int64_t relative_position, const RelativeBuckets& buckets = {});

// buckets[k] = t5_relative_bucket(relative_positions[k]) for every k, in one call (the bucketing
// checked once). The spans have one size; buckets may be relative_positions itself (in place),
// not another overlapping range. Throws std::invalid_argument (nothing written) for a bad
// bucketing, sizes that differ or a partial overlap.
void t5_relative_buckets(std::span<std::int64_t> buckets,                   // written over
                         std::span<const std::int64_t> relative_positions,  // same size
                         const RelativeBuckets& buckets_of = {});

// Where queries and keys sit. The relative position of query row i and key column j is
// (key_start + j) - (query_start + i). Each start is at most 2^62.
struct RelativeBiasOptions {
  std::size_t query_start = 0;  // position of query row 0 (cached decoding: the past length)
  std::size_t key_start = 0;    // position of key column 0
};

// bias[h*Tq + i][j] = table[bucket((key_start + j) - (query_start + i))][h] for every head h <
// H = table.cols(), query i < Tq = queries and key j < Tk = bias.cols(). Throws
// std::invalid_argument (naming the numbers; nothing written) for a bad bucketing, a table whose
// rows are not num_buckets, a bias whose rows are not H * Tq, a start past 2^62, or a bias that
// shares memory with the table; MemoryLimitExceeded when its (H, Tq + Tk) scratch is over the
// memory budget. Empty (Tq, Tk or H 0): nothing to write.
void relative_bias_forward(MatrixView<float> bias,         // (H*Tq, Tk), written over
                           MatrixView<const float> table,  // (num_buckets, H)
                           const RelativeBuckets& buckets, std::size_t queries,
                           const RelativeBiasOptions& options = {});

// The backward of relative_bias_forward, with the same bucketing, queries and options:
// dtable[b][h] += sum of dbias[h*Tq + i][j] over the (i, j) whose relative position falls in
// bucket b. Summed in double, in this order: for each block of 64 query rows (rows [64k, 64k +
// 64), in k order), each relative position's sum over the block's rows (ascending i), then a
// bucket's block sum over its relative positions (ascending), then the bucket's total over the
// blocks that reach it (ascending k); rounded once to float and added. Throws like
// relative_bias_forward (dtable in the table's place); nothing is written when it throws.
void relative_bias_backward(MatrixView<float> dtable,       // (num_buckets, H), added into
                            MatrixView<const float> dbias,  // (H*Tq, Tk)
                            const RelativeBuckets& buckets, std::size_t queries,
                            const RelativeBiasOptions& options = {});

}  // namespace posemb
