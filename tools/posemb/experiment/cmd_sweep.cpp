// `posemb sweep`: a grid of runs, each trained and evaluated (lab::run_grid, the runs shared among
// the ranks under mpirun); rank 0 writes results.csv, results.json and the charts into --out.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/experiment/grid.hpp"
#include "lab/experiment/sweep_files.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/preflight.hpp"
#include "lab_options.hpp"
#include "mpi_job.hpp"
#include "plots.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "results_table.hpp"
#include "sweep_flags.hpp"

namespace posemb::cli {
namespace {

void sweep(const SweepOptions& o, lab::Communicator& comm) {
  set_threads(o.lab.threads);
  const auto grid = make_grid(o);
  const bool root = comm.rank() == 0;
  const std::vector<lab::GridRun> runs = checked_runs(grid);
  const OutputRules rules = other_run_rules(o.force, ", or give another --out");
  OutputFolder folder;
  comm.all_or_none("sweep: preparing the output folder", [&] {
    if (root) folder = prepare_output_dir(o.out, lab::sweep_file_names(), "sweep", rules);
  });
  if (root && !o.quiet) {
    fmt::print("posemb sweep: {} runs on {} rank{}, {} at a time per rank\n", runs.size(),
               comm.size(), comm.size() > 1 ? "s" : "", o.parallel_runs);
  }
  lab::GridOptions go;  // the threads' memory checked before any starts (lab/train/preflight.hpp)
  go.parallel_runs = o.parallel_runs;
  lab::check_thread_budget(std::min(go.parallel_runs, runs.size()), "sweep --parallel-runs");
  std::mutex print;
  if (!o.quiet) {
    go.progress = [&](const lab::GridProgress& p) {
      if (!p.finished) return;
      const std::lock_guard lock(print);
      fmt::print(stderr, "sweep: run {} of {} ({}) finished on rank {}: loss {:.5f}\n", p.index + 1,
                 runs.size(), p.run->name, comm.rank(), p.loss);
      std::fflush(stderr);
    };
  }
  std::vector<lab::GridOutcome> run_outcomes;
  try {
    run_outcomes = lab::run_grid(runs, go, comm);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
  // A rope run evaluated with --rope-scaling is reported once per scaling.
  const auto [points, outcomes] = lab::expand_rope_scalings(grid, run_outcomes);
  comm.all_or_none("sweep: writing the results", [&] {
    if (!root) return;
    auto files = sweep_charts(points, outcomes);
    const auto data = lab::sweep_data_files(points, outcomes);
    files.insert(files.begin(), data.begin(), data.end());
    std::string names;
    for (const auto& [file, bytes] : files) {
      write_file_atomically((std::filesystem::path(o.out) / file).string(), "posemb sweep", bytes);
      names += (names.empty() ? "" : ", ") + file;
    }
    folder.finish();  // with --force: the other run's files not rewritten are removed
    if (!o.quiet) {
      print_sweep_summary(points, outcomes);
      fmt::print("\nwrote {}/{}\n", quote_untrusted(o.out), names);
    }
  });
  // Every rank holds every outcome: every rank fails here, rank 0 reports.
  if (const std::string failed = lab::sweep_failures(grid, run_outcomes); !failed.empty()) {
    throw lab::JobFailure("sweep: " + failed);
  }
}

template <class T>
CLI::Option* add_list(CLI::App* cmd, const std::string& name, std::vector<T>& values,
                      const std::string& help) {
  return cmd->add_option(name, values, help + " (a comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
}

}  // namespace

void register_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Train and evaluate a grid of runs (lists of encodings, seeds, tasks, lengths, model sizes, "
      "...); under mpirun the runs are shared among the ranks. Writes results.csv, results.json "
      "and a length-generalization chart per group of runs into --out.");
  add_lab_flags(cmd, o->lab, o.get());  // the grid's axes as lists
  cmd->add_option("--seeds", o->seeds,
                  "Seeds of initialization and data: a comma-separated list of seeds and ranges "
                  "A:B (e.g. 1:3,7)")
      ->capture_default_str();
  add_list(cmd, "--rope-scaling", o->rope_scaling,
           "RoPE scalings each rope run is also evaluated with after training, zero-shot, "
           "each reported as a run of its own (rope_scaling column; one chart line each): " +
               rope_scaling_method_names() +
               " (the library's methods, posemb/rope_scaling.hpp; L0 is the tokens of the run's "
               "longest training row). Trains no more runs")
      ->check(CLI::IsMember(lab::rope_scaling_methods()))
      ->default_str("");  // empty: no scaled evaluation
  add_list(cmd, "--rope-factor", o->rope_factor, "Factors s of each --rope-scaling method but none")
      ->check(within(lab::limits::rope_factor))
      ->default_str("");
  cmd->add_option(
         "--eval-max", o->eval_max,
         "Evaluate lengths 1..N after training (default: 3 x each run's --train-len); text: "
         "L, 2L, 4L, ... up to N (default 4L), bits per byte")
      ->check(within(lab::limits::eval_len));
  cmd->add_option("--samples", o->samples, "Instances per evaluated length")
      ->check(within(lab::limits::samples))
      ->capture_default_str();
  cmd->add_option("--eval-seed", o->eval_seed, "Seed of the evaluation instances")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Output directory (written by rank 0)")->capture_default_str();
  cmd->add_option("--parallel-runs", o->parallel_runs,
                  "Runs trained at a time by each process, each on one thread (1: one after "
                  "another, each on --threads threads)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))
      ->capture_default_str();
  cmd->add_option("--peer-timeout", o->peer_timeout,
                  "Under mpirun: seconds a rank waits for the job to start and for the others "
                  "to finish their runs "
                  "before ending the job (0: no limit)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  add_force_flag(cmd, o->force);
  cmd->add_flag("--quiet", o->quiet, "No progress or summary");
  cmd->callback([o] {
    lab::Communicator& comm = join_world(o->peer_timeout);
    run_job(comm, [&] { sweep(*o, comm); });
  });
}

}  // namespace posemb::cli
