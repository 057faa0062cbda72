// lab/train/run.hpp: a run's settings as a whole: checked against the encoding and the task,
// completed from a user's choices, merged for a run from a checkpoint, and the RoPE scaling of a
// trained run. The settings themselves are lab/config.hpp's.
//
//   lab::RunChoices c;                           // every setting at its default
//   c.pe = "rope";
//   c.run.task.train_len = 32;
//   lab::RunConfig run = lab::complete_run(c);   // d_ff 4 * d_model, the task's vocabulary, ...
//   lab::validate_run(run);                      // what complete_run checked: ConfigError
//
//   // `posemb train --init-from`: the checkpoint's run with the flags given
//   lab::RunOverrides ov;
//   ov.values.train.steps = 500;  ov.fields.push_back("train.steps");
//   lab::RunConfig next = lab::merge_run(checkpoint.run, ov);   // the checkpoint's, 500 steps
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/config.hpp"

namespace posemb::lab {

// Every check of a run: the task (lab::validate_task), the training settings, the model with its
// encoding (lab::validate_model), then what ties them: the model's vocab_size is the task's, and
// a learned table holds the longest training row (the task's tokens at train_len). Throws
// ConfigError naming the fields.
void validate_run(const RunConfig& run);

// A run's settings from untrusted JSON (a checkpoint's posemb.lab.run): RunConfig::from_json,
// then validate_run. Throws ConfigError naming the field.
RunConfig run_from_json(const std::string& text);

// The tokens of the longest training row of run: its task's tokens at task.train_len.
std::size_t run_train_tokens(const RunConfig& run);

// What a user chooses for a new run, with the choices that have a default depending on the
// others left open (0 or empty); complete_run fills them by the lab's rules.
struct RunChoices {
  RunChoices();
  RunConfig run;     // the settings chosen; the fields below and vocab_size are filled from them
  std::string pe;    // a registered encoding (the registry's first by default)
  std::string task;  // a registered task (the registry's first by default)
  std::size_t max_seq_len = 0;  // table rows; 0: the encoding's default for the training rows
  std::size_t d_ff = 0;         // 0: 4 * d_model
  // An encoding with relative-position buckets (t5's): its buckets and max_distance; 0: the
  // encoding's default for the training rows (EncodingSpec::default_relative_bias).
  RelativeBiasConfig relative_bias;
};

// The validated RunConfig of c: the task and encoding looked up, model.pe and vocab_size set,
// d_ff 4 * d_model unless given, the table's rows and the relative-position buckets the
// encoding's defaults for the training rows' tokens unless given, the embedding's init std the
// encoding's unless given. Throws ConfigError naming the fields of an unknown, out-of-range or
// contradicting choice.
RunConfig complete_run(const RunChoices& c);

// The settings given for a new run that starts from a checkpoint's weights (`posemb train
// --init-from`): the fields named in `fields` take their value from `values`, every other
// setting is the checkpoint's.
struct RunOverrides {
  RunConfig values;
  std::vector<std::string> fields;  // config fields ("task.kind", "train.steps", ...)
  // A RoPE scaling for the new run (method and factor; its L0 from rope_scaling_for); unset:
  // the checkpoint's.
  std::optional<RopeScalingConfig> rope_scaling;
};

// The scaling `method` x `factor` of a rope model trained by the run `trained` (a checkpoint's
// settings): L0 is the length the rotation was trained at, the original_len of trained's own
// scaling when it has one (a model fine-tuned with a scaling keeps the length it stretches),
// else the tokens of trained's longest training row. Method "none": no scaling. Checked by
// validate_model, not here.
RopeScalingConfig rope_scaling_for(const RunConfig& trained, const std::string& method,
                                   double factor);

// Whether a run from a checkpoint may set `field`: the task and training settings may differ,
// the model's shape and encoding come from the checkpoint (its table's rows from a table file).
bool overridable_from_checkpoint(std::string_view field);
// base with each field of o copied from o.values, o's rope scaling (rope_scaling_for base), and
// model.vocab_size the task's. Throws ConfigError naming a field that is not
// overridable_from_checkpoint.
RunConfig merge_run(const RunConfig& base, const RunOverrides& o);

}  // namespace posemb::lab
