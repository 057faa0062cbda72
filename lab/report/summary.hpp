// lab/summary.hpp: the demo's summary.md, each published claim beside what this run measured,
// with a verdict decided from this run's numbers by a rule stated in the text.
//
//   lab::DemoReport rep;  rep.train_len = 8;  rep.runs = ...;  rep.extension = ...;
//   for (const auto& c : lab::judge_claims(rep)) c.reproduced;   // from the numbers, never fixed
//   std::string md = lab::summary_markdown(rep);                 // summary.md (and stdout)
//
// Each claim's encodings are found in the registry by their properties (lab/encoding.hpp: a
// table at contiguous or randomized positions, computed at the input, rotary, a bias on the
// scores, none), never by name; the extension methods copy and random are compared for
// Longformer's claim, the RoPE scalings none, linear and yarn for Chen's and Peng's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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

// One published claim and this run's verdict on it.
struct ClaimVerdict {
  std::string claim;      // "Vaswani et al. 2017: learned ~= sinusoidal within the trained length"
  std::string published;  // the paper's numbers
  std::string measured;   // this run's numbers
  std::string rule;       // how the verdict is decided
  bool reproduced = false;
};

// The eight claims (Vaswani, Press, Ruoss, Longformer, Kazemnejad; Press's ALiBi, Chen's position
// interpolation, Peng's YaRN), each judged by its rule on rep's numbers. A claim whose runs are
// missing from rep is "not reproduced" with measured "not measured".
std::vector<ClaimVerdict> judge_claims(const DemoReport& rep);

// summary.md: the claims table, the rules, the per-encoding summaries (in distribution, beyond
// L, each as the mean and min-max over seeds), the learned table extension's curve and RoPE's.
std::string summary_markdown(const DemoReport& rep);

// The runs of encoding pe in rep, in seed order.
std::vector<const RunResults*> runs_of(const DemoReport& rep, const std::string& pe);
// An encoding's mean exact match over lengths lo..hi, one value per seed (empty when a length
// is beyond the table or missing).
std::vector<double> per_seed_mean_exact(const std::vector<const RunResults*>& runs, std::size_t lo,
                                        std::size_t hi);

}  // namespace posemb::lab
