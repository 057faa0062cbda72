// `posemb train`: trains the lab model (a small GPT) on a task with one positional encoding,
// writing atomic safetensors checkpoints (parameters + AdamW state) into --out. --resume
// continues a run; --init-from starts a new run from a checkpoint's weights (with --table: a
// resized table), e.g. to fine-tune at a longer training length. Under `mpirun -np N` the ranks
// share each step's micro-batches (lab/train/trainer.hpp): the same checkpoint as one process,
// written by rank 0; rank 0 alone prints.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cli.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/train/preflight.hpp"
#include "lab/train/train_until.hpp"
#include "lab/train/trainer.hpp"
#include "lab_options.hpp"
#include "mpi_job.hpp"
#include "posemb/errors.hpp"
#include "progress.hpp"
#include "results_table.hpp"
#include "train_flags.hpp"
#include "train_report.hpp"

namespace posemb::cli {
namespace {

void train(TrainOptions& o, lab::Communicator& comm) {
  set_threads(o.lab.threads);
  if (!o.resume.empty() && o.out_flag->count() == 0) {  // the run goes on where it was
    const auto dir = std::filesystem::path(o.resume).parent_path();
    o.out = dir.empty() ? "." : dir.string();
  }
  auto tr = make_trainer(o, comm);
  const bool root = comm.rank() == 0;
  const bool quiet = o.quiet || !root;
  const auto& cfg = tr->config();
  try {  // what the run and its final write need, before any training (lab/train/preflight.hpp)
    lab::check_resume_step(tr->step(), cfg.train.steps);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e, {{"train.steps", "--steps"}});
  }
  lab::check_checkpoint_metadata(cfg.to_json(), tr->lineage());
  lab::EvalConfig ec;
  if (o.eval_max > 0) {
    // The evaluation after training: its work and memory are checked before training.
    ec = lab::lengths_up_to(cfg.task, o.eval_max);  // 1..eval_max; a text's L, 2L, 4L, ...
    ec.samples = o.eval_samples;
    try {
      lab::check_evaluation(cfg.model, cfg.task, ec);
    } catch (const lab::ConfigError& e) {
      throw usage_error(e, {{"eval.max_len", "--eval-max"}, {"eval.samples", "--eval-samples"}});
    }
  }
  const OutputFolder folder = prepare_train_output(o, comm);
  lab::TrainPlan plan;
  plan.checkpoint = (std::filesystem::path(o.out) / kCheckpointFile).string();
  plan.checkpoint_every = o.checkpoint_every;
  plan.until = o.stop_after != 0 ? std::min(o.stop_after, cfg.train.steps) : cfg.train.steps;
  if (!quiet) print_train_start(*tr, plan.until, comm.size());
  Progress progress("train " + cfg.model.pe, plan.until, quiet);
  const lab::TrainDone done = lab::train_until(
      *tr, plan, [&](std::size_t step, double loss) { progress.update(step, loss); });
  if (root) folder.finish();  // with --force: the other run's files not rewritten are removed
  if (!quiet) print_train_done(done, plan.checkpoint);
  if (o.eval_max > 0 && root) {
    Progress eval_progress =
        Progress::lengths("eval " + cfg.model.pe, ec.length_list().size(), quiet,
                          lab::evaluation_work_by_length(tr->model().config(), cfg.task, ec));
    const auto rows = lab::evaluate(tr->model(), cfg.task, ec, [&](std::size_t done, std::size_t) {
      eval_progress.update(done);
    });
    print_length_results(cfg, rows);
  }
}

void run_train(TrainOptions& o) {
  // The job first (MPI starts here under mpirun), so that rank 0 alone reports any failure.
  lab::Communicator& comm = join_world(o.peer_timeout);
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
  o->out_flag = cmd->add_option("--out", o->out,
                                "Directory for checkpoint.safetensors (with --resume: default "
                                "the resumed checkpoint's directory)")
                    ->capture_default_str();
  add_force_flag(cmd, o->force);
  cmd->add_option("--resume", o->resume,
                  "Continue from this checkpoint (bit for bit as if never interrupted; a file, "
                  "or a --out directory holding checkpoint.safetensors)")
      ->transform(checkpoint_path());
  cmd->add_option("--init-from", o->init_from,
                  "Start a new run (step 0, a fresh optimizer) from this checkpoint's weights (a "
                  "file, or a --out directory); task and training flags may differ, the model "
                  "comes from the checkpoint")
      ->transform(checkpoint_path());
  cmd->add_option("--table", o->table,
                  "With --init-from: the learned table to start from, e.g. `posemb resize "
                  "CHECKPOINT --to N --method copy -o T.safetensors` (default: the checkpoint's)")
      ->check(CLI::ExistingFile);
  add_rope_scaling_flags(cmd, o->rope,
                         "With --init-from: fine-tune with this scaling, recorded in the new "
                         "checkpoint (its settings and lineage), which `posemb eval` then uses "
                         "unless given another. Absent: the checkpoint's own.");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Write the checkpoint every N steps (0: only at the end)")
      ->check(whole_number(lab::limits::steps.max))
      ->capture_default_str();
  cmd->add_option("--stop-after", o->stop_after,
                  "Stop (with a checkpoint) after this step, keeping the --steps schedule; "
                  "--resume continues")
      ->check(within(lab::limits::steps));
  cmd->add_option("--eval-max", o->eval_max,
                  "After training, evaluate lengths 1..N with greedy decoding (0: no); text: "
                  "L, 2L, 4L, ... up to N, bits per byte")
      ->check(CLI::Range(std::size_t{0}, lab::limits::eval_len.max))
      ->capture_default_str();
  cmd->add_option("--eval-samples", o->eval_samples, "Instances per evaluated length")
      ->check(within(lab::limits::samples))
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "No progress or summary");
  cmd->add_option("--peer-timeout", o->peer_timeout,
                  "Under mpirun: seconds a rank waits for the job to start, and for the others, "
                  "before ending the job "
                  "(0: no limit)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->callback([o] { run_train(*o); });
}

}  // namespace posemb::cli
