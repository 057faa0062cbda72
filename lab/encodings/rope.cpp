// rope: rotary position embedding (Su et al. 2021) of q and k in every head, pairs (2i, 2i+1)
// rotated by position * base^(-2i/head_dim) (the library's posemb::rope_forward, interleaved
// layout); the input layer is the token rows only (the library's token-only
// posemb::embed_forward). Any position. With ModelConfig::rope_scaling, the library's
// frequencies of that method (posemb/rope_scaling.hpp; yarn's attention factor scales the
// cached cos and sin).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lab/encodings/encoding.hpp"
#include "lab/encodings/token_only.hpp"
#include "posemb/matrix.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_scaling.hpp"

namespace posemb::lab {
namespace {

// The library's scaling for the model's (ModelConfig::rope_scaling): L0 is the trained length
// of the methods that need one (dynamic, yarn).
RopeScaling library_scaling(const RopeScalingConfig& r) {
  const double s = r.factor;
  const std::size_t L0 = r.original_len;
  switch (rope_scaling_type_named(r.method).value_or(RopeScalingType::none)) {
    case RopeScalingType::linear:
      return LinearScaling{.factor = s};
    case RopeScalingType::ntk:
      return NtkScaling{.factor = s};
    case RopeScalingType::dynamic:
      return DynamicNtkScaling{.factor = s, .max_position_embeddings = L0};
    case RopeScalingType::yarn: {
      YarnScaling y;  // beta_fast 32, beta_slow 1, attention factor 0.1 ln s + 1
      y.factor = s;
      y.original_max_position_embeddings = L0;
      return y;
    }
    default:
      return NoScaling{};
  }
}

class Rope final : public TokenOnlyInput {
 public:
  explicit Rope(const ModelConfig& cfg)
      : cache_(posemb::Rope(cfg.head_dim(), RopeLayout::interleaved,
                            {.base = cfg.rope_base, .scaling = library_scaling(cfg.rope_scaling)})),
        dynamic_(cfg.rope_scaling.method == rope_scaling_name(RopeScalingType::dynamic)),
        original_len_(cfg.rope_scaling.original_len) {}

  void rotate_qk_forward(MatrixView<float> qkv, std::span<const std::int64_t> pos,
                         std::size_t heads) const override {
    rotate(qkv, pos, heads, false);
  }
  void rotate_qk_backward(MatrixView<float> dqkv, std::span<const std::int64_t> pos,
                          std::size_t heads) const override {
    rotate(dqkv, pos, heads, true);
  }
  void reserve(std::size_t positions) override {
    if (positions > cache_.positions()) cache_.reserve(positions);
  }

 private:
  // q and k, the first two column blocks of qkv (rows, 3C), each row at position pos[row]. Every
  // position must be below the reserved rows (the model reserves them first).
  //
  // Dynamic NTK depends on the length of the sequence run: here the highest position of the call
  // plus one (a batch: its padded length; a decoding step t: t + 1, so that keys cached at
  // earlier steps keep the frequencies of their step, as Hugging Face's cache does). Past L0 the
  // call's rows use a cache of their own, built here for that length (read-only state: calls
  // may still run concurrently).
  void rotate(MatrixView<float> qkv, std::span<const std::int64_t> pos, std::size_t heads,
              bool inverse) const {
    const std::size_t c = qkv.cols() / 3, rows = qkv.rows();
    const auto positions =
        PositionSource::explicit_ids(MatrixView<const std::int64_t>(pos.data(), rows, 1));
    std::optional<RopeCache> longer;
    if (dynamic_ && !pos.empty()) {
      const auto top = static_cast<std::size_t>(*std::max_element(pos.begin(), pos.end())) + 1;
      if (top > original_len_) longer.emplace(cache_.rope().with_seq_len(top), top);
    }
    const RopeCache& cache = longer ? *longer : cache_;
    for (std::size_t block = 0; block < 2; ++block) {
      auto x = qkv.subcols(block * c, c);
      if (inverse) {
        rope_backward(x, heads, rows, 1, positions, cache);
      } else {
        rope_forward(x, heads, rows, 1, positions, cache);
      }
    }
  }
  RopeCache cache_;
  bool dynamic_;
  std::size_t original_len_;
};

}  // namespace

extern const EncodingSpec kRope{
    .name = "rope",
    .summary =
        "rotary embedding of q and k in every head (pairs (2i, 2i+1), base rope_base); "
        "any position",
    .has_table = false,
    .site = EncodingSite::attention,
    .in_demo = true,
    .table_tensor = "",
    .trainable = false,
    .tensors = nullptr,
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate =
        [](const ModelConfig& cfg) {
          try {  // the scaling's own parameters, as the library checks them
            validate_rope_scaling(library_scaling(cfg.rope_scaling), cfg.head_dim(), cfg.rope_base);
          } catch (const RopeScalingError& e) {
            throw ConfigError({"model.rope_scaling"},
                              "model config: rope scaling " + cfg.rope_scaling.text() +
                                  " on a head dimension of " + std::to_string(cfg.head_dim()) +
                                  ": " + e.what());
          }
          if (cfg.head_dim() % 2 != 0) {
            throw ConfigError({"model.d_model", "model.n_heads"},
                              "model config: rope rotates pairs of a head's dimensions and needs "
                              "an even head dimension, got d_model / n_heads = " +
                                  std::to_string(cfg.d_model) + " / " +
                                  std::to_string(cfg.n_heads) + " = " +
                                  std::to_string(cfg.head_dim()));
          }
        },
    .make = [](const ModelConfig& cfg) -> std::unique_ptr<Encoding> {
      return std::make_unique<Rope>(cfg);
    },
};

}  // namespace posemb::lab
