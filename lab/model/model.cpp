#include "lab/model/model.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>

#include "lab/encodings/registry.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/kernels.hpp"
#include "posemb/initializers.hpp"
#include "posemb/memory.hpp"

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

// Saturating sums and products for the estimates: an overflow means "more than any budget".
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

std::size_t Activations::bytes(const ModelConfig& cfg, std::size_t mb, std::size_t ms) {
  const std::size_t n = mul_of({mb, ms}), C = cfg.d_model, F = cfg.d_ff, V = cfg.vocab_size;
  const std::size_t f = sizeof(float);
  // Per block: ln1, att, res1, ln2, res2 (C), qkv (3C), fc, fct, fcg (F), 4 row statistics,
  // the attention probabilities (B*H*T*T).
  const std::size_t block =
      sum_of({mul_of({n, 8 * C + 3 * F + 4, f}), mul_of({mb, cfg.n_heads, ms, ms, f})});
  // x0, lnf, dres, dtmp, datt (C), dqkv (3C), dfc (F), logits, dlogits (V), 3 row statistics,
  // tokens, positions and targets; the scores' bias and its gradient.
  const std::size_t rest =
      sum_of({mul_of({n, 8 * C + F + 2 * V + 3, f}),
              mul_of({n, sizeof(TokenId) + sizeof(std::int64_t) + sizeof(std::int32_t)}),
              mul_of({2, cfg.n_heads, ms, f})});
  return sum_of({mul_of({cfg.n_layers, block}), rest});
}

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
  bias = Matrix<float>(cfg.n_heads, ms);
  dbias = Matrix<float>(cfg.n_heads, ms);
  tokens = Matrix<TokenId>(mb, ms);
  positions = Matrix<std::int64_t>(mb, ms);
  targets.resize(n);
}

namespace {

const ModelConfig& checked(const ModelConfig& cfg, const EncodingSpec& spec) {
  validate_model(cfg, spec);
  check_allocation("lab model (" + std::to_string(cfg.n_layers) + " layers, d_model " +
                       std::to_string(cfg.d_model) + ", d_ff " + std::to_string(cfg.d_ff) +
                       ", max_seq_len " + std::to_string(cfg.max_seq_len) + ")",
                   Model::bytes(cfg, spec, 0));
  return cfg;
}

}  // namespace

Model::Model(const ModelConfig& cfg) : Model(cfg, find_encoding(cfg.pe)) {}

Model::Model(const ModelConfig& cfg, const EncodingSpec& spec)
    : cfg_(checked(cfg, spec)), spec_(&spec), params_(cfg), enc_(spec_->make(cfg)) {}

std::vector<TensorInfo> Model::tensor_shapes(const ModelConfig& cfg) {
  return tensor_shapes(cfg, find_encoding(cfg.pe));
}

std::vector<TensorInfo> Model::tensor_shapes(const ModelConfig& cfg, const EncodingSpec& spec) {
  std::vector<TensorInfo> own = Parameters::layout(cfg);
  std::vector<TensorInfo> out;
  out.push_back(own.front());  // wte.weight
  for (auto& t : spec.tensor_shapes(cfg)) out.push_back(std::move(t));
  out.insert(out.end(), own.begin() + 1, own.end());
  return out;
}

double Model::forward_work(const ModelConfig& cfg, std::size_t tokens) {
  const auto C = static_cast<double>(cfg.d_model), F = static_cast<double>(cfg.d_ff);
  const auto L = static_cast<double>(cfg.n_layers), V = static_cast<double>(cfg.vocab_size);
  const auto len = static_cast<double>(tokens);
  return len * (L * (4 * C * C + 2 * C * F) + C * V) + L * C * len * (len + 1);
}

std::size_t Model::bytes(const ModelConfig& cfg, std::size_t positions) {
  return bytes(cfg, find_encoding(cfg.pe), positions);
}

std::size_t Model::bytes(const ModelConfig& cfg, const EncodingSpec& spec, std::size_t positions) {
  const std::size_t f = sizeof(float);
  const std::size_t params = mul_of({2, Parameters::arena_floats(cfg), f});
  // The encoding's tensors: values and gradient (a learned table: and a flag per row); a
  // computed encoding: its cache, up to twice the positions asked for while it grows.
  std::size_t encoding = 0;
  for (const auto& t : spec.tensor_shapes(cfg)) {
    encoding = sum_of({encoding, mul_of({2, t.rows, t.cols, f})});
  }
  encoding =
      sum_of({encoding, spec.has_table ? cfg.max_seq_len : mul_of({3, positions, cfg.d_model, f})});
  return sum_of({params, encoding});
}
std::vector<TensorSlot> Model::tensors() {
  auto& P = params_;
  std::vector<TensorSlot> out;
  out.push_back({P.info(P.wte).name, P.value(P.wte), P.grad(P.wte)});
  for (auto& s : enc_->tensors()) out.push_back(std::move(s));
  for (std::size_t i = 0; i < P.count(); ++i) {
    if (i != P.wte) out.push_back({P.info(i).name, P.value(i), P.grad(i)});
  }
  return out;
}

