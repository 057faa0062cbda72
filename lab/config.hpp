// lab/config.hpp: the lab's settings (model, task, training, evaluation), the limits of each,
// and the checks of their fields. The settings are the one part of the lab outside a room: every
// room reads them, and they include nothing of the lab (docs/architecture.md, "The lab's rooms").
//
//   lab::RunConfig run;                       // every field at its default; no encoding, no task
//   run.model.pe = "sinusoidal";              // names are the registries' (lab/encodings/,
//   run.task.kind = "reverse";                //   lab/tasks/)
//   run.task.train_len = 12;
//   run.check_fields();                       // throws lab::ConfigError naming the fields
//   lab::validate_run(run);                   // the same, then the encoding's and the task's
//                                             //   checks (lab/train/run.hpp)
//   lab::limits::train_len.contains(5000);    // false: the range the CLI's flags reuse
//
// Limits live here, once: the checks read them and the CLI builds its flag ranges and their
// --help text from them. Messages name config fields ("model.d_model"), never CLI flags;
// ConfigError::fields() lists them so a front end can name its own flags. A setting that names
// something (model.pe, task.kind) is checked by the registry that holds the names.
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
// A relative bias's buckets (T5: 32) and the distance where its log-spaced buckets end (T5: 128).
inline constexpr Limit<std::size_t> num_buckets{2, 4096};
inline constexpr Limit<std::size_t> max_distance{2, std::size_t{1} << 20};
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
// Multiply-adds of one training run on each rank (lab::Trainer::training_work: steps x batch x 3
// forward passes over the longest training row, shared among the ranks): 1000 times eval_work,
// about six weeks of one core at its rate. A run past it is refused before it starts instead of
// running for months.
inline constexpr Limit<double> train_work{0.0, 1e16};
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

// The RoPE scaling methods the lab offers, in --help order: none, linear, ntk, dynamic, yarn
// (the library's names; none, the first: no scaling).
const std::vector<std::string>& rope_scaling_methods();

// RoPE run past the length it was trained at (encodings that rotate q and k, rope; the
// library's posemb/rope_scaling.hpp): the method, its factor s and the trained length L0 the
// method stretches. L0 is the number of positions of the longest training sequence of the run
// that trained the rotation, its task's tokens at train_len (lab::rope_scaling_for,
// lab/train/run.hpp).
struct RopeScalingConfig {
  std::string method = rope_scaling_methods().front();  // one of rope_scaling_methods()
  double factor = 1.0;                                  // s, in limits::rope_factor
  std::size_t original_len = 0;                         // L0 >= 1 (0 with none)
  bool operator==(const RopeScalingConfig&) const = default;
  // "none", "linear x2 over 18 trained positions".
  std::string text() const;
};

// The buckets of a learned bias by relative position (T5's, posemb/relative_bias.hpp; the
// encodings whose spec has default_relative_bias): num_buckets rows of the (num_buckets, n_heads)
// table and max_distance, where the log-spaced buckets end. Both 0 for every other encoding.
struct RelativeBiasConfig {
  std::size_t num_buckets = 0;   // in limits::num_buckets, or 0
  std::size_t max_distance = 0;  // in limits::max_distance, or 0
  bool operator==(const RelativeBiasConfig&) const = default;
  bool empty() const { return num_buckets == 0 && max_distance == 0; }
};

struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t d_model = 64;
  std::size_t n_layers = 2;
  std::size_t n_heads = 4;
  std::size_t d_ff = 256;
  std::string pe;               // a registered encoding (lab/encodings/registry.hpp); "": none
  std::size_t max_seq_len = 0;  // rows of the learned table (0 for an encoding without one)
  double rope_base = 10000.0;
  double sinusoidal_base = 10000.0;
  double init_std = 0.02;
  double embed_init_std = 0.02;      // std of the token embedding's N(0, std) initialization
  RopeScalingConfig rope_scaling;    // none unless a rope model is run or fine-tuned past L0
  RelativeBiasConfig relative_bias;  // set for an encoding with relative-position buckets only
  // The fields within their limits and consistent with each other (d_model a multiple of
  // n_heads; the rope scaling's method, factor and L0); throws ConfigError naming the field and
  // value. What depends on the encoding (max_seq_len, a scaling's encoding, the encoding's own
  // checks): lab::validate_model (lab/encodings/registry.hpp).
  void check_fields() const;
  std::size_t head_dim() const { return d_model / n_heads; }
};

// What names a text corpus (lab/tasks/corpus.hpp): recorded in a text run's settings (so in its
// checkpoint), compared with the corpus a run or an evaluation reads.
struct CorpusIdentity {
  std::string name;  // the file's name without its folders ("moby-dick.txt")
  std::size_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits, what `sha256sum FILE` prints
  bool operator==(const CorpusIdentity&) const = default;
  bool empty() const { return bytes == 0 && name.empty() && sha256.empty(); }
  // "'moby-dick.txt' (1216415 bytes, sha256 3a19c43c7ade3e2b...)": the digest's first 16 digits.
  std::string text() const;
};

