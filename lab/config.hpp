// lab/config.hpp: every setting of the lab (model, task, training, evaluation), the limits of
// each, and their one validation.
//
//   lab::RunConfig run;                       // the demo's defaults
//   run.model.pe = "sinusoidal";
//   run.task.train_len = 12;
//   run.model.vocab_size = run.task.vocab_size();
//   run.validate();                           // throws lab::ConfigError naming the fields
//   lab::limits::train_len.contains(5000);    // false: the range the CLI's flags reuse
//
// Limits live here, once: validate() checks against them and the CLI builds its flag ranges
// and their --help text from them. Messages name config fields ("model.d_model"), never CLI
// flags; ConfigError::fields() lists them so a front end can name its own flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace posemb::lab {

// A closed or half-open range of allowed values for a setting.
template <class T>
struct Limit {
  T min, max;
  bool min_open = false, max_open = false;  // true: the end itself is excluded
  // False for NaN.
  constexpr bool contains(T v) const {
    if (!(v == v)) return false;
    const bool above = min_open ? v > min : v >= min;
    const bool below = max_open ? v < max : v <= max;
    return above && below;
  }
  // "[2, 1000]", "(0, 1)", "(0, inf)".
  std::string text() const;
};

namespace limits {
inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Model.
inline constexpr Limit<std::size_t> d_model{2, 4096};
inline constexpr Limit<std::size_t> n_layers{1, 64};
inline constexpr Limit<std::size_t> n_heads{1, 64};
inline constexpr Limit<std::size_t> d_ff{1, 65536};
inline constexpr Limit<std::size_t> max_seq_len{1, std::size_t{1} << 20};  // table rows
inline constexpr Limit<double> positive{0.0, kInf, true, true};            // bases
// Stds of the weights' N(0, std) initialization: far larger ones overflow float in the first
// products of the forward (1e30 gave a NaN loss at the second step), whatever the lr.
inline constexpr Limit<double> init_std{0.0, 1000.0, true, false};
// RoPE scaling factor: no length the lab runs needs more than its longest evaluation's positions
// over its shortest training's (2 * 100000 + 2 over 4, about 5e4); 1e308 was accepted and run.
inline constexpr Limit<double> rope_factor{1.0, 1e5};
// Task.
inline constexpr Limit<std::size_t> alphabet{2, 1000};
inline constexpr Limit<std::size_t> train_len{1, 1024};
// Training.
inline constexpr Limit<std::size_t> batch{1, 65536};
inline constexpr Limit<std::size_t> micro_batch{1, 65536};
inline constexpr Limit<std::size_t> steps{1, 100000000};
inline constexpr Limit<std::size_t> warmup{0, 100000000};
inline constexpr Limit<double> lr{0.0, kInf, true, true};
inline constexpr Limit<double> min_lr_ratio{0.0, 1.0};
inline constexpr Limit<double> beta{0.0, 1.0, false, true};
inline constexpr Limit<double> non_negative{0.0, kInf, false, true};  // weight decay, clip
// Evaluation.
inline constexpr Limit<std::size_t> eval_len{1, 100000};  // n, symbols per instance
inline constexpr Limit<std::size_t> samples{1, 100000};
// Multiply-adds of one evaluation (lab::evaluation_work): about an hour on one core; 1000 times
// the demo's.
inline constexpr Limit<double> eval_work{0.0, 1e13};
}  // namespace limits

// An unusable setting. what() names the fields and values; fields() lists them qualified
// ("model.d_model", "task.train_len", "train.lr", "eval.max_len").
class ConfigError : public std::invalid_argument {
 public:
  ConfigError(std::vector<std::string> fields, const std::string& what)
      : std::invalid_argument(what), fields_(std::move(fields)) {}
  const std::vector<std::string>& fields() const noexcept { return fields_; }

 private:
  std::vector<std::string> fields_;
};

// How positions are assigned to a sequence of len tokens: 0..len-1, or (Ruoss et al. 2023) a
// sorted sample of len distinct positions drawn uniformly from [0, table rows).
enum class PositionMode { contiguous, randomized };

// The name of the first registered encoding (lab/encoding.hpp), the default of --pe.
const std::string& default_encoding_name();

// The RoPE scaling methods the lab offers, in --help order: none, linear, ntk, dynamic, yarn
// (the library's names; none, the first: no scaling).
const std::vector<std::string>& rope_scaling_methods();

// RoPE run past the length it was trained at (encodings that rotate q and k, rope; the
// library's posemb/rope_scaling.hpp): the method, its factor s and the trained length L0 the
// method stretches. L0 is the number of positions of the longest training sequence of the run
// that trained the rotation, input_len(train_len) (see rope_scaling_for).
struct RopeScalingConfig {
  std::string method = rope_scaling_methods().front();  // one of rope_scaling_methods()
  double factor = 1.0;                                  // s, in limits::rope_factor
  std::size_t original_len = 0;                         // L0 >= 1 (0 with none)
  bool operator==(const RopeScalingConfig&) const = default;
  // "none", "linear x2 over 18 trained positions".
  std::string text() const;
};

struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t d_model = 64;
  std::size_t n_layers = 2;
  std::size_t n_heads = 4;
  std::size_t d_ff = 256;
  std::string pe = default_encoding_name();  // a registered encoding (lab/encoding.hpp)
  std::size_t max_seq_len = 0;  // rows of the learned table (0 for an encoding without one)
  double rope_base = 10000.0;
  double sinusoidal_base = 10000.0;
  double init_std = 0.02;
  double embed_init_std = 0.02;    // std of the token embedding's N(0, std) initialization
  RopeScalingConfig rope_scaling;  // none unless a rope model is run or fine-tuned past L0
  // Throws ConfigError naming the field and value when the config is unusable.
  void validate() const;
  std::size_t head_dim() const { return d_model / n_heads; }
};

