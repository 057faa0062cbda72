// lab/experiment/demo_run.hpp: the demo's runs (lab/experiment/demo_plan.hpp has the plan):
// every encoding and seed trained and evaluated through the grid runner (grid.hpp), then the
// extension runs; the outcome is what the summary and the files read.
//
//   lab::DemoOutcome out = lab::run_demo(plan, "demo-out/checkpoints", on_progress);
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lab/experiment/demo_plan.hpp"
#include "lab/experiment/demo_stage.hpp"
#include "lab/report/demo_report.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {

// The estimated multiply-adds of each stage of the plan (every run's training steps, forward and
// backward, its probes and its evaluation), from the model's and tasks' sizes: the weights of the
// time left, not a measurement.
std::vector<double> demo_work(const DemoPlan& plan);

// Runs the plan: checkpoints of the learned and rotary runs and the extended tables go into
// checkpoint_dir (which must exist); `progress` (may be empty) is called from the training
// threads, one call at a time. Throws std::runtime_error naming the first run that failed.
DemoOutcome run_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                     const DemoProgressFn& progress);

}  // namespace posemb::lab
