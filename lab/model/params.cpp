#include "lab/model/params.hpp"

#include <algorithm>

#include "posemb/memory.hpp"

namespace posemb::lab {

bool is_layernorm_weight(std::string_view name) {
  return name.ends_with("ln1.weight") || name.ends_with("ln2.weight") || name == "lnf.weight";
}

std::vector<TensorInfo> Parameters::layout(const ModelConfig& cfg) {
  const std::size_t C = cfg.d_model, V = cfg.vocab_size, F = cfg.d_ff;
  std::vector<TensorInfo> out;
  auto add = [&out](std::string name, std::size_t rows, std::size_t cols) {
    out.push_back({std::move(name), rows, cols});
  };
  add("wte.weight", V, C);
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    add(p + "ln1.weight", 1, C);
    add(p + "ln1.bias", 1, C);
    add(p + "attn.qkv.weight", C, 3 * C);
    add(p + "attn.qkv.bias", 1, 3 * C);
    add(p + "attn.proj.weight", C, C);
    add(p + "attn.proj.bias", 1, C);
    add(p + "ln2.weight", 1, C);
    add(p + "ln2.bias", 1, C);
    add(p + "mlp.fc.weight", C, F);
    add(p + "mlp.fc.bias", 1, F);
    add(p + "mlp.proj.weight", F, C);
    add(p + "mlp.proj.bias", 1, C);
  }
  add("lnf.weight", 1, C);
  add("lnf.bias", 1, C);
  add("head.weight", C, V);
  return out;
}

std::size_t Parameters::arena_floats(const ModelConfig& cfg) {
  std::size_t n = 0;
  for (const auto& in : layout(cfg)) {
    n = saturating_add(n, saturating_add(saturating_mul(in.rows, in.cols), 15) / 16 * 16);
  }
  return n;
}

Parameters::Parameters(const ModelConfig& cfg) {
  cfg.check_fields();
  infos_ = layout(cfg);
  // In layout's order: wte, then 12 tensors per block, then lnf and head.
  std::size_t i = 0;
  wte = i++;
  for (std::size_t l = 0; l < cfg.n_layers; ++l) {
    Block b{};
    for (std::size_t* f : {&b.ln1_w, &b.ln1_b, &b.qkv_w, &b.qkv_b, &b.o_w, &b.o_b, &b.ln2_w,
                           &b.ln2_b, &b.fc_w, &b.fc_b, &b.proj_w, &b.proj_b}) {
      *f = i++;
    }
    blocks.push_back(b);
  }
  lnf_w = i++;
  lnf_b = i++;
  head = i++;
  // 16-float (64-byte) aligned offsets in one arena.
  std::size_t off = 0;
  for (const auto& in : infos_) {
    offsets_.push_back(off);
    off += (in.rows * in.cols + 15) / 16 * 16;
  }
  values_ = Matrix<float>(1, off);
  grads_ = Matrix<float>(1, off);
  for (std::size_t k = 0; k < count(); ++k) {
    if (is_layernorm_weight(infos_[k].name)) {
      std::fill(value(k).row(0).begin(), value(k).row(0).end(), 1.0f);
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
