// lab/tasks/task.hpp: what a task is to the lab: its data in tokens and how it is scored. One
// TaskSpec per task, each in its own file of lab/tasks/, named in the registry
// (lab/tasks/registry.hpp); nothing else in the lab or the CLI names a task.
//
//   const lab::TaskSpec& task = lab::find_task("reverse");   // by name (--task)
//   task.tokens(12);                  // 26: the tokens of a row of length n = 12 (its length rule)
//   task.vocab_size(cfg);             // 12: the alphabet of 8 symbols and 4 special tokens
//   lab::Batch batch;
//   task.train_batch(batch, cfg, 32, seed, step, lab::PositionMode::contiguous, 0);
//   // batch.tokens, positions, targets: (32, task.tokens(cfg.train_len)) each
//
// Lengths. A task has its own length (the symbol tasks' n, a text's window) and its own rule
// from it to tokens; everything below the tasks (the trainer, the model, the checkpoint, the
// learned table's rows, RoPE's trained positions, memory estimates) knows tokens only: T, the
// columns of a batch, and tokens(length) where a length must become one.
//
// Targets. A batch holds the next token wherever the task counts a prediction (the symbol tasks:
// the answer and its EOS; a text: every token after the first) and -1 elsewhere: the loss of
// training and the scores of evaluation read these alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lab/config.hpp"
#include "posemb/matrix.hpp"
#include "posemb/positions.hpp"

namespace posemb::lab {

// A batch of rows of one task, each padded to the batch's T tokens.
struct Batch {
  Matrix<TokenId> tokens;               // (B, T) inputs
  Matrix<std::int64_t> positions;       // (B, T)
  Matrix<std::int32_t> targets;         // (B, T) the next token where it counts, -1 elsewhere
  std::vector<std::size_t> row_tokens;  // (B) tokens of each row before its padding (<= T)
  std::size_t counted = 0;              // targets that count (>= 0) in the whole batch
};

// The windows of length T and stride S (<= T) over a task's evaluation text (the text task: its
// corpus's validation text, lab/tasks/text.hpp): window k reads tokens [kS, kS + T) at positions
// restarting at 0; window 0 counts every target, a later one its last S (the ones no earlier
// window predicted). S = T: Press et al.'s non-overlapping windows.
struct WindowPlan {
  std::size_t tokens = 0;   // T
  std::size_t stride = 0;   // S
  std::size_t windows = 0;  // whole windows (0 when the text is shorter than T + 1 tokens)
  std::size_t scored = 0;   // targets predicted, each once: T + (windows - 1) S
  std::size_t dropped = 0;  // predictable targets after the last whole window (< S)
};

// How a task evaluated on the windows of a text instead of seeded rows makes them (nullptr for
// the symbol tasks).
struct EvalWindows {
  // The windows of length n (tokens) and stride S over the text of cfg (its first max_bytes
  // bytes; 0: all of it); throws std::invalid_argument unless 1 <= S <= n.
  WindowPlan (*plan)(const TaskConfig& cfg, std::size_t n, std::size_t stride,
                     std::size_t max_bytes);
  // Windows [first, first + count) of plan as a batch (positions by mode, range and seed, as
  // eval_batch's).
  void (*fill)(Batch& out, const TaskConfig& cfg, const WindowPlan& plan, std::size_t first,
               std::size_t count, PositionMode mode, std::size_t range, std::uint64_t seed);
};

// The demo's budget for a task (lab/experiment/demo_plan.hpp): its training length L, steps, model
// and evaluation. The fields after `samples` have the symbol tasks' values by default.
struct DemoPreset {
  std::size_t train_len;             // L
  std::size_t steps;                 // every encoding but the randomized one
  std::size_t randomized_steps;      // the encoding trained on randomized positions
  std::size_t randomized_rows;       // its table's rows
  std::size_t extension_steps;       // fine-tuning the extended learned table
  std::size_t rope_extension_steps;  // fine-tuning a rotary run with each RoPE scaling
  std::size_t rope_probe_every;      // steps between its probes
  std::size_t eval_max;              // the longest evaluated length
  std::size_t samples;               // instances per evaluated length
  // The model trained (a GPT of n_layers blocks) and its training: batch and peak lr.
  std::size_t d_model = 32, n_layers = 2, n_heads = 4, d_ff = 128, batch = 32;
  float lr = 3e-3f;
  // A task evaluated on the windows of a text: the evaluation text's bytes read at every length
  // (EvalConfig::text_bytes; 0: all of it).
  std::size_t eval_bytes = 0;
  // Also train the encodings with a trained bias on the scores (T5's; EncodingSpec::
  // trained_bias()) besides those marked in_demo: a line of Press et al.'s Figure 1, measured on
  // text.
  bool trained_bias = false;
};

// What a task is, independent of any run: its name, rule, vocabulary, length rule, batches,
// scoring and demo presets. Code that treats tasks differently asks for a property (scoring),
// never for a name.
struct TaskSpec {
  std::string_view name;         // --task, checkpoints, results
  std::string_view rule;         // one line, for --help: "y = x reversed"
  std::string_view length_rule;  // the tokens of a row of length n, for messages: "2 n + 2"
  // Token ids the model reads and predicts for these settings (its vocab_size).
  std::size_t (*vocab_size)(const TaskConfig& cfg);
  // The tokens of a row of length n (strictly increasing in n).
  std::size_t (*tokens)(std::size_t n);
  // The training batch of `step`, a function of (seed, step) alone (a resumed run sees the same
  // data): rows up to the training length, T = tokens(cfg.train_len), shorter rows padded
  // (targets -1; positions repeat the row's last). mode/range: positions 0..len-1, or a sorted
  // sample of distinct positions from [0, range) (throws SequenceTooLong when T > range).
  void (*train_batch)(Batch& out, const TaskConfig& cfg, std::size_t rows, std::uint64_t seed,
                      std::uint64_t step, PositionMode mode, std::size_t range);
  // `rows` seeded rows of length n, T = tokens(n); SequenceTooLong as train_batch.
  void (*eval_batch)(Batch& out, const TaskConfig& cfg, std::size_t n, std::size_t rows,
                     std::uint64_t seed, PositionMode mode, std::size_t range);
  Scoring scoring;   // how its evaluation scores a length by default (lab/config.hpp)
  DemoPreset demo;   // `posemb demo --task NAME`
  DemoPreset quick;  // `posemb demo --quick --task NAME` (a smoke run)
  // The task's own checks of its settings (nullptr: none); throws ConfigError.
  void (*validate)(const TaskConfig& cfg);
  // Fills what the settings record of the task's data (the text task: its corpus's identity),
  // checking what they already record (nullptr: nothing to record; such a task takes no
  // corpus). Called when a run is made (lab::complete_task).
  void (*complete)(TaskConfig& cfg) = nullptr;
  // A task evaluated on the windows of a text (nullptr: on seeded rows, eval_batch).
  const EvalWindows* windows = nullptr;
};

}  // namespace posemb::lab
