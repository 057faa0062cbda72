#include "lab/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "posemb/parallel.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::lab {
namespace {

constexpr const char* kFormat = "posemb-lab-checkpoint/1";

const ModelConfig& validated(const RunConfig& cfg) {
  cfg.validate();
  return cfg.model;
}

}  // namespace

Trainer::Trainer(const RunConfig& cfg)
    : cfg_(cfg),
      model_(validated(cfg_)),
      opt_(AdamWConfig{cfg_.train.lr, cfg_.train.beta1, cfg_.train.beta2, 1e-8f,
                       cfg_.train.weight_decay}) {
  model_.initialize(cfg_.train.seed);
  const std::size_t mb = std::min(cfg_.train.micro_batch, cfg_.train.batch);
  const std::size_t nm = (cfg_.train.batch + mb - 1) / mb;
  for (std::size_t i = 0; i < nm; ++i) {
    acts_.emplace_back(cfg_.model, mb, input_len(cfg_.task.train_len));
    grads_.push_back(model_.make_gradients());
  }
  losses_.resize(nm);
}

float Trainer::lr_at(std::size_t s) const {
  const auto& t = cfg_.train;
  if (s < t.warmup) {
    return t.lr * static_cast<float>(s + 1) / static_cast<float>(t.warmup);
  }
  const double span = static_cast<double>(std::max<std::size_t>(t.steps - t.warmup, 1));
  const double progress = std::min(1.0, static_cast<double>(s - t.warmup) / span);
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  return static_cast<float>(t.lr * (t.min_lr_ratio + (1.0 - t.min_lr_ratio) * cosine));
}

void Trainer::set_total_steps(std::size_t steps) {
  TrainConfig t = cfg_.train;
  t.steps = steps;
  t.validate();
  cfg_.train.steps = steps;
}

namespace {

// dst = the sum of srcs, element by element in the order given (deterministic).
void sum_in_order(std::span<float> dst, const std::vector<const float*>& srcs) {
  const auto n = static_cast<std::int64_t>(dst.size());
#pragma omp parallel for schedule(static) if (worth_parallel(dst.size() * srcs.size()))
  for (std::int64_t k = 0; k < n; ++k) {
    float s = 0.0f;
    for (const float* src : srcs) s += src[k];
    dst[static_cast<std::size_t>(k)] = s;
  }
}

}  // namespace

