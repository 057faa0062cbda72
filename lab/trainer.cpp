#include "lab/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::lab {
namespace {

constexpr const char* kFormat = "posemb-lab-checkpoint/1";

PositionMode train_positions(const ModelConfig& m) {
  return m.pe == PeKind::learned_randomized ? PositionMode::randomized : PositionMode::contiguous;
}

ModelConfig checked_model(RunConfig& cfg) {
  cfg.task.validate();
  cfg.train.validate();
  cfg.model.vocab_size = cfg.task.vocab_size();
  cfg.model.validate();
  const std::size_t need = input_len(cfg.task.train_len);
  if (has_table(cfg.model.pe) && cfg.model.max_seq_len < need) {
    throw std::invalid_argument(
        "train: the learned table has " + std::to_string(cfg.model.max_seq_len) +
        " rows but training sequences of train_len " + std::to_string(cfg.task.train_len) +
        " need " + std::to_string(need) + " positions");
  }
  return cfg.model;
}

}  // namespace

void TrainConfig::validate() const {
  auto bad = [](const std::string& w) { throw std::invalid_argument("train config: " + w); };
  if (batch == 0) bad("batch must be >= 1");
  if (micro_batch == 0) bad("micro_batch must be >= 1");
  if (steps == 0) bad("steps must be >= 1");
  if (!(lr > 0.0f) || !std::isfinite(lr)) bad("lr must be finite and > 0");
  if (!(min_lr_ratio >= 0.0f && min_lr_ratio <= 1.0f)) bad("min_lr_ratio must be in [0, 1]");
  if (!(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f)) {
    bad("beta1 and beta2 must be in [0, 1)");
  }
  if (!(weight_decay >= 0.0f) || !(grad_clip >= 0.0f)) {
    bad("weight_decay and grad_clip must be >= 0");
  }
}

std::string RunConfig::to_json() const {
  nlohmann::ordered_json j;
  j["model"] = {{"vocab_size", model.vocab_size},
                {"d_model", model.d_model},
                {"n_layers", model.n_layers},
                {"n_heads", model.n_heads},
                {"d_ff", model.d_ff},
                {"pe", pe_kind_name(model.pe)},
                {"max_seq_len", model.max_seq_len},
                {"rope_base", model.rope_base},
                {"sinusoidal_base", model.sinusoidal_base},
                {"init_std", model.init_std},
                {"embed_init_std", model.embed_init_std}};
  j["task"] = {{"kind", task_kind_name(task.kind)},
               {"alphabet", task.alphabet},
               {"train_len", task.train_len}};
  j["train"] = {{"batch", train.batch},
                {"micro_batch", train.micro_batch},
                {"sort_by_length", train.sort_by_length},
                {"steps", train.steps},
                {"warmup", train.warmup},
                {"lr", train.lr},
                {"min_lr_ratio", train.min_lr_ratio},
                {"weight_decay", train.weight_decay},
                {"beta1", train.beta1},
                {"beta2", train.beta2},
                {"grad_clip", train.grad_clip},
                {"seed", train.seed}};
  return j.dump();
}

RunConfig RunConfig::from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  RunConfig c;
  const auto& m = j.at("model");
  c.model.vocab_size = m.at("vocab_size");
  c.model.d_model = m.at("d_model");
  c.model.n_layers = m.at("n_layers");
  c.model.n_heads = m.at("n_heads");
  c.model.d_ff = m.at("d_ff");
  c.model.pe = parse_pe_kind(m.at("pe").get<std::string>());
  c.model.max_seq_len = m.at("max_seq_len");
  c.model.rope_base = m.at("rope_base");
  c.model.sinusoidal_base = m.at("sinusoidal_base");
  c.model.init_std = m.at("init_std");
  c.model.embed_init_std = m.at("embed_init_std");
  const auto& t = j.at("task");
  c.task.kind = parse_task_kind(t.at("kind").get<std::string>());
  c.task.alphabet = t.at("alphabet");
  c.task.train_len = t.at("train_len");
  const auto& r = j.at("train");
  c.train.batch = r.at("batch");
  c.train.micro_batch = r.at("micro_batch");
  c.train.sort_by_length = r.at("sort_by_length");
  c.train.steps = r.at("steps");
  c.train.warmup = r.at("warmup");
  c.train.lr = r.at("lr");
  c.train.min_lr_ratio = r.at("min_lr_ratio");
  c.train.weight_decay = r.at("weight_decay");
  c.train.beta1 = r.at("beta1");
  c.train.beta2 = r.at("beta2");
  c.train.grad_clip = r.at("grad_clip");
  c.train.seed = r.at("seed");
  return c;
}

