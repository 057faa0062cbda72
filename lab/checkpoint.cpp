#include "lab/checkpoint.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::lab {

void write_checkpoint(const std::string& path, Model& model, const AdamW& opt, const RunConfig& cfg,
                      std::size_t step, const std::string& lineage) {
  const auto slots = model.tensors();
  std::vector<Tensor> tensors;
  for (const auto& s : slots) tensors.push_back(Tensor::from_matrix(s.name, s.value));
  const auto& m1 = opt.first_moments();
  const auto& m2 = opt.second_moments();
  for (std::size_t i = 0; i < m1.size() && i < slots.size(); ++i) {
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.m." + slots[i].name, m1[i].cview()));
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.v." + slots[i].name, m2[i].cview()));
  }
  Metadata meta = {{"format", kCheckpointFormat},
                   {"posemb.lab.run", cfg.to_json()},
                   {"posemb.lab.step", std::to_string(step)},
                   {"posemb.lab.adamw_steps", std::to_string(opt.steps())}};
  if (!lineage.empty()) meta["posemb.lab.lineage"] = lineage;
  if (model.encoding_spec().has_table) {
    // The position table's metadata (posemb/position_table_file.hpp), so `posemb resize` and
    // `posemb inspect` find it without naming the tensor.
    meta["posemb.tensor"] = std::string(model.encoding_spec().table_tensor);
    meta["posemb.reserved_rows"] = "0";
    meta["posemb.training_length"] = std::to_string(input_len(cfg.task.train_len));
    meta["posemb.initializer"] = "normal(std=" + std::to_string(cfg.model.init_std) +
                                 ", seed derived from " + std::to_string(cfg.train.seed) + ")";
    meta["posemb.provenance"] = (lineage.empty() ? std::string() : lineage + "; ") +
                                "posemb train (" + cfg.model.pe + ", step " + std::to_string(step) +
                                ")";
  }
  write_safetensors(path, tensors, meta);
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint ck;
  ck.path = path;
  try {
    ck.file = read_safetensors(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("checkpoint: cannot read a posemb lab checkpoint: ") +
                             e.what());
  }
  const auto& md = ck.file.metadata;
  const auto fmt = md.find("format");
  const auto run = md.find("posemb.lab.run");
  if (fmt == md.end() || fmt->second != kCheckpointFormat || run == md.end()) {
    throw std::runtime_error("checkpoint: " + path +
                             " is not a posemb lab checkpoint (no format '" + kCheckpointFormat +
                             "' metadata)");
  }
  ck.run = RunConfig::from_json(run->second);
  ck.step = std::stoul(md.at("posemb.lab.step"));
  ck.adamw_steps = std::stoll(md.at("posemb.lab.adamw_steps"));
  if (const auto it = md.find("posemb.lab.lineage"); it != md.end()) ck.lineage = it->second;
  return ck;
}

Matrix<float> Checkpoint::tensor(const std::string& name) const {
  const Tensor* t = file.find(name);
  if (t == nullptr) throw std::runtime_error("checkpoint: " + path + " has no tensor " + name);
  return t->to_matrix<float>();
}

void copy_into(MatrixView<float> dst, MatrixView<const float> src, const std::string& name,
               const std::string& path) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols()) {
    throw std::runtime_error("checkpoint: tensor " + name + " in " + path + " is " +
                             std::to_string(src.rows()) + " x " + std::to_string(src.cols()) +
                             ", the model needs " + std::to_string(dst.rows()) + " x " +
                             std::to_string(dst.cols()));
  }
  for (std::size_t r = 0; r < src.rows(); ++r) {
    std::copy_n(src.row(r).data(), src.cols(), dst.row(r).data());
  }
}

void load_tensors(Model& model, const Checkpoint& ck, bool skip_table) {
  for (const auto& s : model.tensors()) {
    if (skip_table && s.name == model.encoding_spec().table_tensor) continue;
    copy_into(s.value, ck.tensor(s.name), s.name, ck.path);
  }
}

void load_optimizer_state(AdamW& opt, Model& model, const Checkpoint& ck) {
  if (ck.adamw_steps <= 0) return;
  std::vector<Matrix<float>> m1, m2;
  for (const auto& s : model.tensors()) {
    m1.push_back(ck.tensor("optimizer.adamw.m." + s.name));
    m2.push_back(ck.tensor("optimizer.adamw.v." + s.name));
    if (m1.back().rows() != s.value.rows() || m2.back().rows() != s.value.rows() ||
        m1.back().cols() != s.value.cols() || m2.back().cols() != s.value.cols()) {
      throw std::runtime_error("checkpoint: the optimizer state of " + s.name + " in " + ck.path +
                               " does not match the parameter's shape");
    }
  }
  opt.first_moments() = std::move(m1);
  opt.second_moments() = std::move(m2);
  opt.set_steps(ck.adamw_steps);
}

Model load_model(const std::string& path, RunConfig* settings, const std::string& table_path) {
  const Checkpoint ck = read_checkpoint(path);
  RunConfig run = ck.run;
  const auto& spec = find_encoding(run.model.pe);
  std::optional<PositionTable> table;
  if (!table_path.empty()) {
    if (!spec.has_table) {
      throw std::invalid_argument("load_model: " + path + " uses " + run.model.pe +
                                  ", which has no learned table to replace");
    }
    table = load_position_table(table_path);
    if (table->usable().cols() != run.model.d_model) {
      throw std::invalid_argument("load_model: the table in " + table_path + " has " +
                                  std::to_string(table->usable().cols()) +
                                  " columns, the model's d_model is " +
                                  std::to_string(run.model.d_model));
    }
    run.model.max_seq_len = table->positions();
  } else if (spec.has_table) {
    run.model.max_seq_len = ck.tensor(std::string(spec.table_tensor)).rows();
  }
  Model model(run.model);
  load_tensors(model, ck, table.has_value());
  if (table) {
    const auto slot = model.encoding().tensors().front();
    copy_into(slot.value, table->usable(), "position table", table_path);
  }
  if (settings != nullptr) *settings = run;
  return model;
}

}  // namespace posemb::lab
