// lab/experiment/demo_files.hpp: the demo's data files, from its outcome (the charts are drawn by
// the CLI's renderer, tools/posemb/experiment/plots.hpp).
//
//   for (const auto& [name, bytes] : lab::demo_data_files(out)) ...  // results.csv, summary.md
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lab/experiment/demo_plan.hpp"
#include "lab/experiment/demo_run.hpp"

namespace posemb::lab {

// The names demo_data_files(out) gives for a run of plan, in its order.
std::vector<std::string> demo_file_names(const DemoPlan& plan);

// (file name, bytes) of the demo's data: results.csv, results.json, extension.csv,
// extension.json, rope_extension.csv, rope_extension.json (when a rotary encoding ran) and
// summary.md (the charts are drawn by the CLI's renderer). The text demo (plan.language):
// lm_results.csv, lm_results.json, lm_extension.csv, lm_extension.json, summary.md.
std::vector<std::pair<std::string, std::string>> demo_data_files(const DemoOutcome& out);

}  // namespace posemb::lab
