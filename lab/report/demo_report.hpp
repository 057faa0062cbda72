// lab/report/demo_report.hpp: what the demo measured, as its summary reads it (lab/report/
// summary.hpp, claims.hpp): the settings, every encoding and seed's results, the extension runs.
//
//   lab::DemoReport rep;  rep.task.train_len = 8;  rep.runs = ...;  rep.extension = ...;
//   auto rope = lab::runs_of(rep, "rope");                 // its runs, in seed order
//   auto in = lab::per_seed_mean_exact(rope, 1, 8);        // one mean per seed
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "lab/report/results.hpp"

namespace posemb::lab {

// Everything the summary reads: the settings, the runs of every encoding and seed, the
// extension experiment, and how long it took.
struct DemoReport {
  TaskConfig task;               // the task and its training length L (task.train_len)
  std::string model;             // "a 2-layer, 4-head, d_model 32 GPT"
  std::string training;          // "1000 AdamW steps of 32 sequences (lr 3e-3, ...)"
  std::size_t samples = 0;       // instances per evaluated length
  std::string evaluation;        // the text demo: how bits per byte were measured ("": symbol)
  std::vector<RunResults> runs;  // every encoding x seed, evaluated on 1..eval_max
  std::vector<ExtensionRun> extension;
  std::size_t extended_train_len = 0;  // 2L: the extension's fine-tuning lengths n <= 2L
  std::string extension_training;      // "fine-tuned 400 steps at n <= 16 (lr ...)"
  // Extending RoPE: a rotary run with each scaling method (curves over n = 1..2L from step 0).
  std::vector<ExtensionRun> rope_extension;
  std::string rope_extension_training;  // "Each rope run ... fine-tuned 500 steps ..."
  double wall_seconds = 0.0;
  bool quick = false;   // posemb demo --quick: said at the top; a claim not met is "not judged"
  std::string machine;  // "2 runs at a time, 1 thread each; load average 0.4 at start, 2.1 at end"
};

// The runs of encoding pe in rep, in seed order.
std::vector<const RunResults*> runs_of(const DemoReport& rep, const std::string& pe);
// An encoding's mean exact match over lengths lo..hi, one value per seed (empty when a length
// is beyond the table or missing).
std::vector<double> per_seed_mean_exact(const std::vector<const RunResults*>& runs, std::size_t lo,
                                        std::size_t hi);

}  // namespace posemb::lab
