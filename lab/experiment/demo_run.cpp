// The demo's run: the encodings from scratch, then the learned table extended and fine-tuned;
// its report and data files.
#include <fmt/core.h>

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

// Trains and evaluates runs through the grid runner, plan.options.parallel_runs at a time on
// one thread each, reporting the stage's progress over all their steps; the first failed run's
// error is thrown.
std::vector<GridOutcome> run_stage(const std::vector<GridRun>& runs, const DemoPlan& plan,
                                   std::string_view stage, const ProgressFn& progress) {
  DemoProgress total{stage, 0, 0, 0.0};
  for (const auto& r : runs) total.total += r.run.train.steps;
  std::mutex mu;
  std::vector<std::size_t> done(runs.size(), 0);
  GridOptions opt;
  opt.parallel_runs = plan.options.parallel_runs;
  if (progress) {
    opt.progress = [&](const GridProgress& g) {
      const std::lock_guard<std::mutex> lock(mu);
      total.done += g.step - done[g.index];
      done[g.index] = g.step;
      total.loss = g.loss;
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

// 2. The learned tables extended from 2L + 2 to 4L + 2 rows (n <= 2L) by each method, each
//    fine-tuned the same steps at n <= 2L, exact match at L + 1..2L probed along the way.
std::vector<GridRun> extension_runs(const DemoPlan& plan, const std::vector<GridRun>& grid,
                                    const std::filesystem::path& ckdir) {
  const std::size_t L = plan.train_len, L2 = 2 * L;
  const TaskSpec& task = find_task(plan.options.task);
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (g.run.model.pe != plan.extended) continue;
    const std::uint64_t seed = g.run.train.seed;
    const PositionTable table = load_position_table(g.checkpoint);
    for (const auto m : plan.methods) {
      ResizeOptions ro;
      ro.seed = seed;
      const PositionTable longer = resize_table(table, task.tokens(L2), m, ro);
      const std::string name(resize_method_name(m));
      GridRun s;
      s.name = "extend by " + name + " seed " + std::to_string(seed);
      s.init_from = g.checkpoint;
      s.table = (ckdir / checkpoint_name(plan.extended, seed, "-" + name)).string();
      save_position_table(s.table, longer);
      s.run = plan.extension_run(seed);
      s.eval = plan.eval;
      s.eval.max_len = L2;
      s.eval_at = probe_steps(plan.extension_steps, plan.probe_every);
      EvalConfig probe = plan.eval;
      probe.min_len = L + 1;
      probe.max_len = L2;
      s.probe = probe;
      s.keep_table = g.keep_table;
      ext.push_back(std::move(s));
    }
  }
  return ext;
}

// 3. Each rotary run at 2L with each RoPE scaling method (factor 2 over its trained positions),
//    fine-tuned with it at n <= 2L; exact match at n = 1..2L before any update and every
//    rope_probe_every steps.
std::vector<GridRun> rope_extension_runs(const DemoPlan& plan, const std::vector<GridRun>& grid) {
  const std::size_t L2 = 2 * plan.train_len;
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (plan.rotary.empty() || g.run.model.pe != plan.rotary) continue;
    const std::uint64_t seed = g.run.train.seed;
    for (const auto& m : plan.rope_methods) {
      GridRun s;
      s.name = plan.rotary + " " + m + " seed " + std::to_string(seed);
      s.init_from = g.checkpoint;
      s.run = plan.rope_extension_run(seed, m);
      s.eval = plan.eval;
      s.eval.max_len = L2;
      s.eval_at = probe_steps(plan.rope_extension_steps, plan.rope_probe_every);
      s.probe = s.eval;
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

DemoOutcome run_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                     const ProgressFn& progress) {
  const std::string load_start = load_average();
  const auto t_all = std::chrono::steady_clock::now();
  DemoOutcome out;
  out.plan = plan;
  DemoReport& rep = out.report;

  const auto grid = encoding_runs(plan, checkpoint_dir);
  auto grid_out = run_stage(grid, plan, "demo: encodings", progress);
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
  auto ext_out = run_stage(ext, plan, "demo: extension", progress);
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
