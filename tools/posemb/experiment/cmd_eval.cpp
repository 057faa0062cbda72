// `posemb eval`: a checkpoint written by `posemb train` evaluated by length (lab::open_eval,
// run_eval, eval_data_files: lab/experiment/eval_run.hpp), greedy decoding or teacher-forced loss;
// --table swaps in a position table resized with `posemb resize`; --rope-scaling runs a rope
// checkpoint with one of the library's RoPE scalings.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli.hpp"
#include "lab/experiment/eval_run.hpp"
#include "lab_options.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"
#include "results_table.hpp"

namespace posemb::cli {
namespace {

struct EvalOptions {
  lab::EvalRequest request;
  std::string lengths;
  std::string positions = "randomized";
  std::string scoring;  // "": the task's
  RopeScalingFlags rope;
  int threads = 0;
  std::string out;
  bool quiet = false;
};

// "A:B" as whole numbers; the range itself is checked by EvalConfig::validate.
void parse_lengths(const std::string& s, lab::EvalConfig& ec) {
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
  ec.min_len = num(s.substr(0, colon));
  ec.max_len = num(s.substr(colon + 1));
}

// The flags that set each setting of the evaluation (the encoding is the checkpoint's: no flag).
const FlagNames kEvalFlags = {{"eval.min_len", "--lengths"},
                              {"eval.max_len", "--lengths"},
                              {"eval.samples", "--samples"},
                              {"eval.scoring", "--scoring"},
                              {"model.pe", ""}};

void run_eval(EvalOptions& o) {
  lab::EvalConfig& ec = o.request.eval;
  parse_lengths(o.lengths, ec);
  ec.randomized_eval =
      o.positions == "contiguous" ? lab::PositionMode::contiguous : lab::PositionMode::randomized;
  if (!o.scoring.empty()) ec.scoring = lab::parse_scoring(o.scoring);
  o.request.rope_scaling = rope_scaling_request(o.rope);
  set_threads(o.threads);
  std::optional<lab::EvalSession> s;
  try {
    s.emplace(lab::open_eval(o.request));  // the model and the evaluation's work and memory
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, kEvalFlags);
  }
  const std::filesystem::path dir = o.out.empty()
                                        ? std::filesystem::path()
                                        : prepare_output_dir(o.out, lab::eval_file_names(), "eval");
  const auto& mc = s->model_config();
  const bool has_table = s->model.encoding_spec().has_table;
  fmt::print("posemb eval: {} (pe {}{}{}, task {}, trained on n <= {})\n",
             quote_untrusted(o.request.checkpoint), mc.pe,
             has_table ? fmt::format(", {} table rows", mc.max_seq_len) : "",
             mc.rope_scaling.method != lab::rope_scaling_methods().front()
                 ? ", rope scaling " + mc.rope_scaling.text()
                 : "",
             s->run.task.kind, s->run.task.train_len);
  Progress progress = Progress::lengths("eval " + mc.pe, ec.max_len - ec.min_len + 1, o.quiet,
                                        lab::eval_work_by_length(*s));
  s->rows = lab::run_eval(*s, [&](std::size_t done, std::size_t) { progress.update(done); });
  print_results_table({{mc.pe, s->rows}}, s->run.task.train_len, has_table ? mc.max_seq_len : 0);
  if (o.out.empty()) return;
  std::string names;
  for (const auto& [name, bytes] : lab::eval_data_files(*s)) {
    write_file_atomically((dir / name).string(), "posemb eval", bytes);
    names += (names.empty() ? "" : " and ") + quote_untrusted((dir / name).string());
  }
  fmt::print("wrote {}\n", names);
}

}  // namespace

void register_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Accuracy (greedy decoding) or loss (teacher-forced) by length of a `posemb train` "
      "checkpoint; lengths needing a position the learned table lacks are reported as "
      "beyond_table.");
  cmd->add_option("--checkpoint", o->request.checkpoint,
                  "Checkpoint (.safetensors, or the `posemb train --out` directory holding "
                  "checkpoint.safetensors) to evaluate")
      ->required()
      ->transform(checkpoint_path());
  cmd->add_option("--lengths", o->lengths,
                  "Lengths n to evaluate, A:B (inclusive), " + lab::limits::eval_len.text())
      ->required();
  cmd->add_option("--samples", o->request.eval.samples, "Instances per length")
      ->check(within(lab::limits::samples))
      ->capture_default_str();
  o->request.eval.seed = 1001;
  cmd->add_option("--seed", o->request.eval.seed, "Seed of the evaluation instances")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--scoring", o->scoring,
                  "greedy (decode from the prompt; exact match and token accuracy) or "
                  "teacher-forced (every input given; the answer's loss and bits per token); "
                  "default: the task's")
      ->check(CLI::IsMember(lab::scoring_names()));
  cmd->add_option("--threads", o->threads, "Threads (default: all cores; OMP_NUM_THREADS)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--eval-positions", o->positions,
                  "Encodings trained on randomized positions (learned-randomized) only: positions "
                  "at evaluation, a sorted random sample from the table (randomized, as in "
                  "training and Ruoss et al.) or 0..len-1 (contiguous)")
      ->check(CLI::IsMember({"randomized", "contiguous"}))
      ->capture_default_str();
  cmd->add_option("--table", o->request.table,
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
  cmd->callback(read_files_protected([o] { run_eval(*o); }));
}

}  // namespace posemb::cli
