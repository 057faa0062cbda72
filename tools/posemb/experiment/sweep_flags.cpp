#include "sweep_flags.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab_options.hpp"

namespace posemb::cli {
namespace {

// "1:3,7" -> 1, 2, 3, 7.
std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  return parse_number_list(text, "--seeds", UINT64_MAX, 100000, "1:3,7");
}

}  // namespace

std::vector<lab::SweepPoint> make_grid(const SweepOptions& o) {
  const auto seeds = parse_seeds(o.seeds);
  try {
    return lab::make_grid(o.lab, o, seeds);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"train.seed", "--seeds"}});  // sweep's list replaces train's --seed
  }
}

std::vector<lab::GridRun> checked_runs(const std::vector<lab::SweepPoint>& grid) {
  std::vector<lab::GridRun> runs;
  for (const auto& p : grid) runs.push_back(p.run);
  try {  // every run's settings and work, before the output folder is made
    lab::validate_grid(runs);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"eval.max_len", "--eval-max"}, {"eval.samples", "--samples"}});
  }
  return runs;
}

}  // namespace posemb::cli