struct TaskConfig {
  std::string kind;            // a registered task (lab/tasks/registry.hpp); "": none
  std::size_t alphabet = 8;    // symbols of a symbol task
  std::size_t train_len = 16;  // the task's length of its longest training rows (its n)
  // The text task's corpus (lab/tasks/corpus.hpp): the file as given ("": the default corpus),
  // and what names its content: filled from the file when a run is made (lab::complete_task,
  // lab/tasks/registry.hpp), then checked against the file whenever it is read again (a
  // resumed run, an evaluation). Empty for the other tasks.
  std::string corpus;
  CorpusIdentity corpus_identity;
  // alphabet and train_len within their limits, a corpus identity whole (a name, a size and 64
  // hex digits) or empty; throws ConfigError. The task's own checks: lab::validate_task
  // (lab/tasks/registry.hpp).
  void check_fields() const;
};

struct TrainConfig {
  std::size_t batch = 32;
  // Sequences per micro-batch: micro-batches run in parallel (one per thread at a time) and
  // their gradients are summed in micro-batch order, so the result does not depend on threads.
  std::size_t micro_batch = 8;
  // Order the batch's rows by length before cutting micro-batches, and run each micro-batch only
  // as long as its longest sequence (same gradient as padding everything to the longest, less
  // work). Off: every micro-batch is padded to the batch's tokens (what `posemb bench` measures,
  // the same work as the PyTorch peer).
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

// How an evaluation scores a model at each length (the scorers of lab/eval/).
enum class Scoring {
  greedy,          // the model decodes after the first counted target from its own outputs;
                   // exact match and token accuracy of the counted targets (the symbol tasks')
  teacher_forced,  // every input given; the counted targets' mean negative log-likelihood
                   // (loss, and bits per token)
};
// The scorings' names (--scoring, results files), in the enum's order: greedy, teacher-forced.
const std::vector<std::string>& scoring_names();
const std::string& scoring_name(Scoring s);
// The scoring called name; throws ConfigError (field eval.scoring) naming the choices otherwise.
Scoring parse_scoring(const std::string& name);

struct EvalConfig {
  std::size_t min_len = 1, max_len = 32;  // the task's lengths (n), inclusive
  // The lengths evaluated when they are not one range (`--lengths 64,128,256,512`): increasing,
  // each in limits::eval_len; empty: min_len..max_len.
  std::vector<std::size_t> lengths;
  // A task scored on the windows of a text (the text task): the stride in tokens of the
  // sliding-window figure (0: half the window, so every token is predicted with at least half a
  // window of context; a window shorter than the stride slides by its own length, as the
  // non-overlapping windows do).
  std::size_t stride = 0;
  // A task scored on the windows of a text: only the first text_bytes bytes of its evaluation
  // text are read, the same bytes at every length (0: the whole text). Bounds the work of long
  // windows (`posemb demo --task text`).
  std::size_t text_bytes = 0;
  std::size_t samples = 100;
  std::uint64_t seed = 1234;
  // For an encoding trained on randomized positions (learned-randomized): positions at
  // evaluation. randomized (default; Ruoss et al.): a sorted random sample from [0, table rows),
  // as in training; contiguous: 0..len-1. Other encodings always use contiguous positions.
  PositionMode randomized_eval = PositionMode::randomized;
  // How each length is scored; unset: the task's own (TaskSpec::scoring, lab/tasks/task.hpp).
  std::optional<Scoring> scoring;
  void validate() const;
  // The evaluated lengths, increasing: `lengths`, or min_len..max_len.
  std::vector<std::size_t> length_list() const;
};

struct RunConfig {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  // Each part's fields (check_fields, TrainConfig::validate). What ties them to the encoding and
  // the task (vocab_size is the task's, a learned table holds the longest training row) is
  // lab::validate_run's (lab/train/run.hpp).
  void check_fields() const;
  // The settings as JSON (the checkpoint's metadata) and back. from_json takes untrusted text
  // (at most kMaxRunJsonBytes): every setting exactly once with its JSON type (whole numbers
  // for counts, numbers within float's range for float settings), no unknown or repeated key,
  // then check_fields(); throws ConfigError naming the field ("model.d_model") otherwise.
  std::string to_json() const;
  static RunConfig from_json(const std::string& text);
};

// Throws ConfigError "<part> config: <field> <value> must be in <range>" (field "<part>.<field>")
// when lim does not contain value: the check of every counted setting.
void check_limit(const char* part, const char* field, std::size_t value,
                 const Limit<std::size_t>& lim);

// The longest run JSON from_json reads (to_json writes about 600 bytes).
inline constexpr std::size_t kMaxRunJsonBytes = 65536;

}  // namespace posemb::lab
