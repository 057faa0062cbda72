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

// "A:B" (a range: min_len..max_len) or a list "64,128,256,512" (ranges allowed, sorted); the
// lengths themselves are checked by EvalConfig::validate.
void parse_lengths(const std::string& s, lab::EvalConfig& ec) {
  auto list = parse_number_list(s, "--lengths", lab::limits::eval_len.max,
                                lab::limits::eval_len.max, "1:36, or 64,128,256,512");
  if (s.find(',') == std::string::npos && s.find(':') != std::string::npos) {
    ec.min_len = list.front();
    ec.max_len = list.back();
    return;
  }
  std::sort(list.begin(), list.end());
  if (const auto d = std::adjacent_find(list.begin(), list.end()); d != list.end()) {
    throw UsageError("--lengths " + quote_untrusted(s, 64) + " names " + std::to_string(*d) +
                     " twice");
  }
  ec.lengths.assign(list.begin(), list.end());
}

// The flags that set each setting of the evaluation (the encoding is the checkpoint's: no flag).
const FlagNames kEvalFlags = {{"eval.min_len", "--lengths"},
                              {"eval.max_len", "--lengths"},
                              {"eval.lengths", "--lengths"},
                              {"task.corpus", "--corpus"},
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
  const std::filesystem::path dir =
      o.out.empty() ? std::filesystem::path()
                    : prepare_output_dir(o.out, lab::eval_file_names(), "eval").dir;
  print_eval_header(*s);
  Progress progress = Progress::lengths("eval " + s->model_config().pe, ec.length_list().size(),
                                        o.quiet, lab::eval_work_by_length(*s));
  s->rows = lab::run_eval(*s, [&](std::size_t done, std::size_t) { progress.update(done); });
  print_eval_results(*s);
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
                  "Lengths n to evaluate: A:B (inclusive) or a list, 64,128,256,512; each in " +
                      lab::limits::eval_len.text())
      ->required();
  cmd->add_option("--corpus", o->request.corpus,
                  "A text checkpoint's corpus file, when it is not where the checkpoint read it "
                  "(it must be the same text: size and SHA-256; the name may differ)");
  cmd->add_option("--stride", o->request.eval.stride,
                  "Text: the stride of the sliding-window figure (default: half the window)")
      ->check(within(lab::limits::eval_len));
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
