// lab/experiment/grid.hpp: a list of runs (train a model, then evaluate it), shared among the ranks
// of a job or run in one process one after another or a few at a time; every run's outcome gathered
// on every rank. Behind `posemb sweep` and `posemb demo`.
//
//   std::vector<lab::GridRun> runs;
//   for (const char* pe : {"learned", "sinusoidal"}) {
//     for (std::uint64_t seed = 1; seed <= 3; ++seed) {
//       lab::GridRun g;
//       g.name = std::string(pe) + " seed " + std::to_string(seed);
//       g.run = ...;  g.run.model.pe = pe;  g.run.train.seed = seed;   // a RunConfig
//       g.eval.max_len = 36;
//       runs.push_back(std::move(g));
//     }
//   }
//   lab::GridOptions opt;
//   opt.parallel_runs = 2;                            // two runs at a time on this process
//   auto out = lab::run_grid(runs, opt, lab::world());   // out[i]: runs[i]'s, on every rank
//
// Results are the same bits however the runs are spread: a run is a function of its settings
// (lab/train/trainer.hpp), whatever rank or thread trains it. Only train_seconds and rank differ.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lab/config.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/ranks/distributed.hpp"
#include "lab/report/results.hpp"
#include "lab/train/trainer.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {

// One run: train with `run`'s settings, then evaluate with `eval`.
struct GridRun {
  std::string name;  // for progress and messages
  RunConfig run;
  EvalConfig eval;
  // Also evaluate (with `probe` when given, else `eval`) when the trainer reaches each of these
  // steps (0: before any training); each <= run.train.steps. Outcome: GridOutcome::at_steps.
  std::vector<std::size_t> eval_at;
  std::optional<EvalConfig> probe;
  // When not empty: the run starts from this checkpoint's weights (Trainer::from_checkpoint:
  // `run` gives the task and training settings and the model's shape, checked against it), its
  // learned table from `table` when that is not empty.
  std::string init_from;
  std::string table;
  bool keep_table = false;  // return the trained learned table (GridOutcome::table)
  // RoPE scalings (method and factor; L0 from rope_scaling_for the run) to evaluate the trained
  // weights with, zero-shot, each with `eval`: one evaluation per entry, in
  // GridOutcome::scaled, besides the model's own in results. Only for a model that rotates q
  // and k (rope); empty: none.
  std::vector<RopeScalingConfig> eval_scalings;
  // When not empty: the trained checkpoint is written here (lab::write_checkpoint, atomic) by the
  // rank that trained the run.
  std::string checkpoint;
  // Called on the new trainer before its first step (e.g. to load weights); must do the same on
  // every rank. Empty: nothing.
  std::function<void(Trainer&)> prepare;
};

// The model config the trained run `trained` is evaluated with for its eval scaling s: the run's,
// with s's method and factor, its L0 from rope_scaling_for (checked by lab::validate_model,
// not here).
ModelConfig scaled_model(const RunConfig& trained, const RopeScalingConfig& s);

struct GridOutcome {
  RunResults results;  // pe, max_seq_len (a table's rows), train_seconds, the final evaluation
  std::vector<std::pair<std::size_t, std::vector<LengthResult>>> at_steps;  // (step, results)
  double first_loss = 0.0;  // the first step's loss, before any update (NaN when no step ran)
  double final_loss = 0.0;  // the last step's loss (NaN when no step ran)
  Matrix<float> table;      // (max_seq_len, d_model): keep_table and a learned table; else empty
  std::vector<std::vector<LengthResult>> scaled;  // one per GridRun::eval_scalings, in order
  int rank = 0;                                   // the rank that ran it
  std::string error;  // not empty: the run failed with this message (and stopped there)
};

// Reported by the process that trains a run, after each step and when the run ends.
struct GridProgress {
  std::size_t index;  // of the run in the list
  const GridRun* run;
  std::size_t step, steps;  // steps done, of
  double loss;              // of the last step
  bool finished;            // trained and evaluated (or failed)
};

struct GridOptions {
  // Runs trained at a time by each process, each on one thread (1: one after another, each run
  // using the process's threads for its micro-batches).
  std::size_t parallel_runs = 1;
  // Called by the thread training a run: concurrently from several threads when parallel_runs
  // > 1 (it must be thread-safe). Empty: none.
  std::function<void(const GridProgress&)> progress;
};

// Throws ConfigError naming the run (grid run I (NAME): ...) when one is unusable, or its
// training or evaluation would pass the lab's work limits (limits::train_work, eval_work), or an
// evaluation at a step past its steps; run_grid checks it first. For a front end to call before
// it writes anything.
void validate_grid(std::span<const GridRun> runs);

// Trains and evaluates every run; returns their outcomes in the list's order, the same on every
// rank. Throws ConfigError (before anything runs, on every rank) naming the run when one is
// unusable, std::invalid_argument for parallel_runs 0. A run that fails (a non-finite loss, an
// exception of prepare) does not stop the others: its outcome carries the error. Collective.
std::vector<GridOutcome> run_grid(std::span<const GridRun> runs, const GridOptions& options = {},
                                  Communicator& comm = single_process());

// The settings of a grid as text, for check_same_on_every_rank (lab/ranks/agreement.hpp): every
// run's name, settings, evaluation, evaluation steps, starting checkpoint and table, in order.
std::string grid_settings(std::span<const GridRun> runs);

// The rank that trains each run: the longest runs first (estimated from steps, batch, sequence
// length and model size), each to the least loaded rank; deterministic.
std::vector<int> assign_runs(std::span<const GridRun> runs, int ranks);

}  // namespace posemb::lab
