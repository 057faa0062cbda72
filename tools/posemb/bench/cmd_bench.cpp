// `posemb bench [--threads 1,2] [--reps N] [--all-targets] [--json]`: the embedding kernels (on
// the chosen SIMD target, or each target side by side) against llm.c's
// encoder loop (serial and OpenMP, -O3 -march=native), PyTorch (same thread count) and the
// copy bandwidth of the same run, with the harness's protocol (bench/harness/harness.hpp:
// an untimed run and a cache flush before every timed repetition, cases interleaved, medians);
// then the demo model's training step against PyTorch. Prints the CPU (model, caches), the SIMD
// target and the load average.
// The measurements are in bench_run.cpp, the table in bench_table.cpp.
#include <fmt/core.h>

#include <cstdio>
#include <memory>

#include "bench_run.hpp"
#include "cli.hpp"

namespace posemb::cli {

void register_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Measure the embedding kernels against llm.c's encoder loop, PyTorch and the copy "
      "bandwidth of the same run (an untimed run and a cache flush before every repetition, "
      "cases interleaved), "
      "and the demo models' training steps against PyTorch (train_step/demo, the symbol demo's; "
      "train_step/text, the text demo's)");
  sub->add_flag("--json", opts->json, "Print one JSON document instead of the table");
  sub->add_option("--reps", opts->repetitions, "Timed repetitions per case (median reported)")
      ->capture_default_str();
  sub->add_option("--threads", opts->threads,
                  "Thread counts to measure, comma-separated (default: 1 and OpenMP's count)");
  sub->add_option("--python", opts->python, "Python with torch for the PyTorch peers")
      ->capture_default_str();
  sub->add_option("--peer-dir", opts->peer_dir,
                  "Directory of the peer scripts (default: the installed ones, else the source "
                  "tree's bench/peers)");
  sub->add_flag("--no-peer", opts->no_peer, "Do not run the PyTorch peers");
  sub->add_flag("--no-train-step", opts->no_train_step,
                "Skip the training-step cases (train_step/demo, train_step/text)");
  sub->add_flag("--lab-kernels", opts->lab_kernels,
                "Also measure every kernel the lab runs in parallel (<kernel>/lab; the contention "
                "check: --threads 1,2 with another process busy on one core, see docs/layer.md)");
  sub->add_option(
      "--filter", opts->filter,
      "Measure only the cases whose name contains this text (rope, gpt2, "
      "add_positions_backward/gpt2, train_step/text, ...), with their peers, the copy and, with "
      "a GPT-2 case, read_token_rows/gpt2");
  sub->add_flag("--all-targets", opts->all_targets,
                "Measure every posemb case and the training step on each SIMD target this CPU "
                "runs (posemb::simd_targets()), side by side against the same peers");
  sub->add_flag("--min", opts->min,
                "Report the fastest repetition of each case instead of the median (on a busy "
                "machine)");
  sub->callback([opts] {
    const nlohmann::json doc = measure_bench(*opts);
    if (opts->json) {
      fmt::print("{}\n", doc.dump(2));
    } else {
      print_bench_table(doc);
    }
    std::fflush(stdout);
  });
}

}  // namespace posemb::cli
