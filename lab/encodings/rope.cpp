// rope: rotary position embedding (Su et al. 2021) of q and k in every head, pairs (2i, 2i+1)
// rotated by position * base^(-2i/head_dim) (the library's posemb::rope_forward, interleaved
// layout); the input layer is the token rows only (the library's token-only
// posemb::embed_forward). Any position.
#include <cstdint>
#include <memory>
#include <string>

#include "lab/encoding.hpp"
#include "lab/encodings/token_only.hpp"
#include "posemb/matrix.hpp"
#include "posemb/rope.hpp"

namespace posemb::lab {
namespace {

class Rope final : public TokenOnlyInput {
 public:
  explicit Rope(const ModelConfig& cfg)
      : cache_(posemb::Rope(cfg.head_dim(), RopeLayout::interleaved, {.base = cfg.rope_base})) {}

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
  void rotate(MatrixView<float> qkv, std::span<const std::int64_t> pos, std::size_t heads,
              bool inverse) const {
    const std::size_t c = qkv.cols() / 3, rows = qkv.rows();
    const auto positions =
        PositionSource::explicit_ids(MatrixView<const std::int64_t>(pos.data(), rows, 1));
    for (std::size_t block = 0; block < 2; ++block) {
      auto x = qkv.subcols(block * c, c);
      if (inverse) {
        rope_backward(x, heads, rows, 1, positions, cache_);
      } else {
        rope_forward(x, heads, rows, 1, positions, cache_);
      }
    }
  }
  RopeCache cache_;
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
    .train_positions = PositionMode::contiguous,
    .default_table_rows = [](std::size_t) { return std::size_t{0}; },
    .default_embed_init_std = 0.02,
    .validate =
        [](const ModelConfig& cfg) {
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
