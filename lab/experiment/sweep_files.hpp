// lab/experiment/sweep_files.hpp: what a sweep (lab/experiment/grid.hpp) writes: results.csv and
// results.json, every run and length, with the per-length fields of lab/report/results.hpp (the one
// writer of accuracy by length for the demo, the sweep and eval).
//
//   std::vector<lab::SweepPoint> grid = ...;            // runs and the axes' values
//   auto out = lab::run_grid(runs_of(grid), opt, comm);
//   std::string csv = lab::sweep_csv(grid, out);        // same bytes however the ranks split it
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lab/experiment/grid.hpp"
#include "lab/experiment/sweep.hpp"

namespace posemb::lab {

// results.csv: one row per run and evaluated length (a failed run: one row, status "failed").
// Columns: run,task,corpus (its file name, for a task with
// one),alphabet,train_len,pe,seed,d_model,layers,heads,d_ff,batch,micro_batch,
// steps,lr,max_seq_len,final_loss,rope_scaling,length, then the scorers' columns
// (lab::length_csv_header: status,exact_match,token_accuracy for greedy decoding). No
// timings: the same grid gives the same file however it is spread over ranks.
std::string sweep_csv(const std::vector<SweepPoint>& points,
                      const std::vector<GridOutcome>& outcomes);
// results.json: {"runs": [{the csv's settings (rope_scaling null when ""), "name", "train_seconds",
// "rank", "error", "results": [{"length", "status", "exact_match", "token_accuracy"}]}]}.
std::string sweep_json(const std::vector<SweepPoint>& points,
                       const std::vector<GridOutcome>& outcomes);

// buckets.csv of a sweep: "run,length,begin,end,count,bits_per_token", the loss by position of
// every length scored on the windows of a text (lab::bucket_csv_rows).
std::string sweep_buckets_csv(const std::vector<SweepPoint>& points,
                              const std::vector<GridOutcome>& outcomes);

// The files a sweep may write, in order: results.csv (sweep_csv), results.json (sweep_json) and,
// when a run was scored on the windows of a text, buckets.csv (sweep_buckets_csv);
// sweep_data_files returns those it writes.
std::vector<std::string> sweep_file_names();
std::vector<std::pair<std::string, std::string>> sweep_data_files(
    const std::vector<SweepPoint>& points, const std::vector<GridOutcome>& outcomes);

// "" when every run succeeded; else "N of M runs failed (their rows say 'failed'); the first:
// NAME: ERROR".
std::string sweep_failures(const std::vector<SweepPoint>& points,
                           const std::vector<GridOutcome>& outcomes);

// The mean exact match of a run over its evaluated lengths in [lo, hi] within the table; NaN
// when there are none.
double mean_exact_within(const GridOutcome& outcome, std::size_t lo, std::size_t hi);
// The same for the bits per token of teacher-forced lengths (a text's bits per byte).
double mean_bits_within(const GridOutcome& outcome, std::size_t lo, std::size_t hi);

}  // namespace posemb::lab
