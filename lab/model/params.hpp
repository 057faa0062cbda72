// lab/model/params.hpp: the model's own parameters (everything but the positional encoding's), in
// one arena for values and one for gradients.
//
//   lab::Parameters p(cfg);               // wte, blocks, final LayerNorm, head
//   auto w = p.value(p.blocks[0].qkv_w);  // (C, 3C)
//   auto g = p.grad_in(arena, p.wte);     // the same tensor's gradient in another arena
//
// Linear weights are stored (in, out): y = x W + b. LayerNorm weights start at 1, everything
// else at 0; lab::Model::initialize draws the weights.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"
#include "lab/encodings/encoding.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::lab {

// True for the name of a LayerNorm weight ("blocks.<l>.ln1.weight", "...ln2.weight",
// "lnf.weight"): initialized to 1, where every other bias-like tensor starts at 0.
bool is_layernorm_weight(std::string_view name);

class Parameters {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  struct Block {
    std::size_t ln1_w, ln1_b, qkv_w, qkv_b, o_w, o_b, ln2_w, ln2_b, fc_w, fc_b, proj_w, proj_b;
  };

  explicit Parameters(const ModelConfig& cfg);
  // The tensors a Parameters of cfg holds, in order (names and shapes; nothing allocated).
  static std::vector<TensorInfo> layout(const ModelConfig& cfg);
  // The floats of one arena (values or gradients) of cfg: every tensor rounded up to 16 floats.
  static std::size_t arena_floats(const ModelConfig& cfg);

  std::size_t count() const { return infos_.size(); }
  const TensorInfo& info(std::size_t i) const { return infos_.at(i); }
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

  std::size_t wte = npos, lnf_w = npos, lnf_b = npos, head = npos;
  std::vector<Block> blocks;

 private:
  std::vector<TensorInfo> infos_;
  std::vector<std::size_t> offsets_;
  Matrix<float> values_, grads_;  // (1, arena)
};

}  // namespace posemb::lab
