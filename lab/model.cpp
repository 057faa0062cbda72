#include "lab/model.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lab/kernels.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb::lab {
namespace {

// The leading n rows of m.
template <class T>
MatrixView<T> head_rows(Matrix<T>& m, std::size_t n) {
  return m.view().subrows(0, n);
}
MatrixView<const float> chead(const Matrix<float>& m, std::size_t n) {
  return m.cview().subrows(0, n);
}

}  // namespace

Activations::Activations(const ModelConfig& cfg, std::size_t mb, std::size_t ms)
    : max_batch(mb), max_seq(ms) {
  const std::size_t n = mb * ms, C = cfg.d_model, F = cfg.d_ff, V = cfg.vocab_size;
  x0 = Matrix<float>(n, C);
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    Block b;
    b.ln1 = Matrix<float>(n, C);
    b.qkv = Matrix<float>(n, 3 * C);
    b.att = Matrix<float>(n, C);
    b.res1 = Matrix<float>(n, C);
    b.ln2 = Matrix<float>(n, C);
    b.fc = Matrix<float>(n, F);
    b.fct = Matrix<float>(n, F);
    b.fcg = Matrix<float>(n, F);
    b.res2 = Matrix<float>(n, C);
    b.ln1_mean.resize(n);
    b.ln1_rstd.resize(n);
    b.ln2_mean.resize(n);
    b.ln2_rstd.resize(n);
    b.probs.resize(mb * cfg.n_heads * ms * ms);
    blocks.push_back(std::move(b));
  }
  lnf = Matrix<float>(n, C);
  logits = Matrix<float>(n, V);
  lnf_mean.resize(n);
  lnf_rstd.resize(n);
  dres = Matrix<float>(n, C);
  dtmp = Matrix<float>(n, C);
  datt = Matrix<float>(n, C);
  dqkv = Matrix<float>(n, 3 * C);
  dfc = Matrix<float>(n, F);
  dlogits = Matrix<float>(n, V);
  losses.resize(n);
  att_scratch.resize(mb * cfg.n_heads * ms);
  tokens = Matrix<TokenId>(mb, ms);
  positions = Matrix<std::int64_t>(mb, ms);
  targets.resize(n);
}

Model::Model(const ModelConfig& cfg) : cfg_(cfg), params_(cfg) {
  blas_single_threaded();
  if (cfg_.pe == PeKind::rope) rope_ = RopeTable(cfg_.head_dim(), cfg_.rope_base);
}

const RopeTable& Model::rope_table(std::size_t positions) {
  rope_.ensure(positions);
  return rope_;
}

void Model::check_inputs(MatrixView<const TokenId> tokens, MatrixView<const std::int64_t> positions,
                         std::size_t max_batch, std::size_t max_seq) const {
  const std::size_t B = tokens.rows(), T = tokens.cols();
  if (B == 0 || T == 0 || B > max_batch || T > max_seq) {
    throw std::invalid_argument("Model::forward: batch " + std::to_string(B) + " x " +
                                std::to_string(T) + " tokens does not fit the planned " +
                                std::to_string(max_batch) + " x " + std::to_string(max_seq));
  }
  if (positions.rows() != B || positions.cols() != T) {
    throw std::invalid_argument("Model::forward: positions are " +
                                std::to_string(positions.rows()) + " x " +
                                std::to_string(positions.cols()) + ", tokens " + std::to_string(B) +
                                " x " + std::to_string(T));
  }
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const TokenId id = tokens(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= cfg_.vocab_size) {
        throw std::invalid_argument("Model::forward: token id " + std::to_string(id) +
                                    " at batch row " + std::to_string(b) + ", token " +
                                    std::to_string(t) + " is outside the vocabulary of " +
                                    std::to_string(cfg_.vocab_size));
      }
      if (positions(b, t) < 0) {
        throw std::invalid_argument("Model::forward: negative position " +
                                    std::to_string(positions(b, t)) + " at batch row " +
                                    std::to_string(b) + ", token " + std::to_string(t));
      }
    }
  }
}

void Model::reserve_positions(std::size_t positions) {
  if (cfg_.pe == PeKind::rope) rope_.ensure(positions);
  if (cfg_.pe == PeKind::sinusoidal && sin_table_.rows() < positions) {
    Matrix<float> table(std::max(positions, 2 * sin_table_.rows()), cfg_.d_model);
    sinusoidal_positional_encoding_into(table.view(), 0, {.base = cfg_.sinusoidal_base});
    sin_table_ = std::move(table);
  }
}

