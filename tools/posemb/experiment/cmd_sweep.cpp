// `posemb sweep`: a grid of runs (encodings x seeds x tasks x lengths x ...), each trained and
// evaluated; under `mpirun -np N` the runs are shared among the ranks (lab::run_grid) and rank 0
// writes results.csv, results.json and the charts into --out.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab/encoding.hpp"
#include "lab/preflight.hpp"
#include "lab/sweep.hpp"
#include "lab_options.hpp"
#include "mpi_job.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "sweep_report.hpp"

namespace posemb::cli {
namespace {

// The axes of the grid (each a list) and the settings that are one value for every run.
struct SweepOptions {
  LabFlags lab;  // the single-valued lab flags
  std::vector<std::string> pe{"learned"}, task{"copy"};
  std::vector<std::size_t> alphabet{8}, train_len{16}, d_model{64}, layers{2}, heads{4}, batch{32},
      steps{1000};
  std::vector<float> lr{1e-3f};
  std::string seeds = "1";
  std::size_t eval_max = 0;  // 0: 3 * train_len of each run
  std::size_t samples = 100;
  std::uint64_t eval_seed = 1234;
  std::string out = "sweep-out";
  std::size_t parallel_runs = 1;
  double peer_timeout = 0;
  bool quiet = false;
};

// "1:3,7" -> 1, 2, 3, 7.
std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  const std::string bad =
      "--seeds '" + text + "' is not a comma-separated list of seeds and ranges A:B (e.g. 1:3,7)";
  auto num = [&](const std::string& s) -> std::uint64_t {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(bad);
    }
    return std::stoull(s);
  };
  std::vector<std::uint64_t> seeds;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      seeds.push_back(num(item));
    } else {
      const std::uint64_t a = num(item.substr(0, colon)), b = num(item.substr(colon + 1));
      if (b < a || b - a >= 100000) throw UsageError(bad + ": a range A:B needs A <= B < A+100000");
      for (std::uint64_t s = a; s <= b; ++s) seeds.push_back(s);
    }
    at = comma + 1;
  }
  return seeds;
}

// The grid, in a fixed order: task, alphabet, train_len, d_model, layers, heads, batch, steps,
// lr, pe, then seed innermost.
std::vector<SweepPoint> make_grid(const SweepOptions& o) {
  const auto seeds = parse_seeds(o.seeds);
  const std::size_t total = o.task.size() * o.alphabet.size() * o.train_len.size() *
                            o.d_model.size() * o.layers.size() * o.heads.size() * o.batch.size() *
                            o.steps.size() * o.lr.size() * o.pe.size() * seeds.size();
  if (total > 100000) {
    throw UsageError("the grid has " + std::to_string(total) + " runs; at most 100000");
  }
  std::vector<SweepPoint> grid;
  for (const auto& task : o.task)
    for (const auto alphabet : o.alphabet)
      for (const auto train_len : o.train_len)
        for (const auto d_model : o.d_model)
          for (const auto layers : o.layers)
            for (const auto heads : o.heads)
              for (const auto batch : o.batch)
                for (const auto steps : o.steps)
                  for (const auto lr : o.lr)
                    for (const auto& pe : o.pe)
                      for (const auto seed : seeds) {
                        LabFlags f = o.lab;
                        f.task = task;
                        f.pe = pe;
                        f.run.task.alphabet = alphabet;
                        f.run.task.train_len = train_len;
                        f.run.model.d_model = d_model;
                        f.run.model.n_layers = layers;
                        f.run.model.n_heads = heads;
                        f.run.train.batch = batch;
                        f.run.train.steps = steps;
                        f.run.train.lr = lr;
                        f.run.train.seed = seed;
                        // --max-seq-len sizes the tables of the encodings that have one.
                        if (!lab::find_encoding(pe).has_table) f.max_seq_len = 0;
                        SweepPoint p;
                        p.task = task;
                        p.seed = seed;
                        p.run.run = finish_lab_flags(f);  // UsageError naming the flags
                        p.run.eval.min_len = 1;
                        p.run.eval.max_len = o.eval_max != 0 ? o.eval_max : 3 * train_len;
                        p.run.eval.samples = o.samples;
                        p.run.eval.seed = o.eval_seed;
                        // The name and group: the axes with more than one value.
                        std::string group;
                        auto axis = [&](const char* name, std::size_t values, const auto& v) {
                          if (values > 1) {
                            group += (group.empty() ? "" : " ") + std::string(name) + "=" +
                                     fmt::format("{}", v);
                          }
                        };
                        axis("task", o.task.size(), task);
                        axis("alphabet", o.alphabet.size(), alphabet);
                        axis("train_len", o.train_len.size(), train_len);
                        axis("d_model", o.d_model.size(), d_model);
                        axis("layers", o.layers.size(), layers);
                        axis("heads", o.heads.size(), heads);
                        axis("batch", o.batch.size(), batch);
                        axis("steps", o.steps.size(), steps);
                        axis("lr", o.lr.size(), lr);
                        p.group = group;
                        p.run.name = (group.empty() ? "" : group + " ") + "pe=" + pe +
                                     " seed=" + std::to_string(seed);
                        grid.push_back(std::move(p));
                      }
  return grid;
}

