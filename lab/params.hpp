// lab/params.hpp: the model's configuration and its parameters.
//
//   lab::ModelConfig cfg;                 // d_model 64, 2 layers, 4 heads, learned table
//   cfg.vocab_size = 12; cfg.max_seq_len = 34;
//   lab::Parameters p(cfg);               // every tensor, one arena for values, one for grads
//   p.initialize(7);                      // GPT-2 init, deterministic for the seed
//   auto w = p.value(p.blocks[0].qkv_w);  // (C, 3C)
//
// Linear weights are stored (in, out): y = x W + b.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/layer_api.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::lab {

// The positional encodings the model can use.
enum class PeKind { learned, learned_randomized, sinusoidal, rope, none };
// "learned", "learned-randomized", "sinusoidal", "rope", "none"; throws std::invalid_argument
// listing the names otherwise.
PeKind parse_pe_kind(std::string_view name);
std::string pe_kind_name(PeKind kind);
// True for the kinds that keep a learned table (and so have a max_seq_len).
bool has_table(PeKind kind);

struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t d_model = 64;
  std::size_t n_layers = 2;
  std::size_t n_heads = 4;
  std::size_t d_ff = 256;
  PeKind pe = PeKind::learned;
  std::size_t max_seq_len = 0;  // rows of the learned table (learned kinds; 0 otherwise)
  double rope_base = 10000.0;
  double sinusoidal_base = 10000.0;
  double init_std = 0.02;
  double embed_init_std = 0.02;  // std of the token embedding's N(0, std) initialization
  // Throws std::invalid_argument naming the field and value when the config is unusable.
  void validate() const;
  std::size_t head_dim() const { return d_model / n_heads; }
};

struct ParamInfo {
  std::string name;  // e.g. "blocks.0.attn.qkv.weight"
  std::size_t rows, cols;
};

class Parameters {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  struct Block {
    std::size_t ln1_w, ln1_b, qkv_w, qkv_b, o_w, o_b, ln2_w, ln2_b, fc_w, fc_b, proj_w, proj_b;
  };

  explicit Parameters(const ModelConfig& cfg);

  // GPT-2 initialization: weights N(0, init_std), biases 0, LayerNorm weights 1, the learned
  // table through the trainable layer's initializer; every tensor gets its own seed derived from
  // `seed` and its index, so the result does not depend on the thread count.
  void initialize(std::uint64_t seed);

  std::size_t count() const { return infos_.size(); }
  const ParamInfo& info(std::size_t i) const { return infos_.at(i); }
  // The index of the tensor called name; throws std::out_of_range.
  std::size_t find(std::string_view name) const;
  MatrixView<float> value(std::size_t i);
  MatrixView<const float> value(std::size_t i) const;
  MatrixView<float> grad(std::size_t i);
  MatrixView<const float> grad(std::size_t i) const;
  void zero_grad();
  // The gradient of tensor i inside another arena laid out like grad_arena() (one per
  // micro-batch in the trainer).
  MatrixView<float> grad_in(std::span<float> arena, std::size_t i) const;
  std::span<float> grad_arena() { return grads_.flat(); }
  std::size_t arena_size() const { return grads_.size(); }
  // Every (value, grad) pair in index order, for the optimizer.
  std::vector<ParamRef> refs();
  std::size_t total_elements() const;

  std::size_t wte = npos, wpe = npos, lnf_w = npos, lnf_b = npos, head = npos;
  std::vector<Block> blocks;

 private:
  std::size_t add(std::string name, std::size_t rows, std::size_t cols);
  std::vector<ParamInfo> infos_;
  std::vector<std::size_t> offsets_;
  Matrix<float> values_, grads_;  // (1, arena)
  double init_std_ = 0.02, embed_init_std_ = 0.02;
};

}  // namespace posemb::lab
