// The demo's run: the encodings from scratch, then the learned table extended and fine-tuned;
// its report and data files.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/encodings/registry.hpp"
#include "lab/experiment/demo_run.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/model/model.hpp"
#include "lab/report/results.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {
namespace {

using ProgressFn = std::function<void(const DemoProgress&)>;

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
std::vector<GridOutcome> run_stage(const std::vector<GridRun>& runs, const DemoPlan& plan,
                                   DemoProgress total, const ProgressFn& progress) {
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

// A learned run's extension by method m at seed, all but its table (extension_runs makes it):
// fine-tuned at n <= 2L, exact match at L + 1..2L probed along the way.
GridRun extension_settings(const DemoPlan& plan, std::uint64_t seed, ResizeMethod m) {
  const std::size_t L = plan.train_len, L2 = 2 * L;
  GridRun s;
  s.name = "extend by " + std::string(resize_method_name(m)) + " seed " + std::to_string(seed);
  s.run = plan.extension_run(seed);
  s.eval = plan.eval;
  s.eval.max_len = L2;
  s.eval_at = probe_steps(plan.extension_steps, plan.probe_every);
  EvalConfig probe = plan.eval;
  probe.min_len = L + 1;
  probe.max_len = L2;
  s.probe = probe;
  return s;
}

// A rotary run at 2L with RoPE scaling method m (factor 2 over its trained positions), all but
// its starting checkpoint: fine-tuned with it at n <= 2L; exact match at n = 1..2L before any
// update and every rope_probe_every steps.
GridRun rope_extension_settings(const DemoPlan& plan, std::uint64_t seed, const std::string& m) {
  GridRun s;
  s.name = plan.rotary + " " + m + " seed " + std::to_string(seed);
  s.run = plan.rope_extension_run(seed, m);
  s.eval = plan.eval;
  s.eval.max_len = 2 * plan.train_len;
  s.eval_at = probe_steps(plan.rope_extension_steps, plan.rope_probe_every);
  s.probe = s.eval;
  return s;
}

// 2. The learned tables extended from 2L + 2 to 4L + 2 rows (n <= 2L) by each method, each
//    fine-tuned the same steps at n <= 2L.
std::vector<GridRun> extension_runs(const DemoPlan& plan, const std::vector<GridRun>& grid,
                                    const std::filesystem::path& ckdir) {
  const TaskSpec& task = find_task(plan.options.task);
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (g.run.model.pe != plan.extended) continue;
    const std::uint64_t seed = g.run.train.seed;
    const PositionTable table = load_position_table(g.checkpoint);
    for (const auto m : plan.methods) {
      ResizeOptions ro;
      ro.seed = seed;
      const PositionTable longer = resize_table(table, task.tokens(2 * plan.train_len), m, ro);
      GridRun s = extension_settings(plan, seed, m);
      s.init_from = g.checkpoint;
      s.table =
          (ckdir / checkpoint_name(plan.extended, seed, "-" + std::string(resize_method_name(m))))
              .string();
      save_position_table(s.table, longer);
      s.keep_table = g.keep_table;
      ext.push_back(std::move(s));
    }
  }
  return ext;
}

// 3. Each rotary run at 2L with each RoPE scaling method, fine-tuned with it.
std::vector<GridRun> rope_extension_runs(const DemoPlan& plan, const std::vector<GridRun>& grid) {
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (plan.rotary.empty() || g.run.model.pe != plan.rotary) continue;
    for (const auto& m : plan.rope_methods) {
      GridRun s = rope_extension_settings(plan, g.run.train.seed, m);
      s.init_from = g.checkpoint;
      ext.push_back(std::move(s));
    }
  }
  return ext;
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

// The report's settings text, from the plan.
void describe(DemoReport& rep, const DemoPlan& plan, const RunConfig& first,
              const RunConfig& extension) {
  const std::size_t L = plan.train_len, L2 = 2 * L;
  const TaskSpec& task = find_task(first.task.kind);
  rep.task = first.task;
  rep.samples = plan.eval.samples;
  rep.quick = plan.options.quick;
  rep.extended_train_len = L2;
  rep.model = fmt::format(
      "a {}-layer, {}-head, d_model {} GPT ({} parameters with a learned "
      "table)",
      first.model.n_layers, first.model.n_heads, first.model.d_model,
      Model(first.model).total_elements());
  const EncodingSpec* randomized = find_encoding_if(
      [](const EncodingSpec& e) { return e.train_positions == PositionMode::randomized; });
  rep.training = fmt::format(
      "{} AdamW steps of {} sequences per run ({}: {} steps, a {}-row table), lr "
      "{:g} with {} warmup steps and cosine decay",
      plan.steps, first.train.batch, randomized ? randomized->name : "randomized positions",
      plan.randomized_steps, plan.randomized_rows, first.train.lr, first.train.warmup);
  rep.extension_training = fmt::format(
      "Each learned run (a table of {} rows, n <= {}) extended to {} rows by each method (random: "
      "N(0, 0.02) new rows, as Hugging Face's resize; sinusoidal: the encoding of the new "
      "positions scaled to the trained rows' mean norm), then fine-tuned {} steps at n <= {} "
      "(lr {:g}, {} warmup steps, a fresh optimizer); exact match over n = {}..{}, mean over "
      "seeds [min, max]",
      task.tokens(L), L, task.tokens(L2), plan.extension_steps, L2, first.train.lr,
      extension.train.warmup, L + 1, L2);
  if (plan.rotary.empty()) return;
  const RunConfig rope = plan.rope_extension_run(plan.options.seed, plan.rope_methods.back());
  std::string methods;
  for (const auto& m : plan.rope_methods) methods += (methods.empty() ? "" : ", ") + m;
  rep.rope_extension_training = fmt::format(
      "Each {} run (trained at n <= {}, {} positions) run at n <= {} with each RoPE scaling ({}; "
      "factor {:g} over the {} trained positions, the library's posemb/rope_scaling.hpp), then "
      "fine-tuned {} steps at n <= {} with that scaling (lr {:g}, {} warmup steps, a fresh "
      "optimizer); exact match over n = 1..{} before any update and every {} steps, mean over "
      "seeds [min, max]",
      plan.rotary, L, task.tokens(L), L2, methods, plan.rope_factor, task.tokens(L),
      plan.rope_extension_steps, L2, rope.train.lr, rope.train.warmup, L2, plan.rope_probe_every);
}

}  // namespace

