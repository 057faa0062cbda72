// tools/posemb/experiment/sweep_flags.hpp: the flags of `posemb sweep`: the grid's axes
// (lab::SweepAxes, each a list) and the settings that are one value for every run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/experiment/sweep.hpp"
#include "lab_options.hpp"

namespace posemb::cli {

struct SweepOptions : lab::SweepAxes {
  LabFlags lab;             // the single-valued lab flags
  std::string seeds = "1";  // --seeds: "1:3,7"
  std::string out = "sweep-out";
  std::size_t parallel_runs = 1;
  double peer_timeout = 0;
  bool quiet = false;
  bool force = false;  // replace the run in --out
};

// lab::make_grid of the flags; throws UsageError naming the flags of a run that is not valid.
std::vector<lab::SweepPoint> make_grid(const SweepOptions& o);

// The grid's runs, each checked (settings and work: lab::validate_grid) before the output folder
// is made; throws UsageError naming the flags of the first that is not valid.
std::vector<lab::GridRun> checked_runs(const std::vector<lab::SweepPoint>& grid);

}  // namespace posemb::cli
