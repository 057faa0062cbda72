// `posemb train`: trains the lab model (a small GPT) on a task with one positional encoding,
// writing atomic safetensors checkpoints (parameters + AdamW state) into --out. --resume
// continues a run; --init-from starts a new run from a checkpoint's weights (with --table: a
// resized table), e.g. to fine-tune at a longer training length. Under `mpirun -np N` the ranks
// share each step's micro-batches (lab/trainer.hpp): the same checkpoint as one process, written
// by rank 0; rank 0 alone prints.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cli.hpp"
#include "lab/checkpoint.hpp"
#include "lab/evaluate.hpp"
#include "lab/preflight.hpp"
#include "lab/trainer.hpp"
#include "lab_options.hpp"
#include "mpi_job.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"
#include "results_table.hpp"

namespace posemb::cli {
namespace {

struct TrainOptions {
  LabFlags lab;
  std::string out = "train-out";
  std::string resume;
  std::string init_from;
  std::string table;
  std::size_t checkpoint_every = 200;
  std::size_t stop_after = 0;
  std::size_t eval_max = 0;
  std::size_t eval_samples = 100;
  bool quiet = false;
  double peer_timeout = 600;
  std::vector<CLI::Option*> run_flags;  // settings a resumed run takes from its checkpoint
  CLI::Option* steps_flag = nullptr;
};

// The flags a run started with --init-from may set (task and training: the model's shape and
// encoding come from the checkpoint), each copying its value from the parsed flags.
using Setter = void (*)(lab::RunConfig&, const LabFlags&);
const std::map<std::string, Setter>& init_from_setters() {
  static const std::map<std::string, Setter> m = {
      {"--task",
       [](lab::RunConfig& r, const LabFlags& f) { r.task.kind = lab::parse_task_kind(f.task); }},
      {"--alphabet",
       [](lab::RunConfig& r, const LabFlags& f) { r.task.alphabet = f.run.task.alphabet; }},
      {"--train-len",
       [](lab::RunConfig& r, const LabFlags& f) { r.task.train_len = f.run.task.train_len; }},
      {"--batch", [](lab::RunConfig& r, const LabFlags& f) { r.train.batch = f.run.train.batch; }},
      {"--micro-batch",
       [](lab::RunConfig& r, const LabFlags& f) { r.train.micro_batch = f.run.train.micro_batch; }},
      {"--steps", [](lab::RunConfig& r, const LabFlags& f) { r.train.steps = f.run.train.steps; }},
      {"--lr", [](lab::RunConfig& r, const LabFlags& f) { r.train.lr = f.run.train.lr; }},
      {"--warmup",
       [](lab::RunConfig& r, const LabFlags& f) { r.train.warmup = f.run.train.warmup; }},
      {"--min-lr-ratio",
       [](lab::RunConfig& r, const LabFlags& f) {
         r.train.min_lr_ratio = f.run.train.min_lr_ratio;
       }},
      {"--weight-decay",
       [](lab::RunConfig& r, const LabFlags& f) {
         r.train.weight_decay = f.run.train.weight_decay;
       }},
      {"--beta1", [](lab::RunConfig& r, const LabFlags& f) { r.train.beta1 = f.run.train.beta1; }},
      {"--beta2", [](lab::RunConfig& r, const LabFlags& f) { r.train.beta2 = f.run.train.beta2; }},
      {"--grad-clip",
       [](lab::RunConfig& r, const LabFlags& f) { r.train.grad_clip = f.run.train.grad_clip; }},
      {"--seed", [](lab::RunConfig& r, const LabFlags& f) { r.train.seed = f.run.train.seed; }},
  };
  return m;
}

// The new run of --init-from: the checkpoint's settings, then every task and training flag
// given. A model flag is a usage error.
std::unique_ptr<lab::Trainer> init_from(const TrainOptions& o, lab::Communicator& comm) {
  lab::RunConfig run;
  comm.all_or_none("train: reading the checkpoint to start from",
                   [&] { run = lab::read_checkpoint(o.init_from).run; });
  const auto& setters = init_from_setters();
  for (const auto* opt : o.run_flags) {
    if (opt->count() == 0) continue;
    const auto it = setters.find(opt->get_name());
    if (it == setters.end()) {
      throw UsageError(opt->get_name() +
                       " cannot be combined with --init-from: the model's shape and encoding "
                       "come from the checkpoint (its table's rows from --table or the "
                       "checkpoint; posemb resize makes a longer one)");
    }
    it->second(run, o.lab);
  }
  if (o.steps_flag->count() > 0) run.train.steps = o.lab.run.train.steps;
  run.model.vocab_size = run.task.vocab_size();
  try {
    return std::make_unique<lab::Trainer>(
        lab::Trainer::from_checkpoint(o.init_from, run, o.table, comm));
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
}

void train(TrainOptions& o, lab::Communicator& comm) {
  if (!o.table.empty() && o.init_from.empty()) {
    throw UsageError("--table needs --init-from: it replaces the learned table of that checkpoint");
  }
  if (!o.resume.empty() && !o.init_from.empty()) {
    throw UsageError(
        "--resume and --init-from exclude each other: --resume continues a run, "
        "--init-from starts a new one from a checkpoint's weights");
  }
  if (!o.resume.empty()) {
    for (const auto* opt : o.run_flags) {
      if (opt->count() > 0) {
        throw UsageError(opt->get_name() +
                         " cannot be combined with --resume: a resumed run "
                         "takes its settings from the checkpoint (only --steps, --threads, "
                         "--out, --peer-timeout and the checkpoint flags may be given)");
      }
    }
  }
  set_threads(o.lab.threads);
  const bool root = comm.rank() == 0;
  const bool quiet = o.quiet || !root;
  std::unique_ptr<lab::Trainer> tr;
  if (!o.init_from.empty()) {
    tr = init_from(o, comm);
  } else if (o.resume.empty()) {
    tr = std::make_unique<lab::Trainer>(finish_lab_flags(o.lab), comm);
  } else {
    const lab::RunConfig run = finish_lab_flags(o.lab);
    tr = std::make_unique<lab::Trainer>(lab::Trainer::load(o.resume, comm));
    if (o.steps_flag->count() > 0) tr->set_total_steps(run.train.steps);
  }
  const auto& cfg = tr->config();
  try {  // what the run and its final write need, before any training (lab/preflight.hpp)
    lab::check_resume_step(tr->step(), cfg.train.steps);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"train.steps", "--steps"}});
  }
  lab::check_checkpoint_metadata(cfg.to_json(), tr->lineage());
  lab::EvalConfig ec;
  if (o.eval_max > 0) {
    // The evaluation after training: its work and memory are checked before training.
    ec.min_len = 1;
    ec.max_len = o.eval_max;
    ec.samples = o.eval_samples;
    try {
      lab::check_evaluation(cfg.model, ec);
    } catch (const lab::ConfigError& e) {
      throw usage_error(e, {{"eval.max_len", "--eval-max"}, {"eval.samples", "--eval-samples"}});
    }
  }
  comm.all_or_none("train: preparing the output folder", [&] {
    if (root) prepare_output_dir(o.out, {"checkpoint.safetensors"}, "train");
  });
  const std::string ckpt = (std::filesystem::path(o.out) / "checkpoint.safetensors").string();
  const std::size_t total = cfg.train.steps;
  const std::size_t target = o.stop_after != 0 ? std::min(o.stop_after, total) : total;
  if (!quiet) {
    fmt::print(
        "posemb train: {} on {} (alphabet {}, train_len {}), pe {}{}, {} layers, d_model "
        "{}, {} heads, {} parameters; steps {}..{} of {}, batch {}\n",
        "the lab GPT", lab::task_kind_name(cfg.task.kind), cfg.task.alphabet, cfg.task.train_len,
        cfg.model.pe,
        tr->model().encoding_spec().has_table
            ? fmt::format(" ({} table rows)", cfg.model.max_seq_len)
            : std::string(),
        cfg.model.n_layers, cfg.model.d_model, cfg.model.n_heads, tr->model().total_elements(),
        tr->step(), target, total, cfg.train.batch);
    if (!tr->lineage().empty()) fmt::print("lineage: {}\n", tr->lineage());
    if (comm.size() > 1) {
      fmt::print("data parallel: {} ranks share {} micro-batches of {} sequences a step\n",
                 comm.size(), tr->micro_batches(),
                 std::min(cfg.train.micro_batch, cfg.train.batch));
    }
  }
  Progress progress("train " + cfg.model.pe, target, quiet);
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t first = tr->step();
  double loss = 0.0;
  while (tr->step() < target) {
    loss = tr->train_step();
    progress.update(tr->step(), loss);
    if (o.checkpoint_every != 0 && tr->step() % o.checkpoint_every == 0) tr->save(ckpt);
  }
  tr->save(ckpt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens = static_cast<double>((tr->step() - first) * cfg.train.batch *
                                            lab::input_len(cfg.task.train_len));
  if (!quiet) {
    fmt::print(
        "trained steps {}..{} in {:.2f} s ({:.0f} tokens/s counting 2*train_len+2 per "
        "sequence), last loss {:.5f}\n",
        first, tr->step(), secs, secs > 0 ? tokens / secs : 0.0, loss);
    fmt::print("checkpoint: {}\n", quote_untrusted(ckpt));
  }
  if (o.eval_max > 0 && root) {
    const auto rows = lab::evaluate(tr->model(), cfg.task, ec);
    print_results_table({{cfg.model.pe, rows}}, cfg.task.train_len);
  }
}

void run_train(TrainOptions& o) {
  // The job first (MPI starts here under mpirun), so that rank 0 alone reports any failure.
  lab::Communicator& comm = lab::world();
  set_peer_timeout(comm, o.peer_timeout);
  run_job(comm, [&] { train(o, comm); });
}

}  // namespace

