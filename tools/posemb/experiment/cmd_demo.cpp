// `posemb demo`: the main job. Trains the lab model (a small GPT) on the default task with each
// of learned, learned-randomized, sinusoidal and no positional encoding, measures greedy
// accuracy at every length up to well past the training length, prints the table and writes
// results.csv, results.json, length_generalization.svg and learned_table_similarity.png.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "lab/encoding.hpp"
#include "lab/evaluate.hpp"
#include "lab/results.hpp"
#include "lab/trainer.hpp"
#include "lab_options.hpp"
#include "plots.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "progress.hpp"
#include "results_table.hpp"

namespace posemb::cli {
namespace {

struct DemoOptions {
  std::string out = "demo-out";
  bool quick = false;
  int threads = 0;
  std::uint64_t seed = 1;
  std::size_t steps = 0;     // 0: the preset's
  std::size_t eval_max = 0;  // 0: the preset's
  std::size_t samples = 0;   // 0: the preset's
};

// The demo's settings: a 2-layer, 4-head, d_model 64 GPT on copy over 8 symbols, n <= 12,
// 1600 AdamW steps of 32 sequences (lr 3e-3, 100 warmup steps, cosine decay). --quick: n <= 8,
// 150 steps, fewer evaluation samples (a smoke run: its accuracies are not the demo's).
lab::RunConfig preset(const DemoOptions& o, const std::string& pe) {
  lab::RunConfig r;
  r.task.kind = lab::TaskKind::copy;
  r.task.alphabet = 8;
  r.task.train_len = o.quick ? 8 : 12;
  r.model.pe = pe;
  r.model.vocab_size = r.task.vocab_size();
  r.model.d_model = 64;
  r.model.n_layers = 2;
  r.model.n_heads = 4;
  r.model.d_ff = 256;
  const auto& spec = lab::find_encoding(pe);
  r.model.max_seq_len = spec.default_table_rows(r.task.train_len);
  r.model.embed_init_std = spec.default_embed_init_std;
  r.train.batch = 32;
  r.train.steps = o.steps != 0 ? o.steps : (o.quick ? 150 : 1600);
  r.train.lr = 3e-3f;
  r.train.warmup = std::min<std::size_t>(100, r.train.steps / 4);
  r.train.seed = o.seed;
  return r;
}

void run_demo(const DemoOptions& o) {
  set_threads(o.threads);
  const std::vector<std::string> kinds = {"learned", "learned-randomized", "sinusoidal", "none"};
  const auto first = preset(o, kinds[0]);
  const std::size_t train_len = first.task.train_len;
  lab::EvalConfig ec;
  ec.min_len = 1;
  ec.max_len = o.eval_max != 0 ? o.eval_max : 3 * train_len;
  ec.samples = o.samples != 0 ? o.samples : (o.quick ? 20 : 100);
  ec.seed = o.seed + 1000;
  // Before four trainings: the evaluation's work and memory, the model's, the outputs.
  for (const auto& pe : kinds) {
    const auto cfg = preset(o, pe);
    try {
      lab::check_evaluation(cfg.model, ec);
    } catch (const lab::ConfigError& e) {
      throw usage_error(e, {{"eval.max_len", "--eval-max"}, {"eval.samples", "--samples"}});
    }
    check_allocation("demo (" + pe + ")", lab::Trainer::memory_bytes(cfg));
  }
  prepare_output_dir(
      o.out,
      {"results.csv", "results.json", "length_generalization.svg", "learned_table_similarity.png"},
      "demo");
  fmt::print(
      "posemb demo{}: a {}-layer, {}-head, d_model {} GPT trained by hand on `copy` ({} symbols, "
      "n <= {}), {} steps x {} sequences per encoding; greedy accuracy for n = 1..{} "
      "({} instances each)\n",
      o.quick ? " --quick" : "", first.model.n_layers, first.model.n_heads, first.model.d_model,
      first.task.alphabet, train_len, first.train.steps, first.train.batch, ec.max_len, ec.samples);
  const auto t_all = std::chrono::steady_clock::now();
  std::vector<lab::RunResults> runs;
  std::vector<NamedResults> table;
  for (const auto& pe : kinds) {
    const auto cfg = preset(o, pe);
    lab::Trainer tr(cfg);
    Progress progress("demo " + pe, cfg.train.steps);
    const auto t0 = std::chrono::steady_clock::now();
    while (tr.step() < cfg.train.steps) {
      const double loss = tr.train_step();
      progress.update(tr.step(), loss);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lab::RunResults rr;
    rr.pe = pe;
    if (tr.model().encoding_spec().has_table) rr.max_seq_len = cfg.model.max_seq_len;
    rr.train_seconds = secs;
    rr.results = lab::evaluate(tr.model(), cfg.task, ec);
    if (pe == "learned") {
      const auto table = tr.model().encoding().learned_table()->table();
      write_file_atomically(
          (std::filesystem::path(o.out) / "learned_table_similarity.png").string(), "posemb demo",
          table_similarity_png(
              table, "learned table after training (" + std::to_string(table.rows()) + " rows x " +
                         std::to_string(table.cols()) + "): cosine similarity of positions"));
    }
    table.emplace_back(rr.pe, rr.results);
    runs.push_back(std::move(rr));
  }
  print_results_table(table, train_len);
  fmt::print("\nin-distribution exact match (mean over n = 1..{}), training time:\n", train_len);
  for (const auto& r : runs) {
    double s = 0;
    std::size_t k = 0;
    for (const auto& l : r.results) {
      if (l.length <= train_len && !l.beyond_table) {
        s += l.exact_match;
        ++k;
      }
    }
    fmt::print("  {:<20} {:.3f}   {:.1f} s\n", r.pe, k ? s / double(k) : 0.0, r.train_seconds);
  }
  const std::filesystem::path dir(o.out);
  write_file_atomically((dir / "results.csv").string(), "posemb demo", lab::results_csv(runs));
  write_file_atomically((dir / "results.json").string(), "posemb demo",
                        lab::results_json("copy", train_len, runs));
  write_file_atomically(
      (dir / "length_generalization.svg").string(), "posemb demo",
      length_generalization_svg(
          "copy, trained on n <= " + std::to_string(train_len) + ": exact match by length",
          train_len, runs));
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  fmt::print(
      "\nwrote {}/results.csv, results.json, length_generalization.svg, "
      "learned_table_similarity.png ({:.1f} s in all)\n",
      quote_untrusted(o.out), total);
}

}  // namespace

void register_demo_command(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Train a small GPT with learned, learned-randomized, sinusoidal and no positional "
      "encoding on the copy task, and measure accuracy at every length up to 3x the training "
      "length; writes results and plots into --out.");
  cmd->add_option("--out", o->out, "Output directory")->capture_default_str();
  cmd->add_flag("--quick", o->quick, "A smoke run under a minute (n <= 8, 150 steps)");
  cmd->add_option("--threads", o->threads, "OpenMP threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", o->seed, "Seed of initialization, data and evaluation")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Training steps per encoding (default 1600; quick 150)")
      ->check(within(lab::limits::steps));
  cmd->add_option("--eval-max", o->eval_max, "Longest evaluated n (default 3x training length)")
      ->check(within(lab::limits::eval_len));
  cmd->add_option("--samples", o->samples, "Instances per evaluated length (default 100; quick 20)")
      ->check(within(lab::limits::samples));
  cmd->callback([o] { run_demo(*o); });
}

}  // namespace posemb::cli
