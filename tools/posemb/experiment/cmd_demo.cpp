// `posemb demo`: the main job. Trains the lab model (a small GPT) on a task with each registered
// positional encoding, three seeds each; then extends each learned table to twice the training
// length four ways (copy, interpolate, random, sinusoidal) and fine-tunes, and runs each rope run
// at twice its training length with each RoPE scaling and fine-tunes (lab/experiment.hpp).
// Writes summary.md (each published claim beside this run's numbers, with a verdict from stated
// rules; the same text on stdout), results and extension data, and the charts.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/demo.hpp"
#include "lab/tasks/registry.hpp"
#include "lab_options.hpp"
#include "plots.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"

namespace posemb::cli {
namespace {

struct DemoFlags {
  lab::DemoOptions demo;
  std::string out = "demo-out";
  int threads = 0;  // concurrent runs (0: the machine's cores)
};

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
                          {"demo.seeds", "--seeds"}});
  }
  const std::filesystem::path dir = prepare_output_dir(
      f.out,
      {"summary.md", "results.csv", "results.json", "extension.csv", "extension.json",
       "length_generalization.svg", "extension.svg", "learned_table_similarity.png",
       "rope_extension.csv", "rope_extension.json", "rope_extension.svg"},
      "demo");
  const std::filesystem::path ckdir = dir / "checkpoints";
  std::filesystem::create_directories(ckdir);
  fmt::print(stderr,
             "posemb demo{}: {} encodings x {} seeds, then the learned table extended {} ways "
             "and {} with {} RoPE scalings; {} runs at a time, one thread each\n",
             f.demo.quick ? " --quick" : "", plan.encodings.size(), f.demo.seeds,
             plan.methods.size(), plan.rotary.empty() ? "no rotary run" : plan.rotary,
             plan.rope_methods.size(), f.demo.parallel_runs);
  std::optional<Progress> progress;
  std::string stage;
  const auto out = lab::run_demo(plan, ckdir, [&](const lab::DemoProgress& p) {
    if (p.stage != stage) {
      stage = p.stage;
      progress.emplace(stage, p.total);
    }
    progress->update(p.done, p.loss);
  });
  auto files = lab::demo_data_files(out);
  for (auto& chart : demo_charts(out)) files.push_back(std::move(chart));
  std::string summary;
  for (const auto& [name, bytes] : files) {
    write_file_atomically((dir / name).string(), "posemb demo", bytes);
    if (name == "summary.md") summary = bytes;
  }
  fmt::print("{}\nwrote {} (this text), results, extension data and charts\n", summary,
             quote_untrusted((dir / "summary.md").string()));
}

}  // namespace

void register_demo_command(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  auto& o = f->demo;
  std::string names;
  for (const auto& pe : lab::plan_demo({}).encodings) names += (names.empty() ? "" : ", ") + pe;
  CLI::App* cmd = app.add_subcommand(
      "demo", "Train a small GPT with each positional encoding (" + names +
                  "; three seeds each), extend the learned table four ways and fine-tune, run "
                  "RoPE at twice its training length with each scaling (none, linear, ntk, "
                  "dynamic, yarn) and fine-tune; writes summary.md (published results beside "
                  "this run's), data and charts into --out.");
  cmd->add_option("--out", f->out, "Output directory")->capture_default_str();
  cmd->add_flag("--quick", o.quick, "A smoke run under a minute (n <= 6, fewer steps)");
  cmd->add_option("--threads", f->threads,
                  "Runs trained at a time, one thread each (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", o.seed, "First seed; the runs use --seeds consecutive seeds")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--seeds", o.seeds, "Seeds per encoding and per extension method")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--task", o.task, "Task: " + lab::task_rules())
      ->check(CLI::IsMember(lab::task_name_list()))
      ->capture_default_str();
  cmd->add_option("--steps", o.steps,
                  "Training steps of every encoding but the randomized one (default 2000; reverse "
                  "4000; odd-first 6000; quick 400)")
      ->check(within(lab::limits::steps));
  cmd->add_option("--randomized-steps", o.randomized_steps,
                  "Training steps of the encoding trained on randomized positions (default 2500; "
                  "reverse 7500; odd-first 8000; quick 800)")
      ->check(within(lab::limits::steps));
  cmd->add_option("--extension-steps", o.extension_steps,
                  "Fine-tuning steps after extending the table (default 1000; reverse and "
                  "odd-first 3000; quick 300)")
      ->check(within(lab::limits::steps));
  cmd->add_option(
         "--rope-extension-steps", o.rope_extension_steps,
         "Fine-tuning steps of RoPE with each scaling at twice the training length "
         "(default 500, probed every 100; reverse and odd-first 1000; quick 200, every 50)")
      ->check(within(lab::limits::steps));
  cmd->add_option("--eval-max", o.eval_max, "Longest evaluated n (default 3x training length)")
      ->check(within(lab::limits::eval_len));
  cmd->add_option("--samples", o.samples, "Instances per evaluated length (default 100; quick 30)")
      ->check(within(lab::limits::samples));
  cmd->callback([f] { run_demo(*f); });
}

}  // namespace posemb::cli
