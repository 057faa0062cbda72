#include "lab/params.hpp"

#include <algorithm>
#include <stdexcept>

namespace posemb::lab {

PeKind parse_pe_kind(std::string_view name) {
  if (name == "learned") return PeKind::learned;
  if (name == "learned-randomized") return PeKind::learned_randomized;
  if (name == "sinusoidal") return PeKind::sinusoidal;
  if (name == "rope") return PeKind::rope;
  if (name == "none") return PeKind::none;
  throw std::invalid_argument("positional encoding '" + std::string(name) +
                              "' is not one of learned, learned-randomized, sinusoidal, rope, "
                              "none");
}

std::string pe_kind_name(PeKind kind) {
  switch (kind) {
    case PeKind::learned:
      return "learned";
    case PeKind::learned_randomized:
      return "learned-randomized";
    case PeKind::sinusoidal:
      return "sinusoidal";
    case PeKind::rope:
      return "rope";
    case PeKind::none:
      return "none";
  }
  return "?";
}

bool has_table(PeKind kind) {
  return kind == PeKind::learned || kind == PeKind::learned_randomized;
}

void ModelConfig::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("model config: " + what); };
  if (vocab_size < 2) bad("vocab_size " + std::to_string(vocab_size) + " must be >= 2");
  if (d_model == 0 || n_heads == 0 || d_model % n_heads != 0) {
    bad("d_model " + std::to_string(d_model) + " must be a positive multiple of n_heads " +
        std::to_string(n_heads));
  }
  if (pe == PeKind::rope && head_dim() % 2 != 0) {
    bad("rope needs an even head dimension, got d_model / n_heads = " + std::to_string(head_dim()));
  }
  if (n_layers == 0) bad("n_layers must be >= 1");
  if (d_ff == 0) bad("d_ff must be >= 1");
  if (has_table(pe) && max_seq_len == 0) {
    bad("positional encoding " + pe_kind_name(pe) + " needs max_seq_len >= 1");
  }
  if (!(init_std > 0.0)) bad("init_std must be > 0");
  if (!(embed_init_std > 0.0)) bad("embed_init_std must be > 0");
}

std::size_t Parameters::add(std::string name, std::size_t rows, std::size_t cols) {
  infos_.push_back({std::move(name), rows, cols});
  return infos_.size() - 1;
}

Parameters::Parameters(const ModelConfig& cfg) {
  cfg.validate();
  const std::size_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff;
  wte = add("wte.weight", V, C);
  if (has_table(cfg.pe)) wpe = add("wpe.weight", cfg.max_seq_len, C);
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    Block b{};
    b.ln1_w = add(p + "ln1.weight", 1, C);
    b.ln1_b = add(p + "ln1.bias", 1, C);
    b.qkv_w = add(p + "attn.qkv.weight", C, 3 * C);
    b.qkv_b = add(p + "attn.qkv.bias", 1, 3 * C);
    b.o_w = add(p + "attn.proj.weight", C, C);
    b.o_b = add(p + "attn.proj.bias", 1, C);
    b.ln2_w = add(p + "ln2.weight", 1, C);
    b.ln2_b = add(p + "ln2.bias", 1, C);
    b.fc_w = add(p + "mlp.fc.weight", C, F);
    b.fc_b = add(p + "mlp.fc.bias", 1, F);
    b.proj_w = add(p + "mlp.proj.weight", F, C);
    b.proj_b = add(p + "mlp.proj.bias", 1, C);
    blocks.push_back(b);
  }
  lnf_w = add("lnf.weight", 1, C);
  lnf_b = add("lnf.bias", 1, C);
  head = add("head.weight", C, V);
  // 16-float (64-byte) aligned offsets in one arena.
  std::size_t off = 0;
  for (const auto& in : infos_) {
    offsets_.push_back(off);
    off += (in.rows * in.cols + 15) / 16 * 16;
  }
  values_ = Matrix<float>(1, off);
  grads_ = Matrix<float>(1, off);
  std::vector<std::size_t> ln;
  for (const auto& b : blocks) {
    ln.push_back(b.ln1_w);
    ln.push_back(b.ln2_w);
  }
  ln.push_back(lnf_w);
  for (std::size_t i : ln) {
    for (float& v : value(i).row(0)) v = 1.0f;
  }
  init_std_ = cfg.init_std;
  embed_init_std_ = cfg.embed_init_std;
}

void Parameters::initialize(std::uint64_t seed) {
  for (std::size_t i = 0; i < count(); ++i) {
    const auto& in = infos_[i];
    const bool is_bias = in.rows == 1;
    auto v = value(i);
    if (is_bias) {
      const bool ln_weight = in.name.ends_with("ln1.weight") || in.name.ends_with("ln2.weight") ||
                             in.name == "lnf.weight";
      for (float& x : v.row(0)) x = ln_weight ? 1.0f : 0.0f;
      continue;
    }
    Initializer init;
    init.kind = InitKind::normal;
    init.stddev = i == wte ? embed_init_std_ : init_std_;
    init.seed = seed * 1000003ull + i;
    initialize_table(v, init);
  }
}

std::size_t Parameters::find(std::string_view name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i) {
    if (infos_[i].name == name) return i;
  }
  throw std::out_of_range("model has no parameter called '" + std::string(name) + "'");
}

MatrixView<float> Parameters::value(std::size_t i) {
  return MatrixView<float>(values_.data() + offsets_.at(i), infos_[i].rows, infos_[i].cols);
}
MatrixView<const float> Parameters::value(std::size_t i) const {
  return MatrixView<const float>(values_.data() + offsets_.at(i), infos_[i].rows, infos_[i].cols);
}
MatrixView<float> Parameters::grad(std::size_t i) {
  return MatrixView<float>(grads_.data() + offsets_.at(i), infos_[i].rows, infos_[i].cols);
}
MatrixView<const float> Parameters::grad(std::size_t i) const {
  return MatrixView<const float>(grads_.data() + offsets_.at(i), infos_[i].rows, infos_[i].cols);
}

MatrixView<float> Parameters::grad_in(std::span<float> arena, std::size_t i) const {
  return MatrixView<float>(arena.data() + offsets_.at(i), infos_[i].rows, infos_[i].cols);
}

void Parameters::zero_grad() {
  std::fill(grads_.flat().begin(), grads_.flat().end(), 0.0f);
}

std::vector<ParamRef> Parameters::refs() {
  std::vector<ParamRef> out;
  for (std::size_t i = 0; i < count(); ++i) out.push_back({value(i), grad(i)});
  return out;
}

std::size_t Parameters::total_elements() const {
  std::size_t n = 0;
  for (const auto& in : infos_) n += in.rows * in.cols;
  return n;
}

}  // namespace posemb::lab