std::vector<double> demo_work(const DemoPlan& plan) {
  double first = 0.0, second = 0.0;
  const auto add = [](double& w, const GridRun& g) {
    const auto [training, evaluation] = run_work(g);
    w += training + evaluation;
  };
  const bool extended = std::find(plan.encodings.begin(), plan.encodings.end(), plan.extended) !=
                        plan.encodings.end();
  for (std::size_t k = 0; k < plan.options.seeds; ++k) {
    const std::uint64_t seed = plan.options.seed + k;
    for (const auto& pe : plan.encodings) {
      GridRun g;
      g.run = plan.run(pe, seed);
      g.eval = plan.eval;
      add(first, g);
    }
    for (const auto m : plan.methods) {
      if (extended) add(second, extension_settings(plan, seed, m));
    }
    for (const auto& m : plan.rope_methods) {
      if (!plan.rotary.empty()) add(second, rope_extension_settings(plan, seed, m));
    }
  }
  return {first, second};
}

DemoOutcome run_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                     const ProgressFn& progress) {
  const std::string load_start = load_average();
  const auto t_all = std::chrono::steady_clock::now();
  DemoOutcome out;
  out.plan = plan;
  DemoReport& rep = out.report;

  DemoProgress stage{"demo: encodings", 0, 2};
  for (const double w : demo_work(plan)) stage.work_total += w;
  const auto grid = encoding_runs(plan, checkpoint_dir);
  auto grid_out = run_stage(grid, plan, stage, progress);
  for (std::size_t i = 0; i < grid.size(); ++i) {
    RunResults rr;
    rr.pe = grid[i].run.model.pe;
    rr.seed = grid[i].run.train.seed;
    if (find_encoding(rr.pe).has_table) rr.max_seq_len = grid[i].run.model.max_seq_len;
    rr.train_seconds = grid_out[i].results.train_seconds;
    rr.results = grid_out[i].results.results;
    rep.runs.push_back(std::move(rr));
    if (grid[i].keep_table) out.learned_table = std::move(grid_out[i].table);
  }

  // The learned tables' extension and RoPE's in one stage: the runs share the threads.
  auto ext = extension_runs(plan, grid, checkpoint_dir);
  const std::size_t n_table = ext.size();
  for (auto& r : rope_extension_runs(plan, grid)) ext.push_back(std::move(r));
  stage.stage = "demo: extension";
  stage.stage_index = 1;
  stage.work_done = demo_work(plan).front();  // the first stage's, done
  auto ext_out = run_stage(ext, plan, stage, progress);
  for (std::size_t i = 0; i < n_table; ++i) {
    const std::string method(resize_method_name(plan.methods[i % plan.methods.size()]));
    if (ext[i].keep_table) out.extended_tables.emplace_back(method, std::move(ext_out[i].table));
    rep.extension.push_back(extension_result(method, ext[i], ext_out[i]));
  }
  for (std::size_t i = n_table; i < ext.size(); ++i) {
    const std::string& method = plan.rope_methods[(i - n_table) % plan.rope_methods.size()];
    rep.rope_extension.push_back(extension_result(method, ext[i], ext_out[i]));
  }

  describe(rep, plan, plan.run(plan.extended, plan.options.seed),
           plan.extension_run(plan.options.seed));
  rep.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  rep.machine = fmt::format(
      "{} runs at a time, one thread each; load average {} at the start, "
      "{} at the end",
      plan.options.parallel_runs, load_start, load_average());
  return out;
}

}  // namespace posemb::lab
