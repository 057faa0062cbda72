#include "lab/config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "lab/encodings/encoding.hpp"
#include "posemb/errors.hpp"

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

// The scaling's method, factor and L0; the method's own parameters are the library's to check
// (the rope encoding's validate).
void validate_rope_scaling(const ModelConfig& m, const EncodingSpec& spec) {
  const RopeScalingConfig& r = m.rope_scaling;
  const auto& methods = rope_scaling_methods();
  if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
    std::string names;
    for (const auto& n : methods) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError(
        {"model.rope_scaling"},
        "model config: rope scaling " + quote_untrusted(r.method, 64) + " is not one of " + names);
  }
  if (r.method == methods.front()) {
    if (r.original_len != 0 || r.factor != 1.0) {
      throw ConfigError({"model.rope_factor"},
                        "model config: a rope factor or original length without a rope scaling");
    }
    return;
  }
  if (spec.site != EncodingSite::attention) {
    throw ConfigError({"model.rope_scaling", "model.pe"}, "model config: rope scaling " + r.method +
                                                              " stretches the rotation of q "
                                                              "and k, and encoding " +
                                                              std::string(spec.name) + " has none");
  }
  check("model", "rope_factor", r.factor, limits::rope_factor);
  if (r.original_len == 0) {
    throw ConfigError({"model.rope_scaling"},
                      "model config: rope scaling " + r.method + " needs the trained length >= 1");
  }
}

}  // namespace

const std::vector<std::string>& rope_scaling_methods() {
  static const std::vector<std::string> m = {"none", "linear", "ntk", "dynamic", "yarn"};
  return m;
}

std::string RopeScalingConfig::text() const {
  if (method == rope_scaling_methods().front()) return method;
  std::ostringstream o;
  o << method << " x" << factor << " over " << original_len << " trained positions";
  return o.str();
}

RopeScalingConfig rope_scaling_for(const RunConfig& trained, const std::string& method,
                                   double factor) {
  RopeScalingConfig r;
  r.method = method;
  if (method == rope_scaling_methods().front()) return r;
  r.factor = factor;
  const RopeScalingConfig& had = trained.model.rope_scaling;
  r.original_len = had.method != rope_scaling_methods().front() ? had.original_len
                                                                : input_len(trained.task.train_len);
  return r;
}

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
  check("model", "init_std", init_std, limits::init_std);
  check("model", "embed_init_std", embed_init_std, limits::init_std);
  validate_rope_scaling(*this, spec);
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

namespace {

struct TaskName {
  TaskKind kind;
  const char* name;
  const char* rule;
};

constexpr TaskName kTaskNames[] = {
    {TaskKind::copy, "copy", "y = x"},
    {TaskKind::reverse, "reverse", "y = x reversed"},
    {TaskKind::sort, "sort", "y = x in ascending order"},
    {TaskKind::odd_first, "odd-first", "y = x1 x3 x5 ... then x2 x4 ..."},
};

}  // namespace

TaskKind parse_task_kind(const std::string& name) {
  for (const auto& t : kTaskNames) {
    if (name == t.name) return t.kind;
  }
  throw ConfigError({"task.kind"}, "task config: task " + quote_untrusted(name, 64) +
                                       " is not one of " + task_kind_list());
}

std::string task_kind_name(TaskKind kind) {
  for (const auto& t : kTaskNames) {
    if (kind == t.kind) return t.name;
  }
  throw std::invalid_argument("task_kind_name: task kind " +
                              std::to_string(static_cast<int>(kind)) + " has no name");
}

std::vector<std::string> task_kind_names() {
  std::vector<std::string> names;
  for (const auto& t : kTaskNames) names.emplace_back(t.name);
  return names;
}

std::string task_kind_list() {
  std::string out;
  for (const auto& t : kTaskNames) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

std::string task_kind_rules() {
  std::string out;
  for (const auto& t : kTaskNames) {
    out += (out.empty() ? "" : ", ") + std::string(t.name) + " (" + t.rule + ")";
  }
  return out;
}

namespace {

// The settings a run from a checkpoint may take from the flags, each copying its value.
struct OverridableField {
  std::string_view field;
  void (*copy)(RunConfig& to, const RunConfig& from);
};

constexpr OverridableField kOverridable[] = {
    {"task.kind", [](RunConfig& t, const RunConfig& f) { t.task.kind = f.task.kind; }},
    {"task.alphabet", [](RunConfig& t, const RunConfig& f) { t.task.alphabet = f.task.alphabet; }},
    {"task.train_len",
     [](RunConfig& t, const RunConfig& f) { t.task.train_len = f.task.train_len; }},
    {"train.batch", [](RunConfig& t, const RunConfig& f) { t.train.batch = f.train.batch; }},
    {"train.micro_batch",
     [](RunConfig& t, const RunConfig& f) { t.train.micro_batch = f.train.micro_batch; }},
    {"train.steps", [](RunConfig& t, const RunConfig& f) { t.train.steps = f.train.steps; }},
    {"train.lr", [](RunConfig& t, const RunConfig& f) { t.train.lr = f.train.lr; }},
    {"train.warmup", [](RunConfig& t, const RunConfig& f) { t.train.warmup = f.train.warmup; }},
    {"train.min_lr_ratio",
     [](RunConfig& t, const RunConfig& f) { t.train.min_lr_ratio = f.train.min_lr_ratio; }},
    {"train.weight_decay",
     [](RunConfig& t, const RunConfig& f) { t.train.weight_decay = f.train.weight_decay; }},
    {"train.beta1", [](RunConfig& t, const RunConfig& f) { t.train.beta1 = f.train.beta1; }},
    {"train.beta2", [](RunConfig& t, const RunConfig& f) { t.train.beta2 = f.train.beta2; }},
    {"train.grad_clip",
     [](RunConfig& t, const RunConfig& f) { t.train.grad_clip = f.train.grad_clip; }},
    {"train.seed", [](RunConfig& t, const RunConfig& f) { t.train.seed = f.train.seed; }},
};

const OverridableField* find_overridable(std::string_view field) {
  for (const auto& f : kOverridable) {
    if (f.field == field) return &f;
  }
  return nullptr;
}

}  // namespace

bool overridable_from_checkpoint(std::string_view field) {
  return find_overridable(field) != nullptr;
}

RunConfig merge_run(const RunConfig& base, const RunOverrides& o) {
  RunConfig r = base;
  for (const auto& field : o.fields) {
    const OverridableField* f = find_overridable(field);
    if (f == nullptr) {
      throw ConfigError({field}, "init from checkpoint: " + field +
                                     " cannot be set: the model's shape and encoding come from "
                                     "the checkpoint");
    }
    f->copy(r, o.values);
  }
  if (o.rope_scaling) {
    r.model.rope_scaling = rope_scaling_for(base, o.rope_scaling->method, o.rope_scaling->factor);
  }
  r.model.vocab_size = r.task.vocab_size();
  return r;
}

RunConfig complete_run(const RunChoices& c) {
  RunConfig r = c.run;
  r.task.kind = parse_task_kind(c.task);
  const EncodingSpec& spec = find_encoding(c.pe);
  r.model.pe = c.pe;
  if (r.model.embed_init_std <= 0.0) r.model.embed_init_std = spec.default_embed_init_std;
  r.model.d_ff = c.d_ff != 0 ? c.d_ff : 4 * r.model.d_model;
  r.model.vocab_size = r.task.vocab_size();
  r.model.max_seq_len =
      c.max_seq_len != 0 ? c.max_seq_len : spec.default_table_rows(r.task.train_len);
  r.validate();
  return r;
}

}  // namespace posemb::lab
