// tools/posemb/experiment/sweep_report.hpp: what `posemb sweep` writes: results.csv and
// results.json (every run and length), one length-generalization chart per group of runs that
// differ only in encoding and seed (mean over seeds, drawn by the renderer in viz/), and the
// summary table on stdout.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lab/sweep.hpp"

namespace posemb::cli {

// One run of the grid and the values of the grid's axes it was made from.
struct SweepPoint {
  lab::GridRun run;
  std::string task;
  std::uint64_t seed = 0;
  std::string group;  // the axes other than pe and seed that vary, "task=copy train_len=8"; or ""
};

// results.csv: one row per run and evaluated length (a failed run: one row, status "failed").
// Columns: run,task,alphabet,train_len,pe,seed,d_model,layers,heads,d_ff,batch,micro_batch,
// steps,lr,max_seq_len,final_loss,length,status,exact_match,token_accuracy. No timings: the same
// grid gives the same file however it is spread over ranks.
std::string sweep_csv(const std::vector<SweepPoint>& points,
                      const std::vector<lab::GridOutcome>& outcomes);
// results.json: {"runs": [{the csv's settings, "name", "train_seconds", "rank", "error",
// "results": [{"length", "status", "exact_match", "token_accuracy"}]}]}.
std::string sweep_json(const std::vector<SweepPoint>& points,
                       const std::vector<lab::GridOutcome>& outcomes);
// (file name, SVG) for each group: exact match by length, one line per encoding, the mean over
// the group's seeds.
std::vector<std::pair<std::string, std::string>> sweep_charts(
    const std::vector<SweepPoint>& points, const std::vector<lab::GridOutcome>& outcomes);
// The summary on stdout: per run, the mean exact match in distribution (n <= train_len) and
// beyond it, the final loss, the training time and the rank.
void print_sweep_summary(const std::vector<SweepPoint>& points,
                         const std::vector<lab::GridOutcome>& outcomes);

}  // namespace posemb::cli