void Model::add_positions(MatrixView<float> x, MatrixView<const std::int64_t> positions) {
  const std::size_t B = positions.rows(), T = positions.cols(), C = cfg_.d_model;
  if (has_table(cfg_.pe)) {
    add_positions_forward(x, B, T, PositionSource::explicit_ids(positions),
                          params_.value(params_.wpe));
  } else if (cfg_.pe == PeKind::sinusoidal) {
    std::int64_t top = 0;
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t t = 0; t < T; ++t) top = std::max(top, positions(b, t));
    }
    reserve_positions(static_cast<std::size_t>(top) + 1);
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t t = 0; t < T; ++t) {
        const float* pe = sin_table_.data() + static_cast<std::size_t>(positions(b, t)) * C;
        float* xr = x.row(b * T + t).data();
        for (std::size_t c = 0; c < C; ++c) xr[c] += pe[c];
      }
    }
  }
}

double Model::forward(Activations& a, MatrixView<const TokenId> tokens,
                      MatrixView<const std::int64_t> positions,
                      MatrixView<const std::int32_t> targets, std::size_t normalizer) {
  check_inputs(tokens, positions, a.max_batch, a.max_seq);
  const std::size_t B = tokens.rows(), T = tokens.cols(), n = B * T, C = cfg_.d_model;
  const std::size_t H = cfg_.n_heads;
  if (targets.rows() != B || targets.cols() != T) {
    throw std::invalid_argument("Model::forward: targets are " + std::to_string(targets.rows()) +
                                " x " + std::to_string(targets.cols()) + ", tokens " +
                                std::to_string(B) + " x " + std::to_string(T));
  }
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const std::int32_t y = targets(b, t);
      if (y < -1 || (y >= 0 && static_cast<std::size_t>(y) >= cfg_.vocab_size)) {
        throw std::invalid_argument("Model::forward: target " + std::to_string(y) +
                                    " at batch row " + std::to_string(b) + ", token " +
                                    std::to_string(t) + " is neither -1 nor a token id below " +
                                    std::to_string(cfg_.vocab_size));
      }
    }
  }
  // Contiguous copies (B, T): the inputs may come in as strided views.
  auto tok = MatrixView<TokenId>(a.tokens.data(), B, T);
  auto pos = MatrixView<std::int64_t>(a.positions.data(), B, T);
  std::span<std::int32_t> tg(a.targets.data(), n);
  for (std::size_t b = 0; b < B; ++b) {
    std::copy_n(tokens.row(b).data(), T, tok.row(b).data());
    std::copy_n(positions.row(b).data(), T, pos.row(b).data());
    std::copy_n(targets.row(b).data(), T, tg.data() + b * T);
  }
  a.batch = B;
  a.seq_len = T;
  auto& P = params_;
  // Embeddings: token rows, then the positional encoding (validates positions first).
  auto x0 = head_rows(a.x0, n);
  const auto wte = P.value(P.wte);
  for (std::size_t r = 0; r < n; ++r) {
    std::copy_n(wte.row(static_cast<std::size_t>(tok.data()[r])).data(), C, x0.row(r).data());
  }
  add_positions(x0, pos);
  std::span<const std::int64_t> pos_flat(pos.data(), n);
  MatrixView<const float> x = x0;
  for (std::size_t l = 0; l < cfg_.n_layers; ++l) {
    auto& blk = a.blocks[l];
    const auto& pb = P.blocks[l];
    layernorm_forward(head_rows(blk.ln1, n), blk.ln1_mean, blk.ln1_rstd, x, P.value(pb.ln1_w),
                      P.value(pb.ln1_b));
    linear_forward(head_rows(blk.qkv, n), chead(blk.ln1, n), P.value(pb.qkv_w), P.value(pb.qkv_b));
    if (cfg_.pe == PeKind::rope) {
      std::int64_t top = 0;
      for (auto p : pos_flat) top = std::max(top, p);
      rope_forward(head_rows(blk.qkv, n), pos_flat, rope_table(static_cast<std::size_t>(top) + 1),
                   H);
    }
    attention_forward(head_rows(blk.att, n), blk.probs, chead(blk.qkv, n), B, T, H);
    linear_forward(head_rows(blk.res1, n), chead(blk.att, n), P.value(pb.o_w), P.value(pb.o_b));
    add_into(head_rows(blk.res1, n), x);
    layernorm_forward(head_rows(blk.ln2, n), blk.ln2_mean, blk.ln2_rstd, chead(blk.res1, n),
                      P.value(pb.ln2_w), P.value(pb.ln2_b));
    linear_forward(head_rows(blk.fc, n), chead(blk.ln2, n), P.value(pb.fc_w), P.value(pb.fc_b));
    gelu_forward(head_rows(blk.fcg, n), head_rows(blk.fct, n), chead(blk.fc, n));
    linear_forward(head_rows(blk.res2, n), chead(blk.fcg, n), P.value(pb.proj_w),
                   P.value(pb.proj_b));
    add_into(head_rows(blk.res2, n), chead(blk.res1, n));
    x = chead(blk.res2, n);
  }
  layernorm_forward(head_rows(a.lnf, n), a.lnf_mean, a.lnf_rstd, x, P.value(P.lnf_w),
                    P.value(P.lnf_b));
  linear_forward(head_rows(a.logits, n), chead(a.lnf, n), P.value(P.head), {});
  return softmax_cross_entropy(head_rows(a.dlogits, n), std::span<float>(a.losses.data(), n),
                               chead(a.logits, n), tg, normalizer);
}

