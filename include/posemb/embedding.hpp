// posemb/embedding.hpp: the fused token + position embedding (GPT-2's input layer) and the
// position-only add, forward and backward.
//
//   // tokens (B, T); wte (V, C); wpe (max_seq_len, C); out (B*T, C)
//   posemb::embed_forward(out, tokens, posemb::PositionSource::contiguous(), wte, wpe);
//   // ... dout = dLoss/dout ...
//   posemb::embed_backward(dwte, dwpe, dout, tokens, posemb::PositionSource::contiguous());
//
//   // Tables in bfloat16 or float16 (half the bytes to read); the output stays float.
//   posemb::Matrix<posemb::bfloat16> wte16(V, C), wpe16(max_seq_len, C);
//   posemb::embed_forward(out, tokens, posemb::PositionSource::contiguous(), wte16, wpe16);
//
// Argument order, the same in every function here and in the layer: outputs first (the
// forward's activation, the backward's gradients), then the incoming gradient (backward), then
// the batch (tokens, or batch and seq_len) and where its positions come from, then the tables
// (forward). A named Matrix passes as an output; a temporary one does not compile.
//
// Every position and token id is validated before anything is written: on an exception the
// outputs are untouched. The kernels run on the threads of posemb/parallel.hpp, with the SIMD
// instructions of posemb/simd.hpp.
//
// 16-bit tables: every bfloat16 and float16 value is exactly a float, so the forward from a
// 16-bit table equals, bit for bit, the float forward on the table widened to float. Gradients are
// float whatever the tables: the backward never reads the tables.
//
// Determinism: the backward gives bitwise identical gradients for any thread count, SIMD target
// and run. Every gradient row adds its contributions in ascending (b, t) order, exactly the
// order of the serial loop
//   for b, for t: dwte[tokens[b,t]] += dout[b*T+t]; dwpe[pos[b,t]] += dout[b*T+t]
// and each row is written by one thread. Rows used once are added directly; with contiguous
// positions each position row sums its batch rows in order; only rows used several times
// otherwise (repeated token ids, repeated explicit positions) are first bucketed. No atomics.
#pragma once

#include <cstddef>

#include "posemb/half.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb {

// out[b*T + t, :] = wte[tokens[b,t], :] + wpe[pos[b,t], :]   (pads: the wte row only).
// Throws std::out_of_range for a token id outside [0, V), SequenceTooLong for a position past
// wpe, std::invalid_argument for shape mismatches or an empty batch.
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   const PositionSource& positions,
                   MatrixView<const float> wte,   // (V, C)
                   MatrixView<const float> wpe);  // (max_seq_len, C)
// The same from bfloat16 or float16 tables (both of the same type), widened exactly.
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   const PositionSource& positions,
                   MatrixView<const bfloat16> wte,    // (V, C)
                   MatrixView<const bfloat16> wpe);   // (max_seq_len, C)
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   const PositionSource& positions,
                   MatrixView<const float16> wte,   // (V, C)
                   MatrixView<const float16> wpe);  // (max_seq_len, C)

// dwte[tokens[b,t], :] += dout[b*T+t, :]; dwpe[pos[b,t], :] += dout[b*T+t, :] (pads: dwte
// only). ADDS into dwte and dwpe. Deterministic (bitwise identical for any thread count). The
// gradients are float for tables of any element type.
void embed_backward(MatrixView<float> dwte,            // (V, C), added into
                    MatrixView<float> dwpe,            // (max_seq_len, C), added into
                    MatrixView<const float> dout,      // (B*T, C)
                    MatrixView<const TokenId> tokens,  // (B, T)
                    const PositionSource& positions);

// Token rows only, for a model whose positions enter elsewhere (rotary embedding, or none):
// out[b*T + t, :] = wte[tokens[b,t], :]. Throws like embed_forward.
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   MatrixView<const float> wte);      // (V, C)
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   MatrixView<const bfloat16> wte);   // (V, C)
void embed_forward(MatrixView<float> out,             // (B*T, C), written over
                   MatrixView<const TokenId> tokens,  // (B, T)
                   MatrixView<const float16> wte);    // (V, C)

// dwte[tokens[b,t], :] += dout[b*T+t, :]. ADDS into dwte. Deterministic like embed_backward.
void embed_backward(MatrixView<float> dwte,             // (V, C), added into
                    MatrixView<const float> dout,       // (B*T, C)
                    MatrixView<const TokenId> tokens);  // (B, T)

// Position-only, for an activation that already holds the token rows: x[b*T + t, :] +=
// wpe[pos[b,t], :], in place (pads: nothing). batch * seq_len must equal x.rows(). Throws like
// embed_forward.
void add_positions_forward(MatrixView<float> x,  // (B*T, C), added into
                           std::size_t batch, std::size_t seq_len, const PositionSource& positions,
                           MatrixView<const float> wpe);  // (max_seq_len, C)
void add_positions_forward(MatrixView<float> x,           // (B*T, C), added into
                           std::size_t batch, std::size_t seq_len, const PositionSource& positions,
                           MatrixView<const bfloat16> wpe);  // (max_seq_len, C)
void add_positions_forward(MatrixView<float> x,              // (B*T, C), added into
                           std::size_t batch, std::size_t seq_len, const PositionSource& positions,
                           MatrixView<const float16> wpe);  // (max_seq_len, C)

// dwpe[pos[b,t], :] += dx[b*T + t, :]. ADDS into dwpe. Deterministic like embed_backward.
void add_positions_backward(MatrixView<float> dwpe,      // (max_seq_len, C), added into
                            MatrixView<const float> dx,  // (B*T, C)
                            std::size_t batch, std::size_t seq_len,
                            const PositionSource& positions);

}  // namespace posemb
