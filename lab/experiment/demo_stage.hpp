// lab/experiment/demo_stage.hpp: what the symbol demo (demo_run.cpp) and the text demo
// (lm_demo.cpp) share: their outcome and progress (DemoOutcome, DemoProgress), a stage of runs
// trained and evaluated through the grid runner with the demo's progress, each run's estimated
// work, the from-scratch runs of every encoding and seed, and the names of their checkpoints.
// Internal to the experiment room.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lab/experiment/demo_plan.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/report/demo_report.hpp"
#include "posemb/matrix.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

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

// The demo's numbers and the learned tables its charts show.
struct DemoOutcome {
  DemoPlan plan;
  DemoReport report;                                                   // what summary.md reads
  Matrix<float> learned_table;                                         // first seed, after training
  std::vector<std::pair<std::string, Matrix<float>>> extended_tables;  // method, after fine-tuning
};

using DemoProgressFn = std::function<void(const DemoProgress&)>;

// The first field of /proc/loadavg ("unknown" when it cannot be read).
std::string load_average();

// The estimated multiply-adds of a run: its training steps (forward and backward, about three
// forwards of a batch whose lengths are spread over 1..train_len), its probes and its evaluation.
// Split into what is done while it trains (.first) and its final evaluation (.second).
std::pair<double, double> run_work(const GridRun& g);

// Trains and evaluates runs through the grid runner, plan.options.parallel_runs at a time on
// one thread each, reporting the stage's progress over all their steps and the demo's over its
// estimated work (`total` comes with the stage's name and number, the work of the stages before
// as work_done and every stage's as work_total); the first failed run's error is thrown.
std::vector<GridOutcome> run_demo_stage(const std::vector<GridRun>& runs, const DemoPlan& plan,
                                        DemoProgress total, const DemoProgressFn& progress);

// "PE-seedS[TAIL].safetensors".
std::string checkpoint_name(const std::string& pe, std::uint64_t seed, const std::string& tail);

// s starts from g's checkpoint with `table` (g's learned table) extended to 2L rows by m
// (posemb::resize_table, seeded by g's seed), written into ckdir as
// "PE-seedS-METHOD.safetensors".
void start_from_extended_table(GridRun& s, const GridRun& g, const PositionTable& table,
                               ResizeMethod m, const DemoPlan& plan,
                               const std::filesystem::path& ckdir);

// The steps a fine-tuning run is probed at: 0, every, 2 every, ... and its last step.
std::vector<std::size_t> probe_steps(std::size_t steps, std::size_t every);

// 1. Every encoding and seed, from scratch, evaluated with plan.eval; the extended and the
//    rotary encoding's runs keep a checkpoint in ckdir.
std::vector<GridRun> encoding_runs(const DemoPlan& plan, const std::filesystem::path& ckdir);

// An extension run's outcome (its curve and final evaluation moved out of out).
ExtensionRun extension_result(std::string method, const GridRun& run, GridOutcome& out);

// A from-scratch run's results (its encoding, seed, table rows, time and evaluation).
RunResults run_results(const GridRun& run, const GridOutcome& out);

}  // namespace posemb::lab
