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
#include "lab/report/demo_report.hpp"
#include "posemb/matrix.hpp"

namespace posemb::lab {

// Progress of one stage ("demo: encodings", "demo: extension": the learned tables' and RoPE's)
// over all its runs' steps, and of the whole demo in estimated work (demo_work): every stage's
// training, probes and evaluations, so that the time left covers what remains of every stage.
struct DemoProgress {
  std::string_view stage;
  std::size_t stage_index = 0, stages = 0;   // this stage is stage_index + 1 of stages
  std::size_t done = 0, total = 0;           // steps of this stage
  double loss = 0.0;                         // of the latest step of any run
  double work_done = 0.0, work_total = 0.0;  // the whole demo's, in multiply-adds (estimated)
};

// The estimated multiply-adds of each stage of the plan (every run's training steps, forward and
// backward, its probes and its evaluation), from the model's and tasks' sizes: the weights of the
// time left, not a measurement.
std::vector<double> demo_work(const DemoPlan& plan);

// The demo's numbers and the learned tables its charts show.
struct DemoOutcome {
  DemoPlan plan;
  DemoReport report;                                                   // what summary.md reads
  Matrix<float> learned_table;                                         // first seed, after training
  std::vector<std::pair<std::string, Matrix<float>>> extended_tables;  // method, after fine-tuning
};

// Runs the plan: checkpoints of the learned and rotary runs and the extended tables go into
// checkpoint_dir (which must exist); `progress` (may be empty) is called from the training
// threads, one call at a time. Throws std::runtime_error naming the first run that failed.
DemoOutcome run_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                     const std::function<void(const DemoProgress&)>& progress);

}  // namespace posemb::lab
