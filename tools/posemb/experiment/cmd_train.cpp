// `posemb train`: trains the lab model (a small GPT) on a task with one positional encoding,
// writing atomic safetensors checkpoints (parameters + AdamW state) into --out. Under `mpirun
// -np N` the ranks share each step's micro-batches (lab/trainer.hpp): the same checkpoint as one
// process, written by rank 0; rank 0 alone prints.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "cli.hpp"
#include "lab/evaluate.hpp"
#include "lab/trainer.hpp"
#include "lab_options.hpp"
#include "mpi_job.hpp"
#include "progress.hpp"
#include "results_table.hpp"

namespace posemb::cli {
namespace {

struct TrainOptions {
  LabFlags lab;
  std::string out = "train-out";
  std::string resume;
  std::size_t checkpoint_every = 200;
  std::size_t stop_after = 0;
  std::size_t eval_max = 0;
  std::size_t eval_samples = 100;
  bool quiet = false;
  double peer_timeout = 600;
  std::vector<CLI::Option*> run_flags;  // settings a resumed run takes from its checkpoint
  CLI::Option* steps_flag = nullptr;
};

void train(TrainOptions& o, lab::Communicator& comm) {
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
  lab::RunConfig run = finish_lab_flags(o.lab);
  set_threads(o.lab.threads);
  const bool root = comm.rank() == 0;
  const bool quiet = o.quiet || !root;
  std::unique_ptr<lab::Trainer> tr;
  if (o.resume.empty()) {
    tr = std::make_unique<lab::Trainer>(run, comm);
  } else {
    tr = std::make_unique<lab::Trainer>(lab::Trainer::load(o.resume, comm));
    if (o.steps_flag->count() > 0) tr->set_total_steps(run.train.steps);
  }
  const auto& cfg = tr->config();
  comm.all_or_none("train: creating the output folder", [&] {
    if (root) std::filesystem::create_directories(o.out);
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
    fmt::print("checkpoint: {}\n", ckpt);
  }
  if (o.eval_max > 0 && root) {
    lab::EvalConfig ec;
    ec.min_len = 1;
    ec.max_len = o.eval_max;
    ec.samples = o.eval_samples;
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
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Write the checkpoint every N steps (0: only at the end)")
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
