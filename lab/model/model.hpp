// lab/model/model.hpp: a small GPT-style decoder-only transformer, forward and backward by hand.
//
// input layer (token rows + the positional encoding, lab/encodings/encoding.hpp) -> N pre-LayerNorm
// blocks (causal multi-head self-attention, GELU MLP, residuals) -> final LayerNorm -> linear head
// -> cross-entropy on the rows whose target is >= 0. The input layer is the library's fused
// posemb::embed_forward / embed_backward; the learned table is a
// posemb::LearnedPositionalEmbedding owned by the encoding.
//
//   lab::Model model(cfg);
//   model.initialize(seed);
//   lab::Activations acts(cfg, batch, seq_len);            // planned once per shape
//   model.reserve_positions(seq_len);                       // computed encodings: before forwards
//   double loss = model.forward(acts, tokens, positions, targets);   // (B, T) each
//   model.zero_grad();
//   model.backward(acts);                                   // gradients added into the model's
//
//   lab::Model mine(cfg, my_spec);   // an encoding of one's own, registered or not (the tests')
//
// Positions are explicit (B, T) ids, so contiguous 0..T-1 and Ruoss et al.'s sorted random
// positions go through the same code. A position past a learned table throws SequenceTooLong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lab/encodings/encoding.hpp"
#include "lab/model/params.hpp"
#include "posemb/matrix.hpp"
#include "posemb/optimizers.hpp"

namespace posemb::lab {

// Every buffer of one forward + backward, sized once for (max_batch, max_seq); a step may use any
// batch <= max_batch and seq_len <= max_seq (it uses the leading rows).
struct Activations {
  Activations(const ModelConfig& cfg, std::size_t max_batch, std::size_t max_seq);
  // The bytes the constructor allocates (saturating at SIZE_MAX), to check against the memory
  // budget (posemb/memory.hpp) first.
  static std::size_t bytes(const ModelConfig& cfg, std::size_t max_batch, std::size_t max_seq);
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
  std::vector<float> losses;
  Matrix<float> bias, dbias;          // (H, max_seq): the scores' bias by distance, its gradient
  Matrix<TokenId> tokens;             // (B, T) copy of the last batch
  Matrix<std::int64_t> positions;     // (B, T)
  std::vector<std::int32_t> targets;  // (B*T)
};

// Gradient buffers for every trainable tensor, laid out like the model's own (the trainer keeps
// one per micro-batch, so micro-batches run concurrently and are summed in a fixed order).
struct Gradients {
  Matrix<float> arena;                  // (1, Parameters::arena_size())
  std::vector<Matrix<float>> encoding;  // one per Encoding::tensors() entry, its shape
};

class Model {
 public:
  // Throws ConfigError for an unusable cfg, MemoryLimitExceeded (before allocating) when the
  // model's memory (bytes(cfg)) exceeds the memory budget.
  explicit Model(const ModelConfig& cfg);
  // The same with the encoding `spec` (cfg.pe its name), registered or not.
  Model(const ModelConfig& cfg, const EncodingSpec& spec);
  // The trainable tensors of a model of cfg in checkpoint order (tensors()): names and shapes,
  // nothing allocated; the encoding's as its spec describes them (EncodingSpec::tensors).
  static std::vector<TensorInfo> tensor_shapes(const ModelConfig& cfg);
  static std::vector<TensorInfo> tensor_shapes(const ModelConfig& cfg, const EncodingSpec& spec);
  // The bytes of a model of cfg (saturating): parameters and their gradients, the encoding's
  // tensors and their gradients (a learned table's rows flagged too), and for a computed encoding
  // (sinusoidal, rope) its cache of `positions` positions (an upper bound, growth included).
  static std::size_t bytes(const ModelConfig& cfg, std::size_t positions = 0);
  static std::size_t bytes(const ModelConfig& cfg, const EncodingSpec& spec, std::size_t positions);
  // The multiply-adds of one forward pass over a sequence of `tokens` tokens: each token's
  // projections and MLP in every layer and the head, and attention over the tokens before it
  // (scores and values). The unit of the lab's work limits (limits::eval_work, train_work).
  static double forward_work(const ModelConfig& cfg, std::size_t tokens);
  const ModelConfig& config() const { return cfg_; }
  const EncodingSpec& encoding_spec() const { return *spec_; }
  Encoding& encoding() { return *enc_; }
  const Encoding& encoding() const { return *enc_; }
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }

