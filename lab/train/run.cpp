// A run's settings as a whole (lab/train/run.hpp).
#include "lab/train/run.hpp"

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"

namespace posemb::lab {

void validate_run(const RunConfig& run) {
  const TaskSpec& task = validate_task(run.task);
  run.train.validate();
  const EncodingSpec& spec = validate_model(run.model);
  const std::size_t vocab = task.vocab_size(run.task);
  if (run.model.vocab_size != vocab) {
    throw ConfigError({"model.vocab_size", "task.alphabet"},
                      "run config: model vocab_size " + std::to_string(run.model.vocab_size) +
                          " is not the task's " + std::to_string(vocab) + " (" +
                          std::string(task.name) + ", alphabet " +
                          std::to_string(run.task.alphabet) + ")");
  }
  const std::size_t need = task.tokens(run.task.train_len);
  if (spec.has_table && run.model.max_seq_len < need) {
    throw ConfigError(
        {"model.max_seq_len", "task.train_len"},
        "run config: the learned table's max_seq_len " + std::to_string(run.model.max_seq_len) +
            " is shorter than the longest training row, " + std::string(task.length_rule) +
            " tokens at train_len n = " + std::to_string(run.task.train_len) + ": " +
            std::to_string(need));
  }
}

RunConfig run_from_json(const std::string& text) {
  RunConfig run = RunConfig::from_json(text);
  validate_run(run);
  return run;
}

std::size_t run_train_tokens(const RunConfig& run) {
  return train_tokens(run.task);
}

RunChoices::RunChoices() : pe(default_encoding_name()), task(default_task_name()) {
  run.model.embed_init_std = 0.0;  // 0: the encoding's default
}

RunConfig complete_run(const RunChoices& c) {
  RunConfig r = c.run;
  r.task.kind = c.task;
  const TaskSpec& task = find_task(c.task);
  const EncodingSpec& spec = find_encoding(c.pe);
  r.model.pe = c.pe;
  if (r.model.embed_init_std <= 0.0) r.model.embed_init_std = spec.default_embed_init_std;
  r.model.d_ff = c.d_ff != 0 ? c.d_ff : 4 * r.model.d_model;
  r.model.vocab_size = task.vocab_size(r.task);
  r.model.max_seq_len =
      c.max_seq_len != 0 ? c.max_seq_len : spec.default_table_rows(task.tokens(r.task.train_len));
  complete_task(r.task);  // a text's corpus read and named
  r.model.relative_bias = spec.relative_bias_for(task.tokens(r.task.train_len), c.relative_bias);
  validate_run(r);
  return r;
}

RopeScalingConfig rope_scaling_for(const RunConfig& trained, const std::string& method,
                                   double factor) {
  RopeScalingConfig r;
  r.method = method;
  if (method == rope_scaling_methods().front()) return r;
  r.factor = factor;
  const RopeScalingConfig& had = trained.model.rope_scaling;
  r.original_len =
      had.method != rope_scaling_methods().front() ? had.original_len : run_train_tokens(trained);
  return r;
}

namespace {

// The settings a run from a checkpoint may take from the flags, each copying its value.
struct OverridableField {
  std::string_view field;
  void (*copy)(RunConfig& to, const RunConfig& from);
};

constexpr OverridableField kOverridable[] = {
    // Another task takes its own corpus, or none: the checkpoint's is not carried over.
    {"task.kind",
     [](RunConfig& t, const RunConfig& f) {
       if (t.task.kind == f.task.kind) return;
       t.task.kind = f.task.kind;
       t.task.corpus = f.task.corpus;
       t.task.corpus_identity = {};
     }},
    // Another corpus: named again when the run is made (complete_task).
    {"task.corpus",
     [](RunConfig& t, const RunConfig& f) {
       t.task.corpus = f.task.corpus;
       t.task.corpus_identity = {};
     }},
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
  r.model.vocab_size = task_vocab_size(r.task);
  complete_task(r.task);
  return r;
}

}  // namespace posemb::lab