void register_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train the lab model (a small GPT-style transformer) on an algorithmic task with one "
      "positional encoding; checkpoints (safetensors, with the AdamW state) go to --out.");
  add_lab_flags(cmd, o->lab);
  for (auto* opt : cmd->get_options()) {
    const auto& n = opt->get_name();
    if (n == "--steps") {
      o->steps_flag = opt;
    } else if (n != "--threads" && n != "--help") {
      o->run_flags.push_back(opt);
    }
  }
  cmd->add_option("--out", o->out, "Directory for checkpoint.safetensors")->capture_default_str();
  cmd->add_option("--resume", o->resume,
                  "Continue from this checkpoint (bit for bit as if never interrupted)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--init-from", o->init_from,
                  "Start a new run (step 0, a fresh optimizer) from this checkpoint's weights; "
                  "task and training flags may differ, the model comes from the checkpoint")
      ->check(CLI::ExistingFile);
  cmd->add_option("--table", o->table,
                  "With --init-from: the learned table to start from, e.g. `posemb resize "
                  "CHECKPOINT --to N --method copy -o T.safetensors` (default: the checkpoint's)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Write the checkpoint every N steps (0: only at the end)")
      ->check(whole_number(lab::limits::steps.max))
      ->capture_default_str();
  cmd->add_option("--stop-after", o->stop_after,
                  "Stop (with a checkpoint) after this step, keeping the --steps schedule; "
                  "--resume continues")
      ->check(within(lab::limits::steps));
  cmd->add_option("--eval-max", o->eval_max,
                  "After training, evaluate lengths 1..N with greedy decoding (0: no)")
      ->check(CLI::Range(std::size_t{0}, lab::limits::eval_len.max))
      ->capture_default_str();
  cmd->add_option("--eval-samples", o->eval_samples, "Instances per evaluated length")
      ->check(within(lab::limits::samples))
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "No progress or summary");
  cmd->add_option("--peer-timeout", o->peer_timeout,
                  "Under mpirun: seconds a rank waits for the others before ending the job "
                  "(0: no limit)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->callback([o] { run_train(*o); });
}

}  // namespace posemb::cli
