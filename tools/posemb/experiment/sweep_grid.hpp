// tools/posemb/experiment/sweep_grid.hpp: the flags of `posemb sweep` and the grid of runs they
// make (each axis a list; the runs are every combination, seed innermost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/encoding.hpp"
#include "lab/sweep_report.hpp"
#include "lab_options.hpp"

namespace posemb::cli {

// The axes of the grid (each a list) and the settings that are one value for every run.
struct SweepOptions {
  LabFlags lab;  // the single-valued lab flags
  std::vector<std::string> pe{lab::default_encoding_name()}, task{"copy"};
  std::vector<std::size_t> alphabet{8}, train_len{16}, d_model{64}, layers{2}, heads{4}, batch{32},
      steps{1000};
  std::vector<float> lr{1e-3f};
  std::string seeds = "1";
  std::size_t eval_max = 0;  // 0: 3 * train_len of each run
  std::size_t samples = 100;
  std::uint64_t eval_seed = 1234;
  std::string out = "sweep-out";
  std::size_t parallel_runs = 1;
  double peer_timeout = 0;
  bool quiet = false;
};

// The grid, in a fixed order: task, alphabet, train_len, d_model, layers, heads, batch, steps,
// lr, pe, then seed innermost; each run validated (UsageError naming the flags). At most 100000
// runs.
std::vector<lab::SweepPoint> make_grid(const SweepOptions& o);

}  // namespace posemb::cli
