// lab/model/decoder.hpp: greedy decoding of a lab::Model, one token position at a time with a KV
// cache (the evaluation's greedy scorer, lab/eval/).
//
//   lab::Decoder dec(model, B, T);                      // room for T tokens per sequence
//   for (t = 0; t < T; ++t) {
//     auto logits = dec.step(tokens_at_t);              // (B, V): the next token's
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lab/model/model.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {

// Incremental (KV-cached) decoding of a batch of sequences, one token position at a time, for
// greedy evaluation: step t feeds token t of every sequence and returns the next-token logits.
// Reads the model only (decoders may run concurrently); a computed encoding must have reserved
// the positions first (Model::reserve_positions).
class Decoder {
 public:
  // Room for `capacity` tokens per sequence.
  Decoder(Model& model, std::size_t batch, std::size_t capacity);
  // The bytes the constructor allocates (saturating), to check against the memory budget first.
  static std::size_t bytes(const ModelConfig& cfg, std::size_t batch, std::size_t capacity);
  // tokens (B) at position t = length() of every sequence (the lookup of row t of a learned
  // table: PositionSource::contiguous(t)). Returns logits (B, V), valid until the next step.
  MatrixView<const float> step(std::span<const TokenId> tokens);
  // tokens (B) at explicit positions (B) (randomized positions).
  MatrixView<const float> step(std::span<const TokenId> tokens,
                               std::span<const std::int64_t> positions);
  std::size_t length() const { return t_; }

 private:
  MatrixView<const float> run(std::span<const TokenId> tokens, const PositionSource& source);
  Model& model_;
  std::size_t batch_, cap_, t_ = 0;
  std::vector<Matrix<float>> cache_;  // per layer (B*cap, 3C)
  Matrix<float> bias_;                // (H, cap): the scores' bias by distance, if any
  bool has_bias_ = false;
  Matrix<float> x_, ln_, qkv_, att_, tmp_, fc_, logits_;
  std::vector<float> mean_, rstd_, scratch_;
  Matrix<std::int64_t> pos_;  // (B, 1)
  Matrix<TokenId> tok_;       // (B, 1)
};

}  // namespace posemb::lab
