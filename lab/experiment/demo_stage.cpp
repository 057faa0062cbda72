// What the demos share (lab/experiment/demo_stage.hpp).
#include "lab/experiment/demo_stage.hpp"

#include "lab/encodings/registry.hpp"
#include "lab/tasks/registry.hpp"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace posemb::lab {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

// The estimated multiply-adds of a run: its training steps (forward and backward, about three
// forwards of a batch whose lengths are spread over 1..train_len), its probes and its evaluation.
// Split into what is done while it trains (.first) and its final evaluation (.second).
std::pair<double, double> run_work(const GridRun& g) {
  const RunConfig& r = g.run;
  EvalConfig one;
  one.min_len = 1;
  one.max_len = r.task.train_len;
  one.samples = 1;
  const double step = 3.0 * static_cast<double>(r.train.batch) *
                      evaluation_work(r.model, r.task, one) / static_cast<double>(r.task.train_len);
  const double probes =
      static_cast<double>(g.eval_at.size()) *
      (g.eval_at.empty() ? 0.0 : evaluation_work(r.model, r.task, g.probe.value_or(g.eval)));
  return {step * static_cast<double>(r.train.steps) + probes,
          evaluation_work(r.model, r.task, g.eval)};
}

// Trains and evaluates runs through the grid runner, plan.options.parallel_runs at a time on
// one thread each, reporting the stage's progress over all their steps and the demo's over its
// estimated work (`total` comes with the stage's name and number, the work of the stages before
// as work_done and every stage's as work_total); the first failed run's error is thrown.
std::vector<GridOutcome> run_demo_stage(const std::vector<GridRun>& runs, const DemoPlan& plan,
                                        DemoProgress total, const DemoProgressFn& progress) {
  for (const auto& r : runs) total.total += r.run.train.steps;
  std::mutex mu;
  std::vector<double> work(runs.size(), 0.0);  // each run's work done
  std::vector<std::size_t> done(runs.size(), 0);
  GridOptions opt;
  opt.parallel_runs = plan.options.parallel_runs;
  if (progress) {
    opt.progress = [&](const GridProgress& g) {
      const std::lock_guard<std::mutex> lock(mu);
      total.done += g.step - done[g.index];
      done[g.index] = g.step;
      total.loss = g.loss;
      const auto [training, evaluation] = run_work(runs[g.index]);
      const double now = g.finished ? training + evaluation
                                    : training * static_cast<double>(g.step) /
                                          static_cast<double>(std::max<std::size_t>(g.steps, 1));
      total.work_done += now - work[g.index];
      work[g.index] = now;
      progress(total);
    };
  }
  auto out = run_grid(runs, opt);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!out[i].error.empty()) throw std::runtime_error(runs[i].name + ": " + out[i].error);
  }
  return out;
}

std::string checkpoint_name(const std::string& pe, std::uint64_t seed, const std::string& tail) {
  return pe + "-seed" + std::to_string(seed) + tail + ".safetensors";
}

void start_from_extended_table(GridRun& s, const GridRun& g, const PositionTable& table,
                               ResizeMethod m, const DemoPlan& plan,
                               const std::filesystem::path& ckdir) {
  ResizeOptions ro;
  ro.seed = g.run.train.seed;
  const std::size_t rows = find_task(plan.options.task).tokens(2 * plan.train_len);
  s.init_from = g.checkpoint;
  std::string tail = "-";  // built by appending: g++ 12 warns falsely on "-" + std::string
  tail += resize_method_name(m);
  s.table = (ckdir / checkpoint_name(g.run.model.pe, g.run.train.seed, tail)).string();
  save_position_table(s.table, resize_table(table, rows, m, ro));
}

// The steps a fine-tuning run is probed at: 0, every, 2 every, ... and its last step.
std::vector<std::size_t> probe_steps(std::size_t steps, std::size_t every) {
  std::vector<std::size_t> at;
  for (std::size_t step = 0; step < steps; step += every) at.push_back(step);
  at.push_back(steps);
  return at;
}

// 1. Every encoding and seed, from scratch; the extended and the rotary encoding's runs keep a
//    checkpoint.
std::vector<GridRun> encoding_runs(const DemoPlan& plan, const std::filesystem::path& ckdir) {
  std::vector<GridRun> grid;
  for (const auto& pe : plan.encodings) {
    for (std::size_t k = 0; k < plan.options.seeds; ++k) {
      GridRun s;
      s.run = plan.run(pe, plan.options.seed + k);
      s.name = pe + " seed " + std::to_string(s.run.train.seed);
      s.eval = plan.eval;
      if (pe == plan.extended || pe == plan.rotary) {
        s.checkpoint = (ckdir / checkpoint_name(pe, s.run.train.seed, "")).string();
        s.keep_table = pe == plan.extended && k == 0;
      }
      grid.push_back(std::move(s));
    }
  }
  return grid;
}

ExtensionRun extension_result(std::string method, const GridRun& run, GridOutcome& out) {
  ExtensionRun er;
  er.method = std::move(method);
  er.seed = run.run.train.seed;
  er.first_loss = out.first_loss;
  er.train_seconds = out.results.train_seconds;
  er.curve = std::move(out.at_steps);
  er.after = std::move(out.results.results);
  return er;
}

RunResults run_results(const GridRun& run, const GridOutcome& out) {
  RunResults rr;
  rr.pe = run.run.model.pe;
  rr.seed = run.run.train.seed;
  if (find_encoding(rr.pe).has_table) rr.max_seq_len = run.run.model.max_seq_len;
  rr.train_seconds = out.results.train_seconds;
  rr.results = out.results.results;
  return rr;
}

}  // namespace posemb::lab
