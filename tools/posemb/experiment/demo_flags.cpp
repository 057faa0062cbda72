// The flags of `posemb demo` (tools/posemb/experiment/demo_flags.hpp).
#include "demo_flags.hpp"

#include <string>

#include "cli.hpp"
#include "lab_flags.hpp"
#include "lab_options.hpp"

namespace posemb::cli {
namespace {

// "default 2000; reverse 4000; odd-first 6000; quick 400": a preset's value for each task (the
// first task's as the default, then every task that differs), and the quick run's.
std::string preset_text(std::size_t lab::DemoPreset::*field) {
  const auto tasks = lab::tasks();
  const std::size_t first = tasks.front()->demo.*field;
  std::string s = "default " + std::to_string(first);
  for (const auto* t : tasks) {
    if (t->demo.*field != first)
      s += "; " + std::string(t->name) + " " + std::to_string(t->demo.*field);
  }
  return s + "; quick " + std::to_string(tasks.front()->quick.*field);
}

}  // namespace

void add_demo_flags(CLI::App* cmd, DemoFlags& f) {
  auto& o = f.demo;
  cmd->add_option("--out", f.out, "Output directory")->capture_default_str();
  add_force_flag(cmd, f.force);
  cmd->add_flag("--quick", o.quick,
                "A smoke run under a minute (n <= " +
                    std::to_string(lab::tasks().front()->quick.train_len) + ", fewer steps)");
  cmd->add_option("--threads", f.threads,
                  "Runs trained at a time, one thread each (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", o.seed, "First seed; the runs use --seeds consecutive seeds")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--seeds", o.seeds, "Seeds per encoding and per extension method")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  add_task_flag(cmd, o.task);
  cmd->add_option("--corpus", o.corpus,
                  "Text task: the corpus, any file (default: Moby-Dick, installed by `bash "
                  "scripts/setup.sh corpus`)");
  cmd->add_option("--steps", o.steps,
                  "Training steps of every encoding but the randomized one (" +
                      preset_text(&lab::DemoPreset::steps) + ")")
      ->check(within(lab::limits::steps));
  cmd->add_option("--randomized-steps", o.randomized_steps,
                  "Training steps of the encoding trained on randomized positions (" +
                      preset_text(&lab::DemoPreset::randomized_steps) + ")")
      ->check(within(lab::limits::steps));
  cmd->add_option("--extension-steps", o.extension_steps,
                  "Fine-tuning steps after extending the table (" +
                      preset_text(&lab::DemoPreset::extension_steps) + ")")
      ->check(within(lab::limits::steps));
  cmd->add_option("--rope-extension-steps", o.rope_extension_steps,
                  "Fine-tuning steps of RoPE with each scaling at twice the training length (" +
                      preset_text(&lab::DemoPreset::rope_extension_steps) + "; probed every " +
                      std::to_string(lab::tasks().front()->demo.rope_probe_every) +
                      ", quick every " +
                      std::to_string(lab::tasks().front()->quick.rope_probe_every) + ")")
      ->check(within(lab::limits::steps));
  cmd->add_option("--eval-max", o.eval_max,
                  "Longest evaluated n (" + preset_text(&lab::DemoPreset::eval_max) + ")")
      ->check(within(lab::limits::eval_len));
  cmd->add_option("--samples", o.samples,
                  "Instances per evaluated length (" + preset_text(&lab::DemoPreset::samples) + ")")
      ->check(within(lab::limits::samples));
}

}  // namespace posemb::cli
