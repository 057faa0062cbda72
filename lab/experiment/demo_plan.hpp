// lab/experiment/demo_plan.hpp: the demo's plan (`posemb demo`): its options, its task's preset
// (lab/tasks/), every run's settings, and the checks made before anything runs. The CLI maps its
// flags to DemoOptions, plans, runs (lab/experiment/demo_run.hpp) and writes the files
// (demo_files.hpp).
//
//   lab::DemoOptions o;  o.quick = true;           // the flags of `posemb demo`
//   const lab::DemoPlan plan = lab::plan_demo(o);  // every run's settings
//   lab::check_demo(plan);                         // work and memory, before anything is written
//
// The demo: every registered encoding marked in_demo (lab/encodings/) trained with `seeds`
// seeds from scratch; then each learned table (the encoding with a table and contiguous
// positions) extended to twice the training length by four methods and fine-tuned, exact match
// past L probed along the way; and each rotary run (the encoding that rotates q and k) run at
// twice its training length with each RoPE scaling method (factor 2: none, linear, ntk, dynamic,
// yarn), measured before any update and fine-tuned with that scaling, probed every 100 steps.
// Results are a function of the options (the seeds, the steps), never of the threads.
//
// A task scored teacher-forced on the windows of a text (the text task) has the text demo
// instead (`language`): every encoding (in_demo, and a trained bias on the scores when the preset
// says so) evaluated in bits per byte at L, 2L, 4L, 8L on the same bytes of the evaluation text;
// each learned table extended to 2L by copy, interpolate and random rows, and each rotary run at
// 2L and 4L with none, linear, ntk and yarn, each evaluated before any update and after a short
// fine-tuning (lab/experiment/lm_demo.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {

// The flags of `posemb demo`; 0 means the preset's value.
struct DemoOptions {
  bool quick = false;
  std::string task = default_task_name();
  std::size_t parallel_runs = 1;  // runs trained at a time, one thread each
  std::uint64_t seed = 1;         // the first of `seeds` consecutive seeds
  std::size_t seeds = 3;
  std::size_t steps = 0;                 // learned, sinusoidal, rope, none ...
  std::size_t randomized_steps = 0;      // an encoding trained on randomized positions
  std::size_t extension_steps = 0;       // fine-tuning after extending the table
  std::size_t rope_extension_steps = 0;  // fine-tuning a rotary run with a RoPE scaling
  std::size_t eval_max = 0;              // longest evaluated n
  std::size_t samples = 0;               // instances per evaluated length
  std::string corpus;                    // a task with a corpus: its file ("": the default)
};

// Every setting of the demo, resolved from DemoOptions and the preset of its task.
struct DemoPlan {
  DemoOptions options;
  std::size_t train_len = 0;  // L
  std::size_t steps = 0, randomized_steps = 0, randomized_rows = 0;
  std::size_t extension_steps = 0, probe_every = 0;
  std::vector<std::string> encodings;  // the registered ones marked in_demo, in registry order
  std::string extended;                // the encoding whose table is extended
  std::vector<ResizeMethod> methods;   // copy, interpolate, random, sinusoidal
  EvalConfig eval;                     // 1..eval_max, `samples` per length
  // Extending RoPE: the rotary encoding ("" when none is registered), the scaling methods
  // (rope_scaling_methods(), none first), their factor (2: from L to 2L), the fine-tuning steps
  // and the steps between probes (0 included).
  std::string rotary;
  std::vector<std::string> rope_methods;
  double rope_factor = 2.0;
  // The text demo: language is true, RoPE is scaled by each of rope_factors (2 and 4: to 2L and
  // 4L); the symbol demo: rope_factors is {rope_factor}.
  bool language = false;
  std::vector<double> rope_factors;
  DemoPreset preset;  // the task's preset the plan was made from (its model and training)
  std::size_t rope_extension_steps = 0, rope_probe_every = 0;

  // The from-scratch run of encoding pe with seed.
  RunConfig run(const std::string& pe, std::uint64_t seed) const;
  // A learned run's extension: its table extended to 2L, fine-tuned at n <= 2L.
  RunConfig extension_run(std::uint64_t seed) const;
  // A rotary run with a RoPE scaling method (factor over the run's trained positions,
  // lab::rope_scaling_for), fine-tuned at n <= factor L.
  RunConfig rope_extension_run(std::uint64_t seed, const std::string& method, double factor) const;
};

// The plan of o (its task's preset, then the steps and sizes given). Throws ConfigError
// (task.kind) for an unknown task, (demo.seed, demo.seeds) for no seed or seeds past 2^64 - 1.
DemoPlan plan_demo(const DemoOptions& o);
// Checks each run's evaluation (ConfigError naming eval.max_len or eval.samples), training work
// (each run's, and all of them together, against limits::train_work: ConfigError naming
// train.steps, or demo.steps and the other steps) and memory (posemb::MemoryLimitExceeded),
// before anything runs.
void check_demo(const DemoPlan& plan);

}  // namespace posemb::lab
