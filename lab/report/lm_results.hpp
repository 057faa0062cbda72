// lab/report/lm_results.hpp: the text demo's extension files (`posemb demo --task text`; its
// lm_results.csv/json are results.csv/json's writers, lab/report/results.hpp).
//
//   lm_extension.csv   experiment,method,factor,seed,step,length, then length_csv_header's
//                      columns: bits per byte at step 0 (before any update) and after the
//                      fine-tuning (step = its steps), per learned-table method (experiment
//                      "table", factor 2: the table doubled) and per RoPE scaling and factor
//                      (experiment "rotary")
//   lm_extension.json  {"train_len", "table": {"extended_train_len", "runs": [...]},
//                       "rotary": {"runs": [...]}}, each run {"method", "factor", "seed", "steps",
//                      "first_loss", "train_seconds", "step0": [lengths], "after": [lengths]}
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/report/results.hpp"

namespace posemb::lab {

// The bits per byte (loss / ln 2) of a run's step-0 evaluation (before any update; its curve's
// first point at step 0) or of `after`, at length n; NaN when it was not evaluated there or is
// beyond the table.
double step0_bits(const ExtensionRun& run, std::size_t n);
double after_bits(const ExtensionRun& run, std::size_t n);
// The same for a from-scratch run's results at length n.
double bits_at(const std::vector<LengthResult>& results, std::size_t n);

std::string lm_extension_csv(const std::vector<ExtensionRun>& table,
                             const std::vector<ExtensionRun>& rope);
std::string lm_extension_json(std::size_t train_len, const std::vector<ExtensionRun>& table,
                              const std::vector<ExtensionRun>& rope);

}  // namespace posemb::lab