std::vector<ParamRef> Model::param_refs() {
  std::vector<ParamRef> refs;
  for (const auto& s : tensors()) refs.push_back({s.value, s.grad});
  return refs;
}

std::size_t Model::total_elements() {
  std::size_t n = 0;
  for (const auto& s : tensors()) n += s.value.size();
  return n;
}

void Model::initialize(std::uint64_t seed) {
  const auto slots = tensors();
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const auto& s = slots[k];
    if (s.value.rows() == 1) {  // biases and LayerNorm weights
      for (float& x : s.value.row(0)) x = is_layernorm_weight(s.name) ? 1.0f : 0.0f;
      continue;
    }
    Initializer init;
    init.kind = InitKind::normal;
    init.stddev = s.name == "wte.weight" ? cfg_.embed_init_std : cfg_.init_std;
    init.seed = seed * 1000003ull + k;
    initialize_table(s.value, init);
  }
}

void Model::zero_grad() {
  params_.zero_grad();
  enc_->zero_grad();
}

Gradients Model::make_gradients() {
  Gradients g;
  g.arena = Matrix<float>(1, params_.arena_size());
  for (const auto& s : enc_->tensors()) g.encoding.emplace_back(s.grad.rows(), s.grad.cols());
  return g;
}

void Model::reserve_positions(std::size_t positions) {
  enc_->reserve(positions);
  reserved_ = std::max(reserved_, positions);
}

void Model::require_positions(std::size_t top, const char* op) const {
  if (spec_->has_table || top < reserved_) return;  // a table checks its own rows
  throw std::logic_error(std::string(op) + ": position " + std::to_string(top) + " is past the " +
                         std::to_string(reserved_) + " positions reserved for the " + cfg_.pe +
                         " encoding: call Model::reserve_positions(" + std::to_string(top + 1) +
                         ") first, before any forward pass runs concurrently");
}

double Model::forward(Activations& a, MatrixView<const TokenId> tokens,
                      MatrixView<const std::int64_t> positions,
                      MatrixView<const std::int32_t> targets, std::size_t normalizer) {
  return forward(a, tokens, positions, targets, {}, normalizer);
}

std::size_t Model::gather_inputs(Activations& a, MatrixView<const TokenId> tokens,
                                 MatrixView<const std::int64_t> positions,
                                 MatrixView<const std::int32_t> targets,
                                 std::span<const std::size_t> rows) const {
  const std::size_t B = rows.empty() ? tokens.rows() : rows.size(), T = tokens.cols();
  if (B == 0 || T == 0 || B > a.max_batch || T > a.max_seq) {
    throw std::invalid_argument("Model::forward: batch " + std::to_string(B) + " x " +
                                std::to_string(T) + " tokens does not fit the planned " +
                                std::to_string(a.max_batch) + " x " + std::to_string(a.max_seq));
  }
  for (const auto& [what, r, c] : {std::tuple{"positions", positions.rows(), positions.cols()},
                                   std::tuple{"targets", targets.rows(), targets.cols()}}) {
    if (r != tokens.rows() || c != T) {
      throw std::invalid_argument("Model::forward: " + std::string(what) + " are " +
                                  std::to_string(r) + " x " + std::to_string(c) + ", tokens " +
                                  std::to_string(tokens.rows()) + " x " + std::to_string(T));
    }
  }
  // The one copy, (B, T) contiguous, checked on the way: the rows asked for, positions >= 0 and
  // the targets (token ids and the table's rows are checked by posemb::embed_forward).
  std::int64_t top = 0;
  for (std::size_t i = 0; i < B; ++i) {
    const std::size_t b = rows.empty() ? i : rows[i];
    if (b >= tokens.rows()) {
      throw std::invalid_argument("Model::forward: row " + std::to_string(b) + " of a batch of " +
                                  std::to_string(tokens.rows()));
    }
    std::copy_n(tokens.row(b).data(), T, a.tokens.data() + i * T);
    std::copy_n(positions.row(b).data(), T, a.positions.data() + i * T);
    std::copy_n(targets.row(b).data(), T, a.targets.data() + i * T);
    for (std::size_t t = 0; t < T; ++t) {
      if (positions(b, t) < 0) {
        throw std::invalid_argument("Model::forward: negative position " +
                                    std::to_string(positions(b, t)) + " at batch row " +
                                    std::to_string(b) + ", token " + std::to_string(t));
      }
      top = std::max(top, positions(b, t));
      const std::int32_t y = targets(b, t);
      if (y < -1 || (y >= 0 && static_cast<std::size_t>(y) >= cfg_.vocab_size)) {
        throw std::invalid_argument("Model::forward: target " + std::to_string(y) +
                                    " at batch row " + std::to_string(b) + ", token " +
                                    std::to_string(t) + " is neither -1 nor a token id below " +
                                    std::to_string(cfg_.vocab_size));
      }
    }
  }
  require_positions(static_cast<std::size_t>(top), "Model::forward");
  return B;
}