void Model::backward(Activations& a, std::span<float> arena) {
  const std::size_t B = a.batch, T = a.seq_len, n = B * T, C = cfg_.d_model, H = cfg_.n_heads;
  if (n == 0) throw std::logic_error("Model::backward: no forward to differentiate");
  const auto& P = params_;
  if (arena.empty()) arena = params_.grad_arena();
  auto G = [&](std::size_t i) { return P.grad_in(arena, i); };
  auto dres = head_rows(a.dres, n);
  auto dtmp = head_rows(a.dtmp, n);
  const auto& last = a.blocks.back();
  // Head and final LayerNorm: dres = d(loss)/d(last residual).
  linear_backward(dtmp, G(P.head), {}, chead(a.dlogits, n), chead(a.lnf, n), P.value(P.head));
  std::fill(dres.data(), dres.data() + n * C, 0.0f);
  layernorm_backward(dres, G(P.lnf_w), G(P.lnf_b), dtmp, chead(last.res2, n), a.lnf_mean,
                     a.lnf_rstd, P.value(P.lnf_w));
  std::span<const std::int64_t> pos_flat(a.positions.data(), n);
  for (std::size_t li = cfg_.n_layers; li-- > 0;) {
    auto& blk = a.blocks[li];
    const auto& pb = P.blocks[li];
    MatrixView<const float> x_in = li == 0 ? chead(a.x0, n) : chead(a.blocks[li - 1].res2, n);
    // MLP: res2 = res1 + proj(gelu(fc(ln2(res1)))).
    auto dfc = head_rows(a.dfc, n);
    linear_backward(dfc, G(pb.proj_w), G(pb.proj_b), dres, chead(blk.fcg, n), P.value(pb.proj_w));
    gelu_backward(dfc, dfc, chead(blk.fc, n), chead(blk.fct, n));
    linear_backward(dtmp, G(pb.fc_w), G(pb.fc_b), dfc, chead(blk.ln2, n), P.value(pb.fc_w));
    layernorm_backward(dres, G(pb.ln2_w), G(pb.ln2_b), dtmp, chead(blk.res1, n), blk.ln2_mean,
                       blk.ln2_rstd, P.value(pb.ln2_w));
    // Attention: res1 = x_in + proj(attention(qkv(ln1(x_in)))).
    auto datt = head_rows(a.datt, n);
    auto dqkv = head_rows(a.dqkv, n);
    linear_backward(datt, G(pb.o_w), G(pb.o_b), dres, chead(blk.att, n), P.value(pb.o_w));
    attention_backward(dqkv, a.att_scratch, datt, blk.probs, chead(blk.qkv, n), B, T, H);
    if (cfg_.pe == PeKind::rope) rope_backward(dqkv, pos_flat, rope_, H);
    linear_backward(dtmp, G(pb.qkv_w), G(pb.qkv_b), dqkv, chead(blk.ln1, n), P.value(pb.qkv_w));
    layernorm_backward(dres, G(pb.ln1_w), G(pb.ln1_b), dtmp, x_in, blk.ln1_mean, blk.ln1_rstd,
                       P.value(pb.ln1_w));
  }
  // Embeddings: dres = d(loss)/d(x0). Token rows by column tiles, rows in order (deterministic).
  auto dwte = G(P.wte);
  const TokenId* tok = a.tokens.data();
  const auto tiles = static_cast<std::int64_t>((C + 31) / 32);
#pragma omp parallel for schedule(static)
  for (std::int64_t ti = 0; ti < tiles; ++ti) {
    const std::size_t c0 = static_cast<std::size_t>(ti) * 32, c1 = std::min(C, c0 + 32);
    for (std::size_t r = 0; r < n; ++r) {
      float* g = dwte.row(static_cast<std::size_t>(tok[r])).data();
      const float* d = dres.row(r).data();
      for (std::size_t c = c0; c < c1; ++c) g[c] += d[c];
    }
  }
  if (has_table(cfg_.pe)) {
    add_positions_backward(
        G(P.wpe), dres, B, T,
        PositionSource::explicit_ids(MatrixView<const std::int64_t>(a.positions.data(), B, T)));
  }
}

