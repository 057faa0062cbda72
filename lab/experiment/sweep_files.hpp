// lab/sweep_report.hpp: what a sweep (lab/sweep.hpp) writes: results.csv and results.json,
// every run and length, with the per-length fields of lab/results.hpp (the one writer of
// accuracy by length for the demo, the sweep and eval).
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

namespace posemb::lab {

// One run of the grid and the values of the grid's axes it was made from.
struct SweepPoint {
  GridRun run;
  std::string task;
  std::uint64_t seed = 0;
  std::string group;  // the axes other than pe and seed that vary, "task=copy train_len=8"; or ""
  // "none", "yarn x4": a zero-shot evaluation with this RoPE scaling (expand_rope_scalings);
  // "" for a run's own evaluation.
  std::string rope_scaling;
};

// A run evaluated with RoPE scalings (GridRun::eval_scalings) as one entry per scaling, in
// their order: the point named "<name> rope_scaling=yarn x4" with rope_scaling set, the
// outcome with that evaluation as its results (a failed run stays one entry). Every other run
// as it is. The files, charts and summary then list each as a run of its own.
std::pair<std::vector<SweepPoint>, std::vector<GridOutcome>> expand_rope_scalings(
    const std::vector<SweepPoint>& points, const std::vector<GridOutcome>& outcomes);

// results.csv: one row per run and evaluated length (a failed run: one row, status "failed").
// Columns: run,task,alphabet,train_len,pe,seed,d_model,layers,heads,d_ff,batch,micro_batch,
// steps,lr,max_seq_len,final_loss,rope_scaling,length, then the scorers' columns
// (lab::length_csv_header: status,exact_match,token_accuracy for greedy decoding). No
// timings: the same grid gives the same file however it is spread over ranks.
std::string sweep_csv(const std::vector<SweepPoint>& points,
                      const std::vector<GridOutcome>& outcomes);
// results.json: {"runs": [{the csv's settings (rope_scaling null when ""), "name", "train_seconds",
// "rank", "error", "results": [{"length", "status", "exact_match", "token_accuracy"}]}]}.
std::string sweep_json(const std::vector<SweepPoint>& points,
                       const std::vector<GridOutcome>& outcomes);

// The files of a sweep, in order: results.csv (sweep_csv) and results.json (sweep_json).
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

}  // namespace posemb::lab
