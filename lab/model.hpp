// lab/model.hpp: a small GPT-style decoder-only transformer, forward and backward by hand.
//
// token embedding + positional encoding -> N pre-LayerNorm blocks (causal multi-head
// self-attention, GELU MLP, residuals) -> final LayerNorm -> linear head -> cross-entropy on the
// rows whose target is >= 0. The positional encoding is one of PeKind: a learned table added
// through the trainable layer's add_positions_forward (learned, learned-randomized), the
// sinusoidal encoding added to the token embedding, rotary embedding of q and k (rope), or none.
//
//   lab::Model model(cfg);
//   model.params().initialize(seed);
//   lab::Activations acts(cfg, batch, seq_len);            // planned once per shape
//   double loss = model.forward(acts, tokens, positions, targets);   // (B, T) each
//   model.params().zero_grad();
//   model.backward(acts);                                   // gradients added into params
//
// Positions are explicit (B, T) ids, so contiguous 0..T-1 and Ruoss et al.'s sorted random
// positions go through the same code. A position past a learned table throws SequenceTooLong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lab/attention.hpp"
#include "lab/params.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {

// Every buffer of one forward + backward, sized once for (max_batch, max_seq); a step may use any
// batch <= max_batch and seq_len <= max_seq (it uses the leading rows).
struct Activations {
  Activations(const ModelConfig& cfg, std::size_t max_batch, std::size_t max_seq);
  struct Block {
    Matrix<float> ln1, qkv, att, res1, ln2, fc, fct, fcg, res2;  // (BT, C|3C|C|C|C|F|F|F|C)
    std::vector<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;   // (BT)
    std::vector<float> probs;                                    // (B*H*T*T)
  };
  std::size_t max_batch, max_seq;
  std::size_t batch = 0, seq_len = 0;  // the shape of the last forward
  Matrix<float> x0;                    // (BT, C) embeddings + positions
  std::vector<Block> blocks;
  Matrix<float> lnf, logits;                           // (BT, C), (BT, V)
  std::vector<float> lnf_mean, lnf_rstd;               // (BT)
  Matrix<float> dres, dtmp, datt, dqkv, dfc, dlogits;  // backward scratch
  std::vector<float> losses, att_scratch;
  Matrix<TokenId> tokens;             // (B, T) copy of the last batch
  Matrix<std::int64_t> positions;     // (B, T)
  std::vector<std::int32_t> targets;  // (B*T)
};

class Model {
 public:
  explicit Model(const ModelConfig& cfg);
  const ModelConfig& config() const { return cfg_; }
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }

  // tokens, positions, targets: (B, T) with B <= acts.max_batch, T <= acts.max_seq. Tokens must
  // be < vocab_size; targets are token ids or -1 (not counted). Returns the mean cross-entropy of
  // the counted rows; keeps what backward needs in acts. Throws SequenceTooLong when a position
  // is past the learned table, std::invalid_argument for bad ids or shapes (nothing computed).
  // normalizer: divide the summed loss by this count instead of the batch's own (used when the
  // batch is one micro-batch of a larger one).
  double forward(Activations& acts, MatrixView<const TokenId> tokens,
                 MatrixView<const std::int64_t> positions, MatrixView<const std::int32_t> targets,
                 std::size_t normalizer = 0);
  // Gradients of the last forward's loss, added into params().grad(...), or into `arena` (laid
  // out like params().grad_arena()) when given. Reads the parameters only, so micro-batches may
  // run concurrently, each with its own acts and arena.
  void backward(Activations& acts, std::span<float> arena = {});

  // Adds the positional encoding (sinusoidal or learned) of positions (B, T) to x (B*T, C).
  void add_positions(MatrixView<float> x, MatrixView<const std::int64_t> positions);
  // Grows the sinusoidal / rotary tables to cover positions [0, positions) now, so that forward
  // passes on those positions only read shared state (and may run concurrently).
  void reserve_positions(std::size_t positions);
  // cos/sin table of the rotary embedding, grown to cover `positions` rows.
  const RopeTable& rope_table(std::size_t positions);

 private:
  void check_inputs(MatrixView<const TokenId> tokens, MatrixView<const std::int64_t> positions,
                    std::size_t max_batch, std::size_t max_seq) const;
  ModelConfig cfg_;
  Parameters params_;
  Matrix<float> sin_table_;  // (positions, C), grown on demand
  RopeTable rope_;
};

// Incremental (KV-cached) decoding of a batch of sequences, one token position at a time, for
// greedy evaluation: step t feeds token t of every sequence and returns the next-token logits.
class Decoder {
 public:
  // Room for `capacity` tokens per sequence.
  Decoder(Model& model, std::size_t batch, std::size_t capacity);
  // tokens, positions: (B) for the next position. Returns logits (B, V), valid until next step.
  MatrixView<const float> step(std::span<const TokenId> tokens,
                               std::span<const std::int64_t> positions);
  std::size_t length() const { return t_; }

 private:
  Model& model_;
  std::size_t batch_, cap_, t_ = 0;
  std::vector<Matrix<float>> cache_;  // per layer (B*cap, 3C)
  Matrix<float> x_, ln_, qkv_, att_, tmp_, fc_, logits_;
  std::vector<float> mean_, rstd_, scratch_;
  Matrix<std::int64_t> pos_;
  Matrix<TokenId> tok_;
};

}  // namespace posemb::lab
