// tools/posemb/results_table.hpp: accuracy by length as a text table on stdout.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/evaluate.hpp"
#include "lab/sweep_report.hpp"

namespace posemb::cli {

using NamedResults = std::pair<std::string, std::vector<lab::LengthResult>>;

// One row per length, one "exact / token" column pair per run; beyond_table shown as such.
void print_results_table(const std::vector<NamedResults>& runs, std::size_t train_len);

// The summary of a sweep on stdout: per run, the mean exact match in distribution (n <=
// train_len) and beyond it, the final loss, the training time and the rank.
void print_sweep_summary(const std::vector<lab::SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes);

}  // namespace posemb::cli