Decoder::Decoder(Model& model, std::size_t batch, std::size_t capacity)
    : model_(model), batch_(batch), cap_(capacity) {
  const auto& cfg = model.config();
  const std::size_t C = cfg.d_model;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) cache_.emplace_back(batch * capacity, 3 * C);
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

MatrixView<const float> Decoder::step(std::span<const TokenId> tokens,
                                      std::span<const std::int64_t> positions) {
  const auto& cfg = model_.config();
  auto& P = model_.params();
  const std::size_t B = batch_, C = cfg.d_model, H = cfg.n_heads;
  if (tokens.size() != B || positions.size() != B) {
    throw std::invalid_argument("Decoder::step: " + std::to_string(tokens.size()) + " tokens and " +
                                std::to_string(positions.size()) + " positions for a batch of " +
                                std::to_string(B));
  }
  if (t_ >= cap_) {
    throw std::out_of_range("Decoder::step: position " + std::to_string(t_) +
                            " is past the capacity of " + std::to_string(cap_) + " tokens");
  }
  for (std::size_t b = 0; b < B; ++b) {
    if (tokens[b] < 0 || static_cast<std::size_t>(tokens[b]) >= cfg.vocab_size) {
      throw std::invalid_argument(
          "Decoder::step: token id " + std::to_string(tokens[b]) + " at batch row " +
          std::to_string(b) + " is outside the vocabulary of " + std::to_string(cfg.vocab_size));
    }
    if (positions[b] < 0) throw std::invalid_argument("Decoder::step: negative position");
    pos_(b, 0) = positions[b];
    tok_(b, 0) = tokens[b];
  }
  const auto wte = P.value(P.wte);
  for (std::size_t b = 0; b < B; ++b) {
    std::copy_n(wte.row(static_cast<std::size_t>(tokens[b])).data(), C, x_.row(b).data());
  }
  model_.add_positions(x_.view(), pos_.cview());
  const std::size_t t = t_;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    const auto& pb = P.blocks[l];
    layernorm_forward(ln_.view(), mean_, rstd_, x_, P.value(pb.ln1_w), P.value(pb.ln1_b));
    linear_forward(qkv_.view(), ln_, P.value(pb.qkv_w), P.value(pb.qkv_b));
    if (cfg.pe == PeKind::rope) {
      std::int64_t top = 0;
      for (auto p : positions) top = std::max(top, p);
      rope_forward(qkv_.view(), positions, model_.rope_table(static_cast<std::size_t>(top) + 1), H);
    }
    for (std::size_t b = 0; b < B; ++b) {
      std::copy_n(qkv_.row(b).data(), 3 * C, cache_[l].row(b * cap_ + t).data());
    }
    attention_step(att_.view(), scratch_, cache_[l], B, cap_, t, H);
    linear_forward(tmp_.view(), att_, P.value(pb.o_w), P.value(pb.o_b));
    add_into(x_.view(), tmp_);
    layernorm_forward(ln_.view(), mean_, rstd_, x_, P.value(pb.ln2_w), P.value(pb.ln2_b));
    linear_forward(fc_.view(), ln_, P.value(pb.fc_w), P.value(pb.fc_b));
    gelu_forward(fc_.view(), {}, fc_);
    linear_forward(tmp_.view(), fc_, P.value(pb.proj_w), P.value(pb.proj_b));
    add_into(x_.view(), tmp_);
  }
  layernorm_forward(ln_.view(), mean_, rstd_, x_, P.value(P.lnf_w), P.value(P.lnf_b));
  linear_forward(logits_.view(), ln_, P.value(P.head), {});
  ++t_;
  return logits_;
}

}  // namespace posemb::lab
