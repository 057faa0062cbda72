// Greedy decoding with a KV cache (lab/model/decoder.hpp).
#include "lab/model/decoder.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "lab/model/attention.hpp"
#include "lab/model/kernels.hpp"
#include "posemb/memory.hpp"

namespace posemb::lab {
namespace {

std::size_t top_position(std::span<const std::int64_t> pos) {
  std::int64_t top = 0;
  for (auto p : pos) top = std::max(top, p);
  return static_cast<std::size_t>(top);
}

// Saturating sums and products for the estimate: an overflow means "more than any budget".
std::size_t sum_of(std::initializer_list<std::size_t> terms) {
  std::size_t s = 0;
  for (std::size_t t : terms) s = saturating_add(s, t);
  return s;
}
std::size_t mul_of(std::initializer_list<std::size_t> factors) {
  std::size_t p = 1;
  for (std::size_t f : factors) p = saturating_mul(p, f);
  return p;
}

}  // namespace

std::size_t Decoder::bytes(const ModelConfig& cfg, std::size_t B, std::size_t cap) {
  const std::size_t C = cfg.d_model, f = sizeof(float);
  // The KV cache (per layer B*cap x 3C), x, ln, att, tmp (C), qkv (3C), fc (F), logits (V), two
  // row statistics, the attention scratch (B*H*cap), the scores' bias (H*cap), positions and
  // tokens.
  return sum_of({mul_of({cfg.n_layers, B, cap, 3 * C, f}),
                 mul_of({B, 7 * C + cfg.d_ff + cfg.vocab_size + 2, f}),
                 mul_of({B + 1, cfg.n_heads, cap, f}),
                 mul_of({B, sizeof(std::int64_t) + sizeof(TokenId)})});
}

Decoder::Decoder(Model& model, std::size_t batch, std::size_t capacity)
    : model_(model), batch_(batch), cap_(capacity) {
  const auto& cfg = model.config();
  const std::size_t C = cfg.d_model;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) cache_.emplace_back(batch * capacity, 3 * C);
  bias_ = Matrix<float>(cfg.n_heads, capacity);
  has_bias_ = model.encoding().scores_bias(bias_.view());
  x_ = Matrix<float>(batch, C);
  ln_ = Matrix<float>(batch, C);
  qkv_ = Matrix<float>(batch, 3 * C);
  att_ = Matrix<float>(batch, C);
  tmp_ = Matrix<float>(batch, C);
  fc_ = Matrix<float>(batch, cfg.d_ff);
  logits_ = Matrix<float>(batch, cfg.vocab_size);
  mean_.resize(batch);
  rstd_.resize(batch);
  scratch_.resize(batch * cfg.n_heads * capacity);
  pos_ = Matrix<std::int64_t>(batch, 1);
  tok_ = Matrix<TokenId>(batch, 1);
}

MatrixView<const float> Decoder::step(std::span<const TokenId> tokens) {
  for (std::size_t b = 0; b < batch_; ++b) pos_(b, 0) = static_cast<std::int64_t>(t_);
  return run(tokens, PositionSource::contiguous(t_));
}

MatrixView<const float> Decoder::step(std::span<const TokenId> tokens,
                                      std::span<const std::int64_t> positions) {
  if (positions.size() != batch_) {
    throw std::invalid_argument("Decoder::step: " + std::to_string(positions.size()) +
                                " positions for a batch of " + std::to_string(batch_));
  }
  for (std::size_t b = 0; b < batch_; ++b) {
    if (positions[b] < 0) {
      throw std::invalid_argument("Decoder::step: negative position " +
                                  std::to_string(positions[b]) + " at batch row " +
                                  std::to_string(b));
    }
  }
  std::copy(positions.begin(), positions.end(), pos_.data());
  const MatrixView<const std::int64_t> ids = pos_.cview();
  return run(tokens, PositionSource::explicit_ids(ids));
}

MatrixView<const float> Decoder::run(std::span<const TokenId> tokens,
                                     const PositionSource& source) {
  const auto& cfg = model_.config();
  auto& P = model_.params();
  auto& enc = model_.encoding();
  const std::size_t B = batch_, C = cfg.d_model, H = cfg.n_heads;
  if (tokens.size() != B) {
    throw std::invalid_argument("Decoder::step: " + std::to_string(tokens.size()) +
                                " tokens for a batch of " + std::to_string(B));
  }
  if (t_ >= cap_) {
    throw std::out_of_range("Decoder::step: position " + std::to_string(t_) +
                            " is past the capacity of " + std::to_string(cap_) + " tokens");
  }
  std::copy(tokens.begin(), tokens.end(), tok_.data());
  const std::span<const std::int64_t> pos(pos_.data(), B);
  model_.require_positions(top_position(pos), "Decoder::step");
  // The input layer at this step's positions (validates token ids and positions first).
  enc.embed_forward(x_, tok_, source, P.value(P.wte));
  const std::size_t t = t_;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    const auto& pb = P.blocks[l];
    layernorm_forward(ln_, mean_, rstd_, x_, P.value(pb.ln1_w), P.value(pb.ln1_b));
    linear_forward(qkv_, ln_, P.value(pb.qkv_w), P.value(pb.qkv_b));
    enc.rotate_qk_forward(qkv_, pos, H);
    for (std::size_t b = 0; b < B; ++b) {
      std::copy_n(qkv_.row(b).data(), 3 * C, cache_[l].row(b * cap_ + t).data());
    }
    attention_step(att_, scratch_, cache_[l], B, cap_, t, H,
                   has_bias_ ? bias_.cview() : MatrixView<const float>());
    linear_forward(tmp_, att_, P.value(pb.o_w), P.value(pb.o_b));
    add_into(x_, tmp_);
    layernorm_forward(ln_, mean_, rstd_, x_, P.value(pb.ln2_w), P.value(pb.ln2_b));
    linear_forward(fc_, ln_, P.value(pb.fc_w), P.value(pb.fc_b));
    gelu_forward(fc_, {}, fc_);
    linear_forward(tmp_, fc_, P.value(pb.proj_w), P.value(pb.proj_b));
    add_into(x_, tmp_);
  }
  layernorm_forward(ln_, mean_, rstd_, x_, P.value(P.lnf_w), P.value(P.lnf_b));
  linear_forward(logits_, ln_, P.value(P.head), {});
  ++t_;
  return logits_;
}

}  // namespace posemb::lab
