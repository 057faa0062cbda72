// The text demo's runs (lab/experiment/lm_demo.hpp).
#include "lab/experiment/lm_demo.hpp"

#include <fmt/core.h>

#include <chrono>
#include <string>
#include <vector>

#include "lab/model/model.hpp"
#include "lab/tasks/registry.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"

namespace posemb::lab {
namespace {

// The plan's evaluation at L, 2L, ... up to top (the same bytes and seed).
EvalConfig lengths_to(const DemoPlan& plan, std::size_t top) {
  EvalConfig e = plan.eval;
  e.lengths.clear();
  for (std::size_t n = plan.train_len; n <= top; n *= 2) e.lengths.push_back(n);
  e.min_len = e.lengths.front();
  e.max_len = e.lengths.back();
  return e;
}

// A learned run's extension by method m, all but its table: fine-tuned at 2L, evaluated at L and
// 2L before any update and after.
GridRun table_settings(const DemoPlan& plan, std::uint64_t seed, ResizeMethod m) {
  GridRun s;
  s.name = "extend by " + std::string(resize_method_name(m)) + " seed " + std::to_string(seed);
  s.run = plan.extension_run(seed);
  s.eval = lengths_to(plan, 2 * plan.train_len);
  s.eval_at = {0};
  return s;
}

// A rotary run with scaling m at factor f, all but its checkpoint: fine-tuned at fL with it,
// evaluated at L..fL before any update and after.
GridRun rope_settings(const DemoPlan& plan, std::uint64_t seed, const std::string& m, double f) {
  GridRun s;
  s.name = fmt::format("{} {} x{:g} seed {}", plan.rotary, m, f, seed);
  s.run = plan.rope_extension_run(seed, m, f);
  s.eval = lengths_to(plan, s.run.task.train_len);
  s.eval_at = {0};
  return s;
}

// 2. The extension runs of the trained grid: the learned tables' (written into ckdir), then
//    RoPE's; n_table: how many are the tables'.
std::vector<GridRun> extension_runs(const DemoPlan& plan, const std::vector<GridRun>& grid,
                                    const std::filesystem::path& ckdir, std::size_t& n_table) {
  std::vector<GridRun> ext;
  for (const auto& g : grid) {
    if (g.run.model.pe != plan.extended) continue;
    const std::uint64_t seed = g.run.train.seed;
    const PositionTable table = load_position_table(g.checkpoint);
    for (const auto m : plan.methods) {
      GridRun s = table_settings(plan, seed, m);
      start_from_extended_table(s, g, table, m, plan, ckdir);
      ext.push_back(std::move(s));
    }
  }
  n_table = ext.size();
  for (const auto& g : grid) {
    if (plan.rotary.empty() || g.run.model.pe != plan.rotary) continue;
    for (const double f : plan.rope_factors) {
      for (const auto& m : plan.rope_methods) {
        GridRun s = rope_settings(plan, g.run.train.seed, m, f);
        s.init_from = g.checkpoint;
        ext.push_back(std::move(s));
      }
    }
  }
  return ext;
}

// The report's settings text.
void describe(DemoReport& rep, const DemoPlan& plan) {
  const std::size_t L = plan.train_len;
  const RunConfig first = plan.run(plan.extended, plan.options.seed);
  rep.task = first.task;
  complete_task(rep.task);  // the corpus's identity, for the summary
  rep.samples = plan.eval.samples;
  rep.quick = plan.options.quick;
  rep.extended_train_len = 2 * L;
  rep.model = fmt::format(
      "a {}-layer, {}-head, d_model {}, d_ff {} GPT ({} parameters with a "
      "learned table)",
      first.model.n_layers, first.model.n_heads, first.model.d_model, first.model.d_ff,
      Model(first.model).total_elements());
  rep.training = fmt::format(
      "{} AdamW steps of {} windows of L bytes per run (learned-randomized positions: {} steps, "
      "a {}-row table), lr {:g} with {} warmup steps and cosine decay",
      plan.steps, first.train.batch, plan.randomized_steps, plan.randomized_rows, first.train.lr,
      first.train.warmup);
  std::string lengths;
  for (const auto n : plan.eval.lengths)
    lengths += (lengths.empty() ? "" : ", ") + std::to_string(n);
  rep.evaluation = fmt::format(
      "Bits per byte at {} on the first {} bytes of the validation text at every length (Press "
      "et al.'s protocol: the same bytes cut into non-overlapping windows of the length, "
      "positions from 0 in each, every predicted byte counted once, the partial last window "
      "dropped; the bytes are bounded so that 8L windows cost no more than L ones).",
      lengths, plan.eval.text_bytes);
  const RunConfig ext = plan.extension_run(plan.options.seed);
  rep.extension_training = fmt::format(
      "Each {} run's table ({} rows) extended to {} rows by copy, interpolate and random rows "
      "(posemb resize_table; random: N(0, 0.02) new rows), evaluated before any update (step 0) "
      "and after {} fine-tuning steps at {} bytes (lr {:g}, {} warmup steps, a fresh optimizer)",
      plan.extended, L, 2 * L, plan.extension_steps, 2 * L, ext.train.lr, ext.train.warmup);
  if (plan.rotary.empty()) return;
  std::string methods;
  for (const auto& m : plan.rope_methods) methods += (methods.empty() ? "" : ", ") + m;
  rep.rope_extension_training = fmt::format(
      "Each {} run (trained at {} positions) run at sL for s = 2 and 4 with each RoPE scaling "
      "({}; factor s over the {} trained positions, posemb/rope_scaling.hpp), evaluated before "
      "any update (step 0) and after {} fine-tuning steps at sL with that scaling",
      plan.rotary, L, methods, L, plan.rope_extension_steps);
}

}  // namespace

std::vector<double> lm_demo_work(const DemoPlan& plan) {
  double first = 0.0, second = 0.0;
  const auto add = [](double& w, const GridRun& g) {
    const auto [training, evaluation] = run_work(g);
    w += training + 2 * evaluation;  // step 0 and after
  };
  for (std::size_t k = 0; k < plan.options.seeds; ++k) {
    const std::uint64_t seed = plan.options.seed + k;
    for (const auto& pe : plan.encodings) {
      GridRun g;
      g.run = plan.run(pe, seed);
      g.eval = plan.eval;
      const auto [training, evaluation] = run_work(g);
      first += training + evaluation;
    }
    for (const auto m : plan.methods) add(second, table_settings(plan, seed, m));
    for (const double f : plan.rope_factors) {
      for (const auto& m : plan.rope_methods) add(second, rope_settings(plan, seed, m, f));
    }
  }
  return {first, second};
}

DemoOutcome run_lm_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                        const DemoProgressFn& progress) {
  const std::string load_start = load_average();
  const auto t_all = std::chrono::steady_clock::now();
  DemoOutcome out;
  out.plan = plan;
  DemoReport& rep = out.report;
  const auto work = lm_demo_work(plan);
  DemoProgress stage{"demo: encodings", 0, 2};
  stage.work_total = work[0] + work[1];
  const auto grid = encoding_runs(plan, checkpoint_dir);
  const auto grid_out = run_demo_stage(grid, plan, stage, progress);
  for (std::size_t i = 0; i < grid.size(); ++i)
    rep.runs.push_back(run_results(grid[i], grid_out[i]));

  std::size_t n_table = 0;
  const auto ext = extension_runs(plan, grid, checkpoint_dir, n_table);
  stage.stage = "demo: extension";
  stage.stage_index = 1;
  stage.work_done = work[0];
  auto ext_out = run_demo_stage(ext, plan, stage, progress);
  for (std::size_t i = 0; i < ext.size(); ++i) {
    const bool table = i < n_table;
    const std::string method =
        table ? std::string(resize_method_name(plan.methods[i % plan.methods.size()]))
              : plan.rope_methods[(i - n_table) % plan.rope_methods.size()];
    ExtensionRun er = extension_result(method, ext[i], ext_out[i]);
    er.steps = ext[i].run.train.steps;
    er.factor = table ? 2.0
                      : plan.rope_factors[(i - n_table) / plan.rope_methods.size() %
                                          plan.rope_factors.size()];
    (table ? rep.extension : rep.rope_extension).push_back(std::move(er));
  }
  describe(rep, plan);
  rep.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  rep.machine =
      fmt::format("{} runs at a time, one thread each; load average {} at the start, {} at the end",
                  plan.options.parallel_runs, load_start, load_average());
  return out;
}

}  // namespace posemb::lab