double Trainer::train_step() {
  make_train_batch(batch_, cfg_.task, cfg_.train.batch, cfg_.train.seed, step_,
                   model_.encoding_spec().train_positions, cfg_.model.max_seq_len);
  const std::size_t B = cfg_.train.batch, nm = acts_.size(), mb = acts_[0].max_batch;
  const std::size_t count = batch_.answer_tokens;
  std::int64_t top = 0;
  for (auto p : batch_.positions.flat()) top = std::max(top, p);
  model_.reserve_positions(static_cast<std::size_t>(top) + 1);
  // With sort_by_length, rows are ordered by n (stable) so that each micro-batch is only as long
  // as its own longest sequence: the same gradient (padding contributes nothing), less work.
  const Batch* src = &batch_;
  if (cfg_.train.sort_by_length) {
    std::vector<std::size_t> order(B);
    for (std::size_t b = 0; b < B; ++b) order[b] = b;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return batch_.lengths[x] < batch_.lengths[y];
    });
    if (sorted_.tokens.rows() != B || sorted_.tokens.cols() != batch_.tokens.cols()) {
      sorted_.tokens = Matrix<TokenId>(B, batch_.tokens.cols());
      sorted_.positions = Matrix<std::int64_t>(B, batch_.tokens.cols());
      sorted_.targets = Matrix<std::int32_t>(B, batch_.tokens.cols());
    }
    sorted_.lengths.resize(B);
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t o = order[b];
      std::copy_n(batch_.tokens.row(o).data(), batch_.tokens.cols(), sorted_.tokens.row(b).data());
      std::copy_n(batch_.positions.row(o).data(), batch_.tokens.cols(),
                  sorted_.positions.row(b).data());
      std::copy_n(batch_.targets.row(o).data(), batch_.tokens.cols(),
                  sorted_.targets.row(b).data());
      sorted_.lengths[b] = batch_.lengths[o];
    }
    src = &sorted_;
  }
  std::vector<std::exception_ptr> errors(nm);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t ii = static_cast<std::int64_t>(nm) - 1; ii >= 0; --ii) {
    const auto i = static_cast<std::size_t>(ii);
    const std::size_t r0 = i * mb, rows = std::min(mb, B - r0);
    std::size_t T = src->tokens.cols();
    if (cfg_.train.sort_by_length) {
      std::size_t longest = 0;
      for (std::size_t b = r0; b < r0 + rows; ++b) longest = std::max(longest, src->lengths[b]);
      T = input_len(longest);
    }
    auto cut = [&](const auto& m) {
      using V = std::remove_cvref_t<decltype(*m.data())>;
      return MatrixView<const V>(m.data() + r0 * m.cols(), rows, T, m.cols());
    };
    try {
      losses_[i] =
          model_.forward(acts_[i], cut(src->tokens), cut(src->positions), cut(src->targets), count);
      auto& g = grads_[i];
      std::fill(g.arena.flat().begin(), g.arena.flat().end(), 0.0f);
      for (auto& e : g.encoding) std::fill(e.flat().begin(), e.flat().end(), 0.0f);
      model_.backward(acts_[i], &g);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  double loss = 0.0;
  for (double l : losses_) loss += l;
  if (!std::isfinite(loss)) {
    throw std::runtime_error("train: the loss is " + std::to_string(loss) + " at step " +
                             std::to_string(step_ + 1) +
                             "; training stopped before updating the parameters (the last "
                             "checkpoint written is intact; try a lower lr)");
  }
  // Sum the micro-batch gradients in micro-batch order (element-parallel, deterministic): the
  // arena of the model's parameters, then each tensor of the encoding (the learned table).
  std::vector<const float*> parts(nm);
  for (std::size_t i = 0; i < nm; ++i) parts[i] = grads_[i].arena.data();
  sum_in_order(model_.params().grad_arena(), parts);
  const auto enc = model_.encoding().tensors();
  for (std::size_t j = 0; j < enc.size(); ++j) {
    for (std::size_t i = 0; i < nm; ++i) parts[i] = grads_[i].encoding[j].data();
    sum_in_order(std::span<float>(enc[j].grad.data(), enc[j].grad.size()), parts);
  }
  const auto slots = model_.tensors();
  if (cfg_.train.grad_clip > 0.0f) {
    double sq = 0.0;
    for (const auto& s : slots) {
      for (std::size_t k = 0; k < s.grad.size(); ++k)
        sq += double(s.grad.data()[k]) * s.grad.data()[k];
    }
    const double norm = std::sqrt(sq);
    if (norm > cfg_.train.grad_clip) {
      const auto scale = static_cast<float>(cfg_.train.grad_clip / norm);
      for (const auto& s : slots) {
        for (std::size_t k = 0; k < s.grad.size(); ++k) s.grad.data()[k] *= scale;
      }
    }
  }
  opt_.config().lr = lr_at(step_);
  const auto refs = model_.param_refs();
  opt_.step(refs);
  // The learned table records the rows this step trained.
  model_.encoding().zero_grad();
  ++step_;
  return loss;
}

void Trainer::save(const std::string& path) {
  const auto slots = model_.tensors();
  std::vector<Tensor> tensors;
  for (const auto& s : slots) tensors.push_back(Tensor::from_matrix(s.name, s.value));
  const auto& m1 = opt_.first_moments();
  const auto& m2 = opt_.second_moments();
  for (std::size_t i = 0; i < m1.size() && i < slots.size(); ++i) {
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.m." + slots[i].name, m1[i].cview()));
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.v." + slots[i].name, m2[i].cview()));
  }
  Metadata meta = {{"format", kFormat},
                   {"posemb.lab.run", cfg_.to_json()},
                   {"posemb.lab.step", std::to_string(step_)},
                   {"posemb.lab.adamw_steps", std::to_string(opt_.steps())}};
  if (model_.encoding_spec().has_table) {
    // The position table's metadata (posemb/position_table_file.hpp), so `posemb resize` and
    // `posemb inspect` find it without a --tensor.
    meta["posemb.tensor"] = std::string(model_.encoding_spec().table_tensor);
    meta["posemb.reserved_rows"] = "0";
    meta["posemb.training_length"] = std::to_string(input_len(cfg_.task.train_len));
    meta["posemb.initializer"] = "normal(std=" + std::to_string(cfg_.model.init_std) +
                                 ", seed derived from " + std::to_string(cfg_.train.seed) + ")";
    meta["posemb.provenance"] =
        "posemb train (" + cfg_.model.pe + ", step " + std::to_string(step_) + ")";
  }
  write_safetensors(path, tensors, meta);
}

namespace {

TensorFile read_checkpoint(const std::string& path) {
  try {
    return read_safetensors(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("checkpoint: cannot read a posemb lab checkpoint: ") +
                             e.what());
  }
}

RunConfig read_settings(const TensorFile& f, const std::string& path) {
  const auto fmt = f.metadata.find("format");
  const auto run = f.metadata.find("posemb.lab.run");
  if (fmt == f.metadata.end() || fmt->second != kFormat || run == f.metadata.end()) {
    throw std::runtime_error("checkpoint: " + path +
                             " is not a posemb lab checkpoint (no format '" + kFormat +
                             "' metadata)");
  }
  return RunConfig::from_json(run->second);
}

// The float32 values of tensor `name` of the checkpoint.
Matrix<float> tensor_matrix(const TensorFile& f, const std::string& name, const std::string& path) {
  const Tensor* t = f.find(name);
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

// Every tensor of the model from the checkpoint (but the learned table's when skip_table).
void load_tensors(Model& model, const TensorFile& f, const std::string& path,
                  bool skip_table = false) {
  for (const auto& s : model.tensors()) {
    if (skip_table && s.name == model.encoding_spec().table_tensor) continue;
    copy_into(s.value, tensor_matrix(f, s.name, path), s.name, path);
  }
}

}  // namespace

Trainer Trainer::load(const std::string& path) {
  const TensorFile f = read_checkpoint(path);
  Trainer tr(read_settings(f, path));
  load_tensors(tr.model_, f, path);
  tr.step_ = std::stoul(f.metadata.at("posemb.lab.step"));
  const auto adam_steps = std::stoll(f.metadata.at("posemb.lab.adamw_steps"));
  if (adam_steps > 0) {
    std::vector<Matrix<float>> m1, m2;
    for (const auto& s : tr.model_.tensors()) {
      m1.push_back(tensor_matrix(f, "optimizer.adamw.m." + s.name, path));
      m2.push_back(tensor_matrix(f, "optimizer.adamw.v." + s.name, path));
      if (m1.back().rows() != s.value.rows() || m2.back().rows() != s.value.rows() ||
          m1.back().cols() != s.value.cols() || m2.back().cols() != s.value.cols()) {
        throw std::runtime_error("checkpoint: the optimizer state of " + s.name + " in " + path +
                                 " does not match the parameter's shape");
      }
    }
    tr.opt_.first_moments() = std::move(m1);
    tr.opt_.second_moments() = std::move(m2);
    tr.opt_.set_steps(adam_steps);
  }
  return tr;
}

Model load_model(const std::string& path, RunConfig* settings, const std::string& table_path) {
  const TensorFile f = read_checkpoint(path);
  RunConfig run = read_settings(f, path);
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
    run.model.max_seq_len = tensor_matrix(f, std::string(spec.table_tensor), path).rows();
  }
  Model model(run.model);
  load_tensors(model, f, path, table.has_value());
  if (table) {
    const auto slot = model.encoding().tensors().front();
    copy_into(slot.value, table->usable(), "position table", table_path);
  }
  if (settings != nullptr) *settings = run;
  return model;
}

}  // namespace posemb::lab