  // Every trainable tensor in checkpoint order: wte.weight, the encoding's (wpe.weight), the
  // blocks, lnf, head. Views into the model; the order is the optimizer's and the checkpoint's.
  std::vector<TensorSlot> tensors();
  // tensors() as the optimizer's (value, gradient) list.
  std::vector<ParamRef> param_refs();
  std::size_t total_elements();
  // GPT-2 initialization: weights N(0, init_std) (the token embedding N(0, embed_init_std)),
  // biases 0, LayerNorm weights 1. Tensor k of tensors() is drawn from seed * 1000003 + k, so
  // the result does not depend on the thread count.
  void initialize(std::uint64_t seed);
  // Zeroes every gradient (the learned table records its trained rows first).
  void zero_grad();
  // Zeroed gradient buffers shaped like the model's.
  Gradients make_gradients();

  // tokens, positions, targets: (B, T) with B <= acts.max_batch, T <= acts.max_seq. Tokens must
  // be < vocab_size; targets are token ids or -1 (not counted). Returns the mean cross-entropy of
  // the counted rows; keeps what backward needs in acts (the inputs are copied there, once).
  // Reads the model only, so forwards may run concurrently, each with its own acts, once
  // reserve_positions has covered their positions. Throws SequenceTooLong when a position is
  // past the learned table, std::logic_error when it is past the positions reserved for a
  // computed encoding, std::out_of_range for a token id outside the vocabulary,
  // std::invalid_argument for bad targets, positions or shapes (no kernel run).
  // normalizer: divide the summed loss by this count instead of the batch's own (used when the
  // batch is one micro-batch of a larger one).
  double forward(Activations& acts, MatrixView<const TokenId> tokens,
                 MatrixView<const std::int64_t> positions, MatrixView<const std::int32_t> targets,
                 std::size_t normalizer = 0);
  // The same on the rows `rows` of tokens, positions, targets (each (B_all, T)), in that order:
  // row i of the forward is row rows[i] of the inputs (empty: every row in order). The trainer's
  // micro-batches, gathered straight from the step's batch (rows sorted by length, T cut to
  // their longest: a column view).
  double forward(Activations& acts, MatrixView<const TokenId> tokens,
                 MatrixView<const std::int64_t> positions, MatrixView<const std::int32_t> targets,
                 std::span<const std::size_t> rows, std::size_t normalizer);
  // Gradients of the last forward's loss, added into the model's own gradients, or into `into`
  // (from make_gradients()) when given; a trained bias on the scores gets the attention's
  // gradient of its rows by distance (Encoding::scores_bias_backward). Reads the parameters only,
  // so micro-batches may run concurrently, each with its own acts and gradients.
  void backward(Activations& acts, Gradients* into = nullptr);

  // Makes positions [0, positions) available to a computed encoding (it grows its cached
  // values), so that forward passes and decoders on those positions only read shared state and
  // may run concurrently. The one call that changes the encoding: not thread-safe, call it before
  // any concurrent forward (forward and Decoder::step never call it; they throw when a position
  // is not covered).
  void reserve_positions(std::size_t positions);
  // Throws std::logic_error naming `op` when a computed encoding has not reserved position top.
  void require_positions(std::size_t top, const char* op) const;

 private:
  // Copies rows of the inputs into acts (checking shapes and targets); returns the batch size.
  std::size_t gather_inputs(Activations& acts, MatrixView<const TokenId> tokens,
                            MatrixView<const std::int64_t> positions,
                            MatrixView<const std::int32_t> targets,
                            std::span<const std::size_t> rows) const;
  ModelConfig cfg_;
  const EncodingSpec* spec_;
  Parameters params_;
  std::unique_ptr<Encoding> enc_;
  std::size_t reserved_ = 0;  // positions reserve_positions has covered
};

}  // namespace posemb::lab
