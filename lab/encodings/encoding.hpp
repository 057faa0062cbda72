// lab/encodings/encoding.hpp: the positional-encoding interface of the lab model (Encoding) and
// what an encoding is (EncodingSpec). The registry of encodings is lab/encodings/registry.hpp.
//
//   const lab::EncodingSpec& spec = lab::find_encoding("learned");   // by name (--pe)
//   spec.has_table;                          // true: a trainable (max_seq_len, d_model) table
//   spec.default_table_rows(26);             // 26: the longest training row's tokens
//   std::unique_ptr<lab::Encoding> enc = spec.make(cfg);   // per model, owns its state
//   enc->embed_forward(x0, tokens, posemb::PositionSource::explicit_ids(pos), wte);
//
// An encoding enters the model in these places, each a call on this interface:
//   input layer   x0 = wte[tokens] + the encoding at each position (learned and sinusoidal go
//                 through posemb::embed_forward / embed_backward; the others use the token-only
//                 overloads), forward and backward;
//   q and k       rotated in every block after the qkv projection (rope), forward and backward;
//   scores        a bias added to every head's attention scores, one row per head indexed by the
//                 distance d = query - key (scores_bias: alibi's -m_h d, a constant; a trained
//                 bias's rows from its own tensors), the same in every layer; the attention's
//                 backward gives the bias's gradient by distance (summed along each diagonal,
//                 over every layer), which scores_bias_backward adds into the encoding's
//                 tensors' gradients;
//   decoding      the same two calls with T = 1, positions PositionSource::contiguous(t) (or
//                 explicit ones for randomized positions).
// Trainable state (the learned table, a learned bias) is the encoding's own: tensors() gives
// it and EncodingSpec::tensors describes it (names and shapes, for any config, nothing allocated:
// a table is (max_seq_len, d_model), a bias by buckets (buckets, heads)); the tensors join the
// model's list for the optimizer and the checkpoint, after wte.weight.
//
// Adding an encoding: one file in lab/encodings/ defining a class derived from Encoding and an
// `extern const EncodingSpec` for it, and its name in the registry (lab/encodings/registry.cpp).
// Nothing else in the lab or the CLI names an encoding: the demo trains those marked in_demo, the
// summary finds the ones a published claim is about by their properties, and --help lists the
// registry (scripts/check-lab-names.py, CTest `lab_names`, fails on a name spelled elsewhere).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"
#include "posemb/layer.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb::lab {

// A tensor's checkpoint name and shape (nothing allocated).
struct TensorInfo {
  std::string name;  // e.g. "blocks.0.attn.qkv.weight"
  std::size_t rows, cols;
};

// One trainable tensor: its checkpoint name, value and gradient (same shape).
struct TensorSlot {
  std::string name;         // e.g. "wpe.weight"
  MatrixView<float> value;  // (rows, cols)
  MatrixView<float> grad;   // (rows, cols)
};

// An encoding inside one model: its state (a table, cached sin/cos) and its computations.
// Methods other than reserve() only read the state, so micro-batches and decoders may call them
// concurrently once reserve() has covered their positions.
class Encoding {
 public:
  virtual ~Encoding() = default;

  // x0 (B*T, C) = wte[tokens] + the encoding's vector at each position: written over.
  virtual void embed_forward(MatrixView<float> x0,              // (B*T, C), written over
                             MatrixView<const TokenId> tokens,  // (B, T)
                             const PositionSource& positions,
                             MatrixView<const float> wte) const = 0;  // (V, C)
  // dwte (V, C) and the gradients of tensors() (grads, in that order, each its tensor's shape)
  // added into, from dx0 (B*T, C).
  virtual void embed_backward(MatrixView<float> dwte,                    // (V, C), added into
                              std::span<const MatrixView<float>> grads,  // added into
                              MatrixView<const float> dx0,               // (B*T, C)
                              MatrixView<const TokenId> tokens,          // (B, T)
                              const PositionSource& positions) const = 0;

  // Rotates q and k of every head in qkv (rows, 3C) in place, row r at position pos[r].
  // Default: nothing (the encoding enters at the input layer only).
  virtual void rotate_qk_forward(MatrixView<float> qkv,              // (rows, 3C), in place
                                 std::span<const std::int64_t> pos,  // (rows)
                                 std::size_t heads) const;
  // The gradient of rotate_qk_forward: dqkv (rows, 3C), in place.
  virtual void rotate_qk_backward(MatrixView<float> dqkv,             // (rows, 3C), in place
                                  std::span<const std::int64_t> pos,  // (rows)
                                  std::size_t heads) const;

