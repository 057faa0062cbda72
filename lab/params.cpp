#include "lab/params.hpp"

#include <algorithm>

namespace posemb::lab {

bool is_layernorm_weight(std::string_view name) {
  return name.ends_with("ln1.weight") || name.ends_with("ln2.weight") || name == "lnf.weight";
}

std::size_t Parameters::add(std::string name, std::size_t rows, std::size_t cols) {
  infos_.push_back({std::move(name), rows, cols});
  return infos_.size() - 1;
}

Parameters::Parameters(const ModelConfig& cfg) {
  cfg.validate();
  const std::size_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff;
  wte = add("wte.weight", V, C);
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
  for (std::size_t i = 0; i < count(); ++i) {
    if (is_layernorm_weight(infos_[i].name)) {
      std::fill(value(i).row(0).begin(), value(i).row(0).end(), 1.0f);
    }
  }
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

}  // namespace posemb::lab
