// `posemb demo`: the main job. Trains the lab model (a small GPT) on a task with each registered
// positional encoding, three seeds each; then extends each learned table to twice the training
// length four ways (copy, interpolate, random, sinusoidal) and fine-tunes, and runs each rope run
// at twice its training length with each RoPE scaling and fine-tunes
// (lab/experiment/demo_plan.hpp). Writes summary.md (each published claim beside this run's
// numbers, with a verdict from stated rules; the same text on stdout), results and extension data,
// and the charts.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli.hpp"
#include "demo_flags.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/demo_files.hpp"
#include "lab/tasks/registry.hpp"
#include "lab_options.hpp"
#include "plots.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"

namespace posemb::cli {
namespace {

void run_demo(DemoFlags& f) {
  f.demo.parallel_runs = f.threads > 0
                             ? static_cast<std::size_t>(f.threads)
                             : std::max<std::size_t>(1, std::thread::hardware_concurrency());
  lab::DemoPlan plan;
  try {
    plan = lab::plan_demo(f.demo);
    lab::check_demo(plan);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"eval.max_len", "--eval-max"},
                          {"eval.samples", "--samples"},
                          {"demo.seed", "--seed"},
                          {"demo.seeds", "--seeds"},
                          {"demo.steps", "--steps"},
                          {"demo.randomized_steps", "--randomized-steps"},
                          {"demo.extension_steps", "--extension-steps"},
                          {"demo.rope_extension_steps", "--rope-extension-steps"}});
  }
  std::vector<std::string> outputs = lab::demo_file_names(plan);
  for (auto& chart : demo_chart_names(plan)) outputs.push_back(std::move(chart));
  const OutputFolder folder = prepare_output_dir(
      f.out, outputs, "demo", other_run_rules(f.force, ", or give another --out"));
  const std::filesystem::path& dir = folder.dir;
  const std::filesystem::path ckdir = dir / "checkpoints";
  std::filesystem::create_directories(ckdir);
  fmt::print(stderr,
             "posemb demo{}: {} encodings x {} seeds, then the learned table extended {} ways "
             "and {} with {} RoPE scalings{}; {} runs at a time, one thread each\n",
             f.demo.quick ? " --quick" : "", plan.encodings.size(), f.demo.seeds,
             plan.methods.size(), plan.rotary.empty() ? "no rotary run" : plan.rotary,
             plan.rope_methods.size(),
             plan.rope_factors.size() > 1 ? fmt::format(" at {} lengths", plan.rope_factors.size())
                                          : std::string(),
             f.demo.parallel_runs);
  // One bar per stage; the time left is the whole demo's: its pace so far over the estimated work
  // of what remains of every stage.
  std::optional<Progress> progress;
  std::string stage;
  const auto start = std::chrono::steady_clock::now();
  const auto out = lab::run_demo(plan, ckdir, [&](const lab::DemoProgress& p) {
    if (p.stage != stage) {
      stage = p.stage;
      progress.emplace(fmt::format("{} ({}/{})", stage, p.stage_index + 1, p.stages), p.total);
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress->update(p.done, p.loss,
                     p.work_done > 0 ? elapsed * (p.work_total - p.work_done) / p.work_done : 0.0);
  });
  auto files = lab::demo_data_files(out);
  for (auto& chart : demo_charts(out)) files.push_back(std::move(chart));
  std::string summary;
  for (const auto& [name, bytes] : files) {
    write_file_atomically((dir / name).string(), "posemb demo", bytes);
    if (name == "summary.md") summary = bytes;
  }
  folder.finish();  // with --force: the other run's files not rewritten are removed
  fmt::print("{}\nwrote {} (this text), results, extension data and charts\n", summary,
             quote_untrusted((dir / "summary.md").string()));
}

}  // namespace

void register_demo_command(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  std::string names;
  for (const auto& pe : lab::plan_demo({}).encodings) names += (names.empty() ? "" : ", ") + pe;
  CLI::App* cmd = app.add_subcommand(
      "demo", "Train a small GPT with each positional encoding (" + names +
                  "; three seeds each), extend the learned table four ways and fine-tune, run "
                  "RoPE at twice its training length with each scaling (" +
                  rope_scaling_method_names() +
                  ") and fine-tune; writes summary.md (published results beside this run's), "
                  "data and charts into --out. With --task text: every encoding and T5's bias, "
                  "bits per byte at L, 2L, 4L, 8L, the table extended three ways and RoPE at 2L "
                  "and 4L, before and after fine-tuning (lm_*.csv/json/svg).");
  add_demo_flags(cmd, *f);
  cmd->callback([f] { run_demo(*f); });
}

}  // namespace posemb::cli
