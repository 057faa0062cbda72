// rope: rotary position embedding (Su et al. 2021) of q and k in every head, pairs (2i, 2i+1)
// rotated by position * base^(-2i/head_dim); the input layer is the token rows only (the
// library's token-only posemb::embed_forward). Any position.
//
// The rotation is the lab's own kernel (rotate_pairs below); the library's public rotary
// embedding (posemb/rope.hpp) replaces it in Rope::rotate, one line.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "lab/encoding.hpp"
#include "posemb/embedding.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {
namespace {

// cos and sin of p * base^(-2i/hd) for pairs i < hd/2 and positions p < rows, computed in double.
struct RopeAngles {
  std::size_t head_dim = 0;
  double base = 10000.0;
  Matrix<float> cos, sin;  // (positions, hd/2)

  void grow(std::size_t positions) {
    if (cos.rows() >= positions) return;
    const std::size_t pairs = head_dim / 2;
    Matrix<float> c(positions, pairs), s(positions, pairs);
    for (std::size_t p = 0; p < positions; ++p) {
      for (std::size_t i = 0; i < pairs; ++i) {
        const double inv_freq =
            std::pow(base, -static_cast<double>(2 * i) / static_cast<double>(head_dim));
        const double angle = static_cast<double>(p) * inv_freq;
        c(p, i) = static_cast<float>(std::cos(angle));
        s(p, i) = static_cast<float>(std::sin(angle));
      }
    }
    cos = std::move(c);
    sin = std::move(s);
  }
};

// Rotates (x[2i], x[2i+1]) of q and k of every head of every row of qkv (rows, 3C) by the angle
// of position pos[r] (sign +1), or by its negative (sign -1: the transpose, i.e. the gradient).
void rotate_pairs(MatrixView<float> qkv, std::span<const std::int64_t> pos, const RopeAngles& a,
                  std::size_t heads, float sign) {
  const std::size_t c = qkv.cols() / 3, hd = c / heads, pairs = hd / 2;
  const auto rows = static_cast<std::int64_t>(qkv.rows());
#pragma omp parallel for schedule(static)
  for (std::int64_t ri = 0; ri < rows; ++ri) {
    const auto r = static_cast<std::size_t>(ri);
    const auto p = static_cast<std::size_t>(pos[r]);
    const float* cs = a.cos.row(p).data();
    const float* sn = a.sin.row(p).data();
    float* row = qkv.row(r).data();
    for (std::size_t part = 0; part < 2; ++part) {
      for (std::size_t h = 0; h < heads; ++h) {
        float* x = row + part * c + h * hd;
        for (std::size_t i = 0; i < pairs; ++i) {
          const float u = x[2 * i], v = x[2 * i + 1];
          const float s = sign * sn[i];
          x[2 * i] = u * cs[i] - v * s;
          x[2 * i + 1] = u * s + v * cs[i];
        }
      }
    }
  }
}

class Rope final : public Encoding {
 public:
  explicit Rope(const ModelConfig& cfg) { angles_ = {cfg.head_dim(), cfg.rope_base, {}, {}}; }

  void embed_forward(MatrixView<float> x0, MatrixView<const TokenId> tokens, const PositionSource&,
                     MatrixView<const float> wte) const override {
    posemb::embed_forward(x0, tokens, wte);
  }
  void embed_backward(MatrixView<float> dwte, std::span<const MatrixView<float>>,
                      MatrixView<const float> dx0, MatrixView<const TokenId> tokens,
                      const PositionSource&) const override {
    posemb::embed_backward(dwte, dx0, tokens);
  }
  void rotate_qk_forward(MatrixView<float> qkv, std::span<const std::int64_t> pos,
                         std::size_t heads) const override {
    rotate(qkv, pos, heads, false);
  }
  void rotate_qk_backward(MatrixView<float> dqkv, std::span<const std::int64_t> pos,
                          std::size_t heads) const override {
    rotate(dqkv, pos, heads, true);
  }
  void reserve(std::size_t positions) override { angles_.grow(positions); }

 private:
  // Every position in pos must be below the reserved rows (the model reserves them).
  void rotate(MatrixView<float> qkv, std::span<const std::int64_t> pos, std::size_t heads,
              bool inverse) const {
    rotate_pairs(qkv, pos, angles_, heads, inverse ? -1.0f : 1.0f);
  }
  RopeAngles angles_;
};

}  // namespace

extern const EncodingSpec kRope{
    .name = "rope",
    .summary =
        "rotary embedding of q and k in every head (pairs (2i, 2i+1), base rope_base); "
        "any position",
    .has_table = false,
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