double Model::forward(Activations& a, MatrixView<const TokenId> tokens,
                      MatrixView<const std::int64_t> positions,
                      MatrixView<const std::int32_t> targets, std::span<const std::size_t> rows,
                      std::size_t normalizer) {
  a.batch = a.seq_len = 0;  // no forward to differentiate until this one is done
  const std::size_t B = gather_inputs(a, tokens, positions, targets, rows);
  const std::size_t T = tokens.cols(), n = B * T, H = cfg_.n_heads;
  const auto tok = MatrixView<const TokenId>(a.tokens.data(), B, T);
  const auto pos = MatrixView<const std::int64_t>(a.positions.data(), B, T);
  const std::span<const std::int32_t> tg(a.targets.data(), n);
  auto& P = params_;
  const std::span<const std::int64_t> pos_flat(pos.data(), n);
  // The scores' bias by distance, the same in every layer (none: an empty view).
  const auto bias_view = a.bias.view().subcols(0, T);
  const MatrixView<const float> bias =
      enc_->scores_bias(bias_view) ? MatrixView<const float>(bias_view) : MatrixView<const float>();
  // The input layer (the library's fused kernel; validates token ids and positions first).
  auto x0 = head_rows(a.x0, n);
  enc_->embed_forward(x0, tok, PositionSource::explicit_ids(pos), P.value(P.wte));
  MatrixView<const float> x = x0;
  for (std::size_t l = 0; l < cfg_.n_layers; ++l) {
    auto& blk = a.blocks[l];
    const auto& pb = P.blocks[l];
    layernorm_forward(head_rows(blk.ln1, n), blk.ln1_mean, blk.ln1_rstd, x, P.value(pb.ln1_w),
                      P.value(pb.ln1_b));
    linear_forward(head_rows(blk.qkv, n), chead(blk.ln1, n), P.value(pb.qkv_w), P.value(pb.qkv_b));
    enc_->rotate_qk_forward(head_rows(blk.qkv, n), pos_flat, H);
    attention_forward(head_rows(blk.att, n), blk.probs, chead(blk.qkv, n), B, T, H, bias);
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
  const double loss =
      softmax_cross_entropy(head_rows(a.dlogits, n), std::span<float>(a.losses.data(), n),
                            chead(a.logits, n), tg, normalizer);
  a.batch = B;
  a.seq_len = T;
  return loss;
}

void Model::backward(Activations& a, Gradients* into) {
  const std::size_t B = a.batch, T = a.seq_len, n = B * T, C = cfg_.d_model, H = cfg_.n_heads;
  if (n == 0) throw std::logic_error("Model::backward: no forward to differentiate");
  const auto& P = params_;
  const std::span<float> arena = into != nullptr ? into->arena.flat() : params_.grad_arena();
  auto G = [&](std::size_t i) { return P.grad_in(arena, i); };
  auto dres = head_rows(a.dres, n);
  auto dtmp = head_rows(a.dtmp, n);
  const auto& last = a.blocks.back();
  // Head and final LayerNorm: dres = d(loss)/d(last residual).
  linear_backward(dtmp, G(P.head), {}, chead(a.dlogits, n), chead(a.lnf, n), P.value(P.head));
  std::fill(dres.data(), dres.data() + n * C, 0.0f);
  layernorm_backward(dres, G(P.lnf_w), G(P.lnf_b), dtmp, chead(last.res2, n), a.lnf_mean,
                     a.lnf_rstd, P.value(P.lnf_w));
  const MatrixView<const std::int64_t> pos(a.positions.data(), B, T);
  const std::span<const std::int64_t> pos_flat(pos.data(), n);
  // The encoding's gradients: the micro-batch's buffers, or the encoding's own.
  std::vector<MatrixView<float>> enc_grads;
  if (into != nullptr) {
    for (auto& g : into->encoding) enc_grads.push_back(g.view());
  } else {
    for (const auto& s : enc_->tensors()) enc_grads.push_back(s.grad);
  }
  // A trained bias on the scores: its gradient by distance, summed over the layers.
  MatrixView<float> dbias;
  if (spec_->trained_bias()) {
    dbias = a.dbias.view().subcols(0, T);
    for (std::size_t h = 0; h < H; ++h) std::fill_n(dbias.row(h).data(), T, 0.0f);
  }
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
    attention_backward(dqkv, dbias, datt, blk.probs, chead(blk.qkv, n), B, T, H);
    enc_->rotate_qk_backward(dqkv, pos_flat, H);
    linear_backward(dtmp, G(pb.qkv_w), G(pb.qkv_b), dqkv, chead(blk.ln1, n), P.value(pb.qkv_w));
    layernorm_backward(dres, G(pb.ln1_w), G(pb.ln1_b), dtmp, x_in, blk.ln1_mean, blk.ln1_rstd,
                       P.value(pb.ln1_w));
  }
  if (dbias.rows() != 0) enc_->scores_bias_backward(enc_grads, dbias);
  // The input layer: dres = d(loss)/d(x0), into the token table's and the encoding's gradients
  // (the library's fused backward: deterministic, rows summed in (b, t) order).
  const MatrixView<const TokenId> tok(a.tokens.data(), B, T);
  enc_->embed_backward(G(P.wte), enc_grads, dres, tok, PositionSource::explicit_ids(pos));
}

}  // namespace posemb::lab
