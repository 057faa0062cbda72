#include "lab/config.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "lab/encoding.hpp"

namespace posemb::lab {

template <class T>
std::string Limit<T>::text() const {
  auto num = [](T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
      std::ostringstream o;
      o << v;
      return o.str();
    } else {
      return std::to_string(v);
    }
  };
  std::string s(min_open ? "(" : "[");
  s += num(min);
  s += ", ";
  s += num(max);
  s += max_open ? ")" : "]";
  return s;
}
template struct Limit<std::size_t>;
template struct Limit<double>;

namespace {

// Throws ConfigError "<part> config: <field> <value> must be in <range>".
template <class T, class V>
void check(const char* part, const char* field, V value, const Limit<T>& lim) {
  if (lim.contains(static_cast<T>(value))) return;
  std::ostringstream o;
  o << part << " config: " << field << ' ' << value << " must be in " << lim.text();
  throw ConfigError({std::string(part) + "." + field}, o.str());
}

}  // namespace

void ModelConfig::validate() const {
  const auto& spec = find_encoding(pe);
  if (vocab_size < 2) {
    throw ConfigError({"model.vocab_size"},
                      "model config: vocab_size " + std::to_string(vocab_size) + " must be >= 2");
  }
  check("model", "d_model", d_model, limits::d_model);
  check("model", "n_layers", n_layers, limits::n_layers);
  check("model", "n_heads", n_heads, limits::n_heads);
  check("model", "d_ff", d_ff, limits::d_ff);
  if (d_model % n_heads != 0) {
    throw ConfigError({"model.d_model", "model.n_heads"},
                      "model config: d_model " + std::to_string(d_model) +
                          " is not a multiple of n_heads " + std::to_string(n_heads));
  }
  if (spec.has_table) {
    check("model", "max_seq_len", max_seq_len, limits::max_seq_len);
  } else if (max_seq_len != 0) {
    throw ConfigError({"model.max_seq_len", "model.pe"},
                      "model config: max_seq_len " + std::to_string(max_seq_len) +
                          " sets the rows of a learned table, and encoding " +
                          std::string(spec.name) + " has none (it must be 0)");
  }
  check("model", "rope_base", rope_base, limits::positive);
  check("model", "sinusoidal_base", sinusoidal_base, limits::positive);
  check("model", "init_std", init_std, limits::positive);
  check("model", "embed_init_std", embed_init_std, limits::positive);
  if (spec.validate != nullptr) spec.validate(*this);
}

void TaskConfig::validate() const {
  check("task", "alphabet", alphabet, limits::alphabet);
  check("task", "train_len", train_len, limits::train_len);
}

void TrainConfig::validate() const {
  check("train", "batch", batch, limits::batch);
  check("train", "micro_batch", micro_batch, limits::micro_batch);
  check("train", "steps", steps, limits::steps);
  check("train", "warmup", warmup, limits::warmup);
  check("train", "lr", lr, limits::lr);
  check("train", "min_lr_ratio", min_lr_ratio, limits::min_lr_ratio);
  check("train", "weight_decay", weight_decay, limits::non_negative);
  check("train", "beta1", beta1, limits::beta);
  check("train", "beta2", beta2, limits::beta);
  check("train", "grad_clip", grad_clip, limits::non_negative);
}

void EvalConfig::validate() const {
  check("eval", "min_len", min_len, limits::eval_len);
  check("eval", "max_len", max_len, limits::eval_len);
  if (max_len < min_len) {
    throw ConfigError({"eval.min_len", "eval.max_len"},
                      "eval config: lengths " + std::to_string(min_len) + ".." +
                          std::to_string(max_len) + " are empty (min_len > max_len)");
  }
  check("eval", "samples", samples, limits::samples);
}

void RunConfig::validate() const {
  task.validate();
  train.validate();
  model.validate();
  if (model.vocab_size != task.vocab_size()) {
    throw ConfigError({"model.vocab_size", "task.alphabet"},
                      "run config: model vocab_size " + std::to_string(model.vocab_size) +
                          " is not the task's " + std::to_string(task.vocab_size()) +
                          " (alphabet " + std::to_string(task.alphabet) + " + 4 special tokens)");
  }
  const auto& spec = find_encoding(model.pe);
  const std::size_t need = input_len(task.train_len);
  if (spec.has_table && model.max_seq_len < need) {
    throw ConfigError({"model.max_seq_len", "task.train_len"},
                      "run config: the learned table's max_seq_len " +
                          std::to_string(model.max_seq_len) +
                          " is shorter than the longest training sequence, 2 * train_len " +
                          std::to_string(task.train_len) + " + 2 = " + std::to_string(need));
  }
}

TaskKind parse_task_kind(const std::string& name) {
  if (name == "copy") return TaskKind::copy;
  if (name == "reverse") return TaskKind::reverse;
  throw ConfigError({"task.kind"}, "task config: task '" + name + "' is not one of copy, reverse");
}

std::string task_kind_name(TaskKind kind) {
  return kind == TaskKind::copy ? "copy" : "reverse";
}

std::string RunConfig::to_json() const {
  nlohmann::ordered_json j;
  j["model"] = {{"vocab_size", model.vocab_size},
                {"d_model", model.d_model},
                {"n_layers", model.n_layers},
                {"n_heads", model.n_heads},
                {"d_ff", model.d_ff},
                {"pe", model.pe},
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
  c.model.pe = m.at("pe").get<std::string>();
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

}  // namespace posemb::lab