Trainer::Trainer(const RunConfig& cfg)
    : cfg_(cfg),
      model_(checked_model(cfg_)),
      opt_(AdamWConfig{cfg_.train.lr, cfg_.train.beta1, cfg_.train.beta2, 1e-8f,
                       cfg_.train.weight_decay}) {
  model_.params().initialize(cfg_.train.seed);
  const std::size_t mb = std::min(cfg_.train.micro_batch, cfg_.train.batch);
  const std::size_t nm = (cfg_.train.batch + mb - 1) / mb;
  for (std::size_t i = 0; i < nm; ++i) {
    acts_.emplace_back(cfg_.model, mb, input_len(cfg_.task.train_len));
    grads_.emplace_back(1, model_.params().arena_size());
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
  if (steps == 0) throw std::invalid_argument("train: steps must be >= 1");
  cfg_.train.steps = steps;
}

double Trainer::train_step() {
  const auto& m = cfg_.model;
  make_train_batch(batch_, cfg_.task, cfg_.train.batch, cfg_.train.seed, step_, train_positions(m),
                   m.max_seq_len);
  auto& P = model_.params();
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
      std::fill(grads_[i].flat().begin(), grads_[i].flat().end(), 0.0f);
      model_.backward(acts_[i], grads_[i].flat());
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
                             "checkpoint written is intact; try a lower --lr)");
  }
  // Sum the micro-batch gradients in micro-batch order (element-parallel, deterministic).
  auto total = P.grad_arena();
  const auto n = static_cast<std::int64_t>(total.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < n; ++k) {
    float s = 0.0f;
    for (std::size_t i = 0; i < nm; ++i) s += grads_[i].data()[k];
    total[static_cast<std::size_t>(k)] = s;
  }
  if (cfg_.train.grad_clip > 0.0f) {
    double sq = 0.0;
    for (std::size_t i = 0; i < P.count(); ++i) {
      const auto g = P.grad(i);
      for (std::size_t k = 0; k < g.size(); ++k) sq += double(g.data()[k]) * g.data()[k];
    }
    const double norm = std::sqrt(sq);
    if (norm > cfg_.train.grad_clip) {
      const auto scale = static_cast<float>(cfg_.train.grad_clip / norm);
      for (std::size_t i = 0; i < P.count(); ++i) {
        auto g = P.grad(i);
        for (std::size_t k = 0; k < g.size(); ++k) g.data()[k] *= scale;
      }
    }
  }
  opt_.config().lr = lr_at(step_);
  const auto refs = P.refs();
  opt_.step(refs);
  ++step_;
  return loss;
}