  // The bias of every head's attention scores by distance d = query - key >= 0 in tokens, the
  // same in every layer: bias (H, D) written over, row h column d for d < D (D covers the longest
  // sequence of the call). Returns false, bias untouched, when the encoding adds none. Default:
  // none. Only read: may run concurrently.
  virtual bool scores_bias(MatrixView<float> bias) const;  // (H, D)
  // The gradient of scores_bias's rows, dbias (H, D) (summed over every layer, sequence and
  // query pair at each distance), added into the gradients of tensors() (grads, in that order,
  // each its tensor's shape). Called only for an encoding whose spec is trained_bias(). Default:
  // nothing.
  virtual void scores_bias_backward(std::span<const MatrixView<float>> grads,  // added into
                                    MatrixView<const float> dbias) const;      // (H, D)

  // Throws SequenceTooLong when a position of (batch, seq_len) tokens is past what the
  // encoding can represent (a learned table's rows). Default: any position is fine.
  virtual void check_positions(const PositionSource& positions, std::size_t batch,
                               std::size_t seq_len) const;
  // Makes positions [0, positions) available (a computed encoding grows its cached values).
  // Not thread-safe: call before concurrent forward passes.
  virtual void reserve(std::size_t positions);

  // Trainable tensors (checkpoint name, value, gradient), in checkpoint order, as
  // EncodingSpec::tensors describes them. Default: none.
  virtual std::vector<TensorSlot> tensors();
  // Sets the gradients of tensors() to zero (the learned layer records its trained rows).
  virtual void zero_grad();
  // The learned table, or nullptr for a computed encoding.
  virtual const LearnedPositionalEmbedding* learned_table() const;
};

// Where an encoding's positions enter the model (see the list at the top of this file).
enum class EncodingSite {
  input,      // added to the token embedding (a learned table, sinusoidal)
  attention,  // q and k rotated in every block (rope)
  scores,     // a bias on every head's attention scores by distance (alibi; a trained bias)
  nowhere,    // no position signal: the causal mask alone (NoPE)
};

// What an encoding is, independent of any model: its name, properties, defaults and factory.
// Code that treats encodings differently asks for a property (has_table, trainable,
// any_position(), train_positions, site, in_demo), never for a name.
struct EncodingSpec {
  std::string_view name;     // --pe, checkpoints, results
  std::string_view summary;  // one line, for --help and docs
  bool has_table;            // a trainable (max_seq_len, d_model) table: max_seq_len >= 1
  // Where positions enter the model. (The properties added after the first release have
  // defaults, so that a spec written before them still compiles; set them.)
  EncodingSite site = EncodingSite::input;
  bool in_demo = false;           // trained by `posemb demo` (and shown in its summary and charts)
  std::string_view table_tensor;  // the table's checkpoint name ("wpe.weight"); "" without one
  // The position signal is learned (the encoding has tensors to train: a table, a bias), not
  // computed from a formula or absent. Claims tell a trained bias from ALiBi's by it.
  bool trainable = false;
  // The trainable tensors of a model of cfg, in tensors()'s order (names and shapes; none when
  // nullptr). A table: (max_seq_len, d_model).
  std::vector<TensorInfo> (*tensors)(const ModelConfig& cfg) = nullptr;
  PositionMode train_positions;  // positions of training sequences
  // The table's default rows for training rows of at most `train_tokens` tokens (0 without a
  // table).
  std::size_t (*default_table_rows)(std::size_t train_tokens);
  double default_embed_init_std;  // the token embedding's default N(0, std)
  // An encoding with relative-position buckets (model.relative_bias): `given` with its unset
  // (0) fields filled by the encoding's defaults for training rows of at most `train_tokens`
  // tokens. nullptr: the encoding has no buckets, and model.relative_bias must be unset.
  RelativeBiasConfig (*default_relative_bias)(std::size_t train_tokens,
                                              RelativeBiasConfig given) = nullptr;
  // Extra checks of a model config naming this encoding (nullptr: none); throws ConfigError.
  void (*validate)(const ModelConfig& cfg);
  // The encoding's state for a model of config cfg (validated).
  std::unique_ptr<Encoding> (*make)(const ModelConfig& cfg);

  // Computed (or absent) at any position: no last row to run past.
  bool any_position() const { return !has_table; }
  // A bias on the scores whose tensors train (the attention's backward gives its gradient).
  bool trained_bias() const { return site == EncodingSite::scores && trainable; }
  // The encoding takes model.relative_bias (default_relative_bias is set).
  bool has_relative_buckets() const { return default_relative_bias != nullptr; }
  // model.relative_bias for training rows of at most train_tokens tokens: given's unset fields
  // filled by the encoding's defaults; given itself for an encoding without buckets.
  RelativeBiasConfig relative_bias_for(std::size_t train_tokens,
                                       RelativeBiasConfig given = {}) const {
    return has_relative_buckets() ? default_relative_bias(train_tokens, given) : given;
  }
  // The tensors of a model of cfg (tensors, or none).
  std::vector<TensorInfo> tensor_shapes(const ModelConfig& cfg) const {
    return tensors == nullptr ? std::vector<TensorInfo>{} : tensors(cfg);
  }
};

}  // namespace posemb::lab