// The tasks (lab/task.hpp has their rules): every answer has the n symbols of its input.
enum class TaskKind { copy, reverse, sort, odd_first };

struct TaskConfig {
  TaskKind kind = TaskKind::copy;
  std::size_t alphabet = 8;
  std::size_t train_len = 16;  // n is drawn uniformly from [1, train_len] in training
  std::size_t vocab_size() const { return alphabet + 4; }
  void validate() const;
};

struct TrainConfig {
  std::size_t batch = 32;
  // Sequences per micro-batch: micro-batches run in parallel (one per thread at a time) and
  // their gradients are summed in micro-batch order, so the result does not depend on threads.
  std::size_t micro_batch = 8;
  // Order the batch's rows by length before cutting micro-batches, and run each micro-batch only
  // as long as its longest sequence (same gradient as padding everything to the longest, less
  // work). Off: every micro-batch is padded to 2*train_len+2 (what `posemb bench` measures, the
  // same work as the PyTorch peer).
  bool sort_by_length = true;
  std::size_t steps = 1000;
  std::size_t warmup = 50;  // linear warmup steps, then cosine decay to min_lr_ratio * lr
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.98f;
  float grad_clip = 1.0f;  // global gradient norm; 0 disables
  std::uint64_t seed = 1;
  void validate() const;
};

struct EvalConfig {
  std::size_t min_len = 1, max_len = 32;  // n, inclusive
  std::size_t samples = 100;
  std::uint64_t seed = 1234;
  // For an encoding trained on randomized positions (learned-randomized): positions at
  // evaluation. randomized (default; Ruoss et al.): a sorted random sample from [0, table rows),
  // as in training; contiguous: 0..len-1. Other encodings always use contiguous positions.
  PositionMode randomized_eval = PositionMode::randomized;
  void validate() const;
};

struct RunConfig {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  // Each part, then what ties them: vocab_size is the task's, and a learned table holds the
  // longest training sequence.
  void validate() const;
  // The settings as JSON (the checkpoint's metadata) and back. from_json takes untrusted text
  // (at most kMaxRunJsonBytes): every setting exactly once with its JSON type (whole numbers
  // for counts, numbers within float's range for float settings), no unknown or repeated key,
  // then validate(); throws ConfigError naming the field ("model.d_model") otherwise.
  std::string to_json() const;
  static RunConfig from_json(const std::string& text);
};

// The settings given for a new run that starts from a checkpoint's weights (`posemb train
// --init-from`): the fields named in `fields` take their value from `values`, every other
// setting is the checkpoint's.
//
//   lab::RunOverrides ov;
//   ov.values.train.steps = 500;  ov.fields.push_back("train.steps");
//   lab::RunConfig next = lab::merge_run(checkpoint.run, ov);   // the checkpoint's, 500 steps
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
// else input_len(trained.task.train_len). Method "none": no scaling. Checked by
// ModelConfig::validate, not here.
RopeScalingConfig rope_scaling_for(const RunConfig& trained, const std::string& method,
                                   double factor);

// Whether a run from a checkpoint may set `field`: the task and training settings may differ,
// the model's shape and encoding come from the checkpoint (its table's rows from a table file).
bool overridable_from_checkpoint(std::string_view field);
// base with each field of o copied from o.values, o's rope scaling (rope_scaling_for base), and
// model.vocab_size the task's. Throws
// ConfigError naming a field that is not overridable_from_checkpoint.
RunConfig merge_run(const RunConfig& base, const RunOverrides& o);

// The longest run JSON from_json reads (to_json writes about 600 bytes).
inline constexpr std::size_t kMaxRunJsonBytes = 65536;

// Model input length of an instance with n symbols: 2n + 2 (BOS x1..xn SEP y1..yn).
inline std::size_t input_len(std::size_t n) {
  return 2 * n + 2;
}

// A task's name on the command line and in files: copy, reverse, sort, odd-first.
TaskKind parse_task_kind(const std::string& name);  // ConfigError naming the choices otherwise
std::string task_kind_name(TaskKind kind);
std::vector<std::string> task_kind_names();  // every task's name, in the enum's order
std::string task_kind_list();                // the same, joined with ", "
std::string task_kind_rules();               // "copy (y = x), reverse (...), ...", for --help

// What a user chooses for a new run, with the choices that have a default depending on the
// others left open (0 or empty); complete_run fills them by the lab's rules:
//
//   lab::RunChoices c;                 // every setting at its default
//   c.pe = "rope";
//   c.run.task.train_len = 32;
//   lab::RunConfig run = lab::complete_run(c);   // d_ff 4 * d_model, the task's vocabulary, ...
struct RunChoices {
  RunChoices() { run.model.embed_init_std = 0.0; }  // 0: the encoding's default
  RunConfig run;  // the settings chosen; the fields below and vocab_size are filled from them
  std::string pe = default_encoding_name();  // a registered encoding
  std::string task = "copy";                 // parse_task_kind
  std::size_t max_seq_len = 0;               // table rows; 0: the encoding's default for train_len
  std::size_t d_ff = 0;                      // 0: 4 * d_model
};

// The validated RunConfig of c: the task kind and encoding parsed, model.pe and vocab_size set,
// d_ff 4 * d_model unless given, the table's rows the encoding's default for the training length
// unless given, the embedding's init std the encoding's unless given. Throws ConfigError naming
// the fields of an unknown, out-of-range or contradicting choice.
RunConfig complete_run(const RunChoices& c);

}  // namespace posemb::lab
