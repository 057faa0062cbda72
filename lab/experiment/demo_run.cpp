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
#include "lab/experiment/demo_stage.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/experiment/lm_demo.hpp"
#include "lab/model/model.hpp"
#include "lab/report/results.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {
namespace {

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
  s.run = plan.rope_extension_run(seed, m, plan.rope_factor);
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
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (g.run.model.pe != plan.extended) continue;
    const std::uint64_t seed = g.run.train.seed;
    const PositionTable table = load_position_table(g.checkpoint);
    for (const auto m : plan.methods) {
      GridRun s = extension_settings(plan, seed, m);
      start_from_extended_table(s, g, table, m, plan, ckdir);
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
  const RunConfig rope =
      plan.rope_extension_run(plan.options.seed, plan.rope_methods.back(), plan.rope_factor);
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
  if (plan.language) return lm_demo_work(plan);
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
                     const DemoProgressFn& progress) {
  if (plan.language) return run_lm_demo(plan, checkpoint_dir, progress);
  const std::string load_start = load_average();
  const auto t_all = std::chrono::steady_clock::now();
  DemoOutcome out;
  out.plan = plan;
  DemoReport& rep = out.report;

  DemoProgress stage{"demo: encodings", 0, 2};
  for (const double w : demo_work(plan)) stage.work_total += w;
  const auto grid = encoding_runs(plan, checkpoint_dir);
  auto grid_out = run_demo_stage(grid, plan, stage, progress);
  for (std::size_t i = 0; i < grid.size(); ++i) {
    rep.runs.push_back(run_results(grid[i], grid_out[i]));
    if (grid[i].keep_table) out.learned_table = std::move(grid_out[i].table);
  }

  // The learned tables' extension and RoPE's in one stage: the runs share the threads.
  auto ext = extension_runs(plan, grid, checkpoint_dir);
  const std::size_t n_table = ext.size();
  for (auto& r : rope_extension_runs(plan, grid)) ext.push_back(std::move(r));
  stage.stage = "demo: extension";
  stage.stage_index = 1;
  stage.work_done = demo_work(plan).front();  // the first stage's, done
  auto ext_out = run_demo_stage(ext, plan, stage, progress);
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
