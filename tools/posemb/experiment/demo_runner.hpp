// tools/posemb/experiment/demo_runner.hpp: the demo's runs as a plain list of configurations,
// handed to one function that trains and evaluates them concurrently.
//
//   std::vector<RunSpec> runs = {...};                  // what to train, evaluate, keep
//   std::vector<RunOutcome> out = run_all(runs, 2, "demo");   // out[i] belongs to runs[i]
//
// Each run trains on one OpenMP thread, `workers` runs at a time: a run's results do not depend
// on the thread count (lab/trainer.hpp), so they do not depend on the schedule either. (A grid
// runner in the lab can replace run_all: it takes the same list.)
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/config.hpp"
#include "lab/evaluate.hpp"
#include "posemb/matrix.hpp"

namespace posemb::cli {

struct RunSpec {
  std::string label;      // "learned seed 1" (progress and errors)
  lab::RunConfig run;     // the settings; with init_from, its task and training settings
  std::string init_from;  // a checkpoint: start from its weights (lab::Trainer::from_checkpoint)
  std::string table;      // with init_from: the position table file to start from ("": its own)
  lab::EvalConfig eval;   // evaluated after the last step
  // Also evaluate `probe` before the first step and after every probe_every steps (0: never).
  std::size_t probe_every = 0;
  lab::EvalConfig probe;
  std::string save;         // write the checkpoint here after training ("": not written)
  bool keep_table = false;  // return the learned table after training
};

struct RunOutcome {
  double train_seconds = 0.0;              // wall time of training (other runs ran beside it)
  double first_loss = 0.0;                 // the loss of the first batch, before any update
  std::vector<lab::LengthResult> results;  // of eval
  std::vector<std::pair<std::size_t, std::vector<lab::LengthResult>>> probes;  // (step, probe)
  Matrix<float> table;  // the learned table after training (keep_table), else empty
};

// Trains and evaluates every run, `workers` at a time (the costliest first), each on one
// OpenMP thread; one progress line on stderr over all their steps, labelled `label`. Returns
// the outcomes in the order of runs. The first failure stops handing out runs and is rethrown
// once the running ones end.
std::vector<RunOutcome> run_all(const std::vector<RunSpec>& runs, std::size_t workers,
                                const std::string& label);

}  // namespace posemb::cli
