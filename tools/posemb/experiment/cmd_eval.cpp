// `posemb eval`: greedy accuracy by length of a checkpoint written by `posemb train`; --table
// swaps in a position table resized with `posemb resize` (copy, interpolate or random rows);
// --rope-scaling runs a rope checkpoint with one of the library's RoPE scalings.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/report/results.hpp"
#include "lab/train/trainer.hpp"
#include "lab_options.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"
#include "results_table.hpp"

namespace posemb::cli {
namespace {

struct EvalOptions {
  std::string checkpoint;
  std::string lengths;
  std::size_t samples = 100;
  std::uint64_t seed = 1001;
  int threads = 0;
  std::string positions = "randomized";
  std::string out;
  std::string table;
  RopeScalingFlags rope;
  bool quiet = false;
};

// "A:B" as whole numbers; the range itself is checked by EvalConfig::validate.
std::pair<std::size_t, std::size_t> parse_lengths(const std::string& s) {
  const std::string bad =
      "--lengths " + quote_untrusted(s, 64) +
      " is not A:B with whole numbers, 1 <= A <= B <= " + std::to_string(lab::limits::eval_len.max);
  const auto colon = s.find(':');
  auto num = [&](const std::string& part) -> std::size_t {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9) {
      throw UsageError(bad);
    }
    return std::stoul(part);
  };
  if (colon == std::string::npos) throw UsageError(bad);
  return {num(s.substr(0, colon)), num(s.substr(colon + 1))};
}

// The eval flags that set each evaluation setting.
const FlagNames kEvalFlags = {
    {"eval.min_len", "--lengths"}, {"eval.max_len", "--lengths"}, {"eval.samples", "--samples"}};

void run_eval(const EvalOptions& o) {
  const auto [a, b] = parse_lengths(o.lengths);
  lab::EvalConfig ec;
  ec.min_len = a;
  ec.max_len = b;
  ec.samples = o.samples;
  ec.seed = o.seed;
  ec.randomized_eval =
      o.positions == "contiguous" ? lab::PositionMode::contiguous : lab::PositionMode::randomized;
  try {
    ec.validate();
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, kEvalFlags);
  }
  const auto rope_scaling = rope_scaling_request(o.rope);
  set_threads(o.threads);
  lab::RunConfig run;
  std::optional<lab::Model> loaded;
  try {
    loaded.emplace(lab::load_model(o.checkpoint, &run, o.table, rope_scaling));
  } catch (const lab::ConfigError& e) {
    // The scaling asked for does not fit the checkpoint's model (eval has no model flags).
    throw UsageError(std::string(e.what()) + " (--rope-scaling)");
  }
  lab::Model& model = *loaded;
  const auto& mc = model.config();
  try {
    lab::check_evaluation(mc, run.task, ec);  // work and memory, before anything is built
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, kEvalFlags);
  }
  const std::filesystem::path dir =
      o.out.empty() ? std::filesystem::path()
                    : prepare_output_dir(o.out, {"results.csv", "results.json"}, "eval");
  const bool has_table = model.encoding_spec().has_table;
  const bool scaled = mc.rope_scaling.method != lab::rope_scaling_methods().front();
  fmt::print(
      "posemb eval: {} (pe {}{}{}, task {}, trained on n <= {})\n", quote_untrusted(o.checkpoint),
      mc.pe, has_table ? fmt::format(", {} table rows", mc.max_seq_len) : "",
      scaled ? ", rope scaling " + mc.rope_scaling.text() : "", run.task.kind, run.task.train_len);
  Progress progress = Progress::lengths("eval " + mc.pe, ec.max_len - ec.min_len + 1, o.quiet,
                                        lab::evaluation_work_by_length(mc, run.task, ec));
  const auto rows = lab::evaluate(model, run.task, ec,
                                  [&](std::size_t done, std::size_t) { progress.update(done); });
  print_results_table({{mc.pe, rows}}, run.task.train_len, has_table ? mc.max_seq_len : 0);
  if (!o.out.empty()) {
    lab::RunResults rr;
    rr.pe = mc.pe;
    if (has_table) rr.max_seq_len = mc.max_seq_len;
    rr.results = rows;
    write_file_atomically((dir / "results.csv").string(), "posemb eval", lab::results_csv({rr}));
    write_file_atomically((dir / "results.json").string(), "posemb eval",
                          lab::results_json(run.task.kind, run.task.train_len, {rr}));
    fmt::print("wrote {} and {}\n", quote_untrusted((dir / "results.csv").string()),
               quote_untrusted((dir / "results.json").string()));
  }
}

}  // namespace

void register_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Greedy-decoding accuracy by length of a `posemb train` checkpoint; lengths needing a "
      "position the learned table lacks are reported as beyond_table.");
  cmd->add_option("--checkpoint", o->checkpoint,
                  "Checkpoint (.safetensors, or the `posemb train --out` directory holding "
                  "checkpoint.safetensors) to evaluate")
      ->required()
      ->transform(checkpoint_path());
  cmd->add_option("--lengths", o->lengths,
                  "Lengths n to evaluate, A:B (inclusive), " + lab::limits::eval_len.text())
      ->required();
  cmd->add_option("--samples", o->samples, "Instances per length")
      ->check(within(lab::limits::samples))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the evaluation instances")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (default: all cores; OMP_NUM_THREADS)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--eval-positions", o->positions,
                  "Encodings trained on randomized positions (learned-randomized) only: positions "
                  "at evaluation, a sorted random sample "
                  "from the table (randomized, as in training and Ruoss et al.) or 0..len-1 "
                  "(contiguous)")
      ->check(CLI::IsMember({"randomized", "contiguous"}))
      ->capture_default_str();
  cmd->add_option("--table", o->table,
                  "A position table file (e.g. `posemb resize CHECKPOINT --to N --method copy -o "
                  "T.safetensors`) to use instead of the checkpoint's learned table")
      ->check(CLI::ExistingFile);
  add_rope_scaling_flags(cmd, o->rope,
                         "Absent: the checkpoint's own (none, or the scaling `posemb train "
                         "--init-from ... --rope-scaling` fine-tuned it with); none: no scaling.");
  cmd->add_option("--out", o->out, "Also write results.csv and results.json here");
  cmd->add_flag("--quiet", o->quiet,
                "No progress on stderr (shown on a terminal, and on a pipe or file every 5 s "
                "once an evaluation takes longer)");
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace posemb::cli
