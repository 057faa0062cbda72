// tools/posemb/experiment/results_table.hpp: results by length as a text table on stdout.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/eval/evaluate.hpp"
#include "lab/experiment/eval_run.hpp"
#include "lab/experiment/sweep_files.hpp"

namespace posemb::cli {

using NamedResults = std::pair<std::string, std::vector<lab::LengthResult>>;

// One row per length, one column pair per run (greedy: "exact / token"; teacher-forced: "loss /
// bits"); beyond_table shown as such. Two
// or more lengths in a row beyond every run's table are one line, "n = 9..100000: beyond_table
// (the table's 18 rows hold n <= 8)" (table_rows 0: the row count is not named).
void print_results_table(const std::vector<NamedResults>& runs, std::size_t train_len,
                         std::size_t table_rows = 0);

// `posemb eval`'s first line: the checkpoint, its encoding (table rows, RoPE scaling), its task
// and training length, and a text's corpus.
void print_eval_header(const lab::EvalSession& s);
// A run's results by length: print_results_table's, or for a task scored on the windows of a
// text the bits per token (byte) of the non-overlapping and the sliding windows by length, the
// predictable tokens dropped after the last whole window, and the loss by position bucket.
// table_rows: the learned table's rows for print_results_table (0: not named; a text names its
// run's).
void print_length_results(const lab::RunConfig& run, const std::vector<lab::LengthResult>& rows,
                          std::size_t table_rows = 0);
// `posemb eval`'s results (print_length_results).
void print_eval_results(const lab::EvalSession& s);

// The summary of a sweep on stdout: per run, the mean exact match in distribution (n <=
// train_len) and beyond it, the final loss, the training time and the rank.
void print_sweep_summary(const std::vector<lab::SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes);

}  // namespace posemb::cli