void sweep(const SweepOptions& o, lab::Communicator& comm) {
  set_threads(o.lab.threads);
  const auto grid = make_grid(o);
  const bool root = comm.rank() == 0;
  comm.all_or_none("sweep: preparing the output folder", [&] {
    if (root) prepare_output_dir(o.out, {"results.csv", "results.json"}, "sweep");
  });
  std::vector<lab::GridRun> runs;
  for (const auto& p : grid) runs.push_back(p.run);
  if (root && !o.quiet) {
    fmt::print("posemb sweep: {} runs on {} rank{}, {} at a time per rank\n", runs.size(),
               comm.size(), comm.size() > 1 ? "s" : "", o.parallel_runs);
  }
  lab::GridOptions go;
  go.parallel_runs = o.parallel_runs;
  if (o.parallel_runs > 1) {  // the threads' memory, before any of them starts (lab/preflight.hpp)
    lab::check_thread_budget(std::min(o.parallel_runs, runs.size()), "sweep --parallel-runs");
  }
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
  std::vector<lab::GridOutcome> outcomes;
  try {
    outcomes = lab::run_grid(runs, go, comm);
  } catch (const lab::ConfigError& e) {
    throw usage_error(e);
  }
  comm.all_or_none("sweep: writing the results", [&] {
    if (!root) return;
    const std::filesystem::path dir(o.out);
    write_file_atomically((dir / "results.csv").string(), "posemb sweep",
                          sweep_csv(grid, outcomes));
    write_file_atomically((dir / "results.json").string(), "posemb sweep",
                          sweep_json(grid, outcomes));
    std::vector<std::string> files{"results.csv", "results.json"};
    for (const auto& [file, svg] : sweep_charts(grid, outcomes)) {
      write_file_atomically((dir / file).string(), "posemb sweep", svg);
      files.push_back(file);
    }
    if (!o.quiet) {
      print_sweep_summary(grid, outcomes);
      fmt::print("\nwrote {}/", quote_untrusted(o.out));
      for (std::size_t i = 0; i < files.size(); ++i) fmt::print("{}{}", i ? ", " : "", files[i]);
      fmt::print("\n");
    }
  });
  std::size_t failed = 0;
  std::string first;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].error.empty()) continue;
    if (failed++ == 0) first = runs[i].name + ": " + outcomes[i].error;
  }
  if (failed != 0) {
    // Every rank holds every outcome: every rank fails here, rank 0 reports.
    throw lab::JobFailure("sweep: " + std::to_string(failed) + " of " +
                          std::to_string(outcomes.size()) +
                          " runs failed (their rows say "
                          "'failed'); the first: " +
                          first);
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
      "Train and evaluate a grid of runs (lists of encodings, seeds, tasks, lengths, model "
      "sizes, ...); under mpirun the runs are shared among the ranks. Writes results.csv, "
      "results.json and a length-generalization chart per group of runs into --out.");
  add_lab_flags(cmd, o->lab);
  // The axes of the grid replace their single-valued flags.
  for (const char* name : {"--pe", "--task", "--alphabet", "--train-len", "--d-model", "--layers",
                           "--heads", "--batch", "--steps", "--lr", "--seed"}) {
    cmd->remove_option(cmd->get_option(name));
  }
  namespace lim = lab::limits;
  std::vector<std::string> names;
  for (const auto* e : lab::encodings()) names.emplace_back(e->name);
  add_list(cmd, "--pe", o->pe, "Positional encodings: " + lab::encoding_names())
      ->check(CLI::IsMember(names));
  add_list(cmd, "--task", o->task, "Tasks: copy, reverse")
      ->check(CLI::IsMember({"copy", "reverse"}));
  add_list(cmd, "--alphabet", o->alphabet, "Symbols in the task's alphabet")
      ->check(within(lim::alphabet));
  add_list(cmd, "--train-len", o->train_len, "Longest training instances n")
      ->check(within(lim::train_len));
  add_list(cmd, "--d-model", o->d_model, "Model widths")->check(within(lim::d_model));
  add_list(cmd, "--layers", o->layers, "Transformer blocks")->check(within(lim::n_layers));
  add_list(cmd, "--heads", o->heads, "Attention heads")->check(within(lim::n_heads));
  add_list(cmd, "--batch", o->batch, "Sequences per step")->check(within(lim::batch));
  add_list(cmd, "--steps", o->steps, "Optimizer steps")->check(within(lim::steps));
  add_list(cmd, "--lr", o->lr, "Peak AdamW learning rates")->check(within(lim::lr));
  cmd->add_option("--seeds", o->seeds,
                  "Seeds of initialization and data: a comma-separated list of seeds and ranges "
                  "A:B (e.g. 1:3,7)")
      ->capture_default_str();
  cmd->add_option("--eval-max", o->eval_max,
                  "Evaluate lengths 1..N after training (default: 3 x each run's --train-len)")
      ->check(within(lim::eval_len));
  cmd->add_option("--samples", o->samples, "Instances per evaluated length")
      ->check(within(lim::samples))
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
                  "Under mpirun: seconds a rank waits for the others to finish their runs "
                  "before ending the job (0: no limit)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "No progress or summary");
  cmd->callback([o] {
    lab::Communicator& comm = lab::world();
    set_peer_timeout(comm, o->peer_timeout);
    run_job(comm, [&] { sweep(*o, comm); });
  });
}

}  // namespace posemb::cli