void Trainer::save(const std::string& path) const {
  auto& self = const_cast<Trainer&>(*this);  // AdamW's state accessors are non-const
  const auto& P = model_.params();
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < P.count(); ++i) {
    tensors.push_back(Tensor::from_matrix(P.info(i).name, P.value(i)));
  }
  auto& m1 = self.opt_.first_moments();
  auto& m2 = self.opt_.second_moments();
  for (std::size_t i = 0; i < m1.size() && i < P.count(); ++i) {
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.m." + P.info(i).name, m1[i].cview()));
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.v." + P.info(i).name, m2[i].cview()));
  }
  Metadata meta = {{"format", kFormat},
                   {"posemb.lab.run", cfg_.to_json()},
                   {"posemb.lab.step", std::to_string(step_)},
                   {"posemb.lab.adamw_steps", std::to_string(self.opt_.steps())}};
  if (has_table(cfg_.model.pe)) {
    // The position table's metadata (posemb/position_table_file.hpp), so `posemb resize` and
    // `posemb inspect` find it without a --tensor.
    meta["posemb.tensor"] = "wpe.weight";
    meta["posemb.reserved_rows"] = "0";
    meta["posemb.training_length"] = std::to_string(input_len(cfg_.task.train_len));
    meta["posemb.initializer"] = "normal(std=" + std::to_string(cfg_.model.init_std) +
                                 ", seed derived from " + std::to_string(cfg_.train.seed) + ")";
    meta["posemb.provenance"] =
        "posemb train (" + pe_kind_name(cfg_.model.pe) + ", step " + std::to_string(step_) + ")";
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

Matrix<float> tensor_matrix(const TensorFile& f, const std::string& name, const std::string& path) {
  const Tensor* t = f.find(name);
  if (t == nullptr) throw std::runtime_error("checkpoint: " + path + " has no tensor " + name);
  return t->to_matrix<float>();
}

void copy_into(MatrixView<float> dst, const Matrix<float>& src, const std::string& name,
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

void load_params(Parameters& P, const TensorFile& f, const std::string& path,
                 bool skip_table = false) {
  for (std::size_t i = 0; i < P.count(); ++i) {
    if (skip_table && i == P.wpe) continue;
    copy_into(P.value(i), tensor_matrix(f, P.info(i).name, path), P.info(i).name, path);
  }
}

}  // namespace

Trainer Trainer::load(const std::string& path) {
  const TensorFile f = read_checkpoint(path);
  Trainer tr(read_settings(f, path));
  auto& P = tr.model_.params();
  load_params(P, f, path);
  tr.step_ = std::stoul(f.metadata.at("posemb.lab.step"));
  const auto adam_steps = std::stoll(f.metadata.at("posemb.lab.adamw_steps"));
  if (adam_steps > 0) {
    std::vector<Matrix<float>> m1, m2;
    for (std::size_t i = 0; i < P.count(); ++i) {
      const auto& name = P.info(i).name;
      m1.push_back(tensor_matrix(f, "optimizer.adamw.m." + name, path));
      m2.push_back(tensor_matrix(f, "optimizer.adamw.v." + name, path));
      if (m1.back().rows() != P.info(i).rows || m2.back().rows() != P.info(i).rows ||
          m1.back().cols() != P.info(i).cols || m2.back().cols() != P.info(i).cols) {
        throw std::runtime_error("checkpoint: the optimizer state of " + name + " in " + path +
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
  std::optional<PositionTable> table;
  if (!table_path.empty()) {
    if (!has_table(run.model.pe)) {
      throw std::invalid_argument("eval: " + path + " uses " + pe_kind_name(run.model.pe) +
                                  ", which has no learned table to replace");
    }
    table = load_position_table(table_path);
    if (table->values.cols() != run.model.d_model) {
      throw std::invalid_argument(
          "eval: the table in " + table_path + " has " + std::to_string(table->values.cols()) +
          " columns, the model's d_model is " + std::to_string(run.model.d_model));
    }
    run.model.max_seq_len = table->positions();
  } else if (has_table(run.model.pe)) {
    run.model.max_seq_len = tensor_matrix(f, "wpe.weight", path).rows();
  }
  Model model(run.model);
  load_params(model.params(), f, path, table.has_value());
  if (table) {
    auto& P = model.params();
    copy_into(P.value(P.wpe), Matrix<float>(table->usable()), "position table", table_path);
  }
  if (settings != nullptr) *settings = run;
  return model;
}

}  // namespace posemb::lab
