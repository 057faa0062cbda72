// `posemb bench [--threads 1,2] [--reps N] [--json]`: the embedding kernels against llm.c's
// encoder loop (serial and OpenMP, -O3 -march=native), PyTorch (same thread count) and the
// copy bandwidth of the same run, with the harness's protocol (bench/harness/harness.hpp:
// an untimed run and a cache flush before every timed repetition, cases interleaved, medians);
// then the demo model's training step against PyTorch. Prints the SIMD target and the load
// average.
#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench_cases.hpp"
#include "cli.hpp"
#include "harness/embedding_cases.hpp"
#include "harness/harness.hpp"
#include "peers/llmc_encoder.hpp"
#include "posemb/simd.hpp"

namespace posemb::cli {
namespace {

struct BenchOptions {
  bool json = false;
  int repetitions = 15;
  std::string threads;  // "1,2"; empty: 1 and OpenMP's thread count
  std::string python = "/usr/bin/python3";
  std::string peer_dir;  // empty: the installed peers, else the source tree's
  bool no_peer = false;
  bool no_train_step = false;
  bool min = false;  // the table from the fastest repetition instead of the median
};

std::vector<int> parse_threads(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) {
    out.push_back(1);
    if (omp_get_max_threads() > 1) out.push_back(omp_get_max_threads());
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1 || n > 1024) {
      throw UsageError("--threads takes thread counts from 1 to 1024 separated by commas, got '" +
                       text + "'");
    }
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

// The peer scripts: installed beside the tool (<prefix>/share/posemb/peers), else the source
// tree this tool was built from.
std::string default_peer_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "posemb" / "peers";
    if (std::filesystem::exists(installed / "torch_embed.py")) return installed.string();
  }
  return POSEMB_SOURCE_DIR "/bench/peers";
}

std::string ratio(std::optional<double> other, double ours) {
  return other ? fmt::format("{:.2f}x", *other / ours) : std::string("-");
}

nlohmann::json opt_json(std::optional<double> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void run_bench(const BenchOptions& o) {
  if (o.repetitions < 1 || o.repetitions > 1000) {
    throw UsageError("--reps " + std::to_string(o.repetitions) + " is not in [1, 1000]");
  }
  const std::vector<int> threads = parse_threads(o.threads);
  const std::string peer_dir = o.peer_dir.empty() ? default_peer_dir() : o.peer_dir;
  const double load_start = bench::load_average();

  std::string llmc_why;
  const bool llmc = bench::llmc_peer_available(llmc_why);

  // PyTorch first (its own process, per thread count): seconds by (case, threads).
  std::map<std::pair<std::string, int>, double> torch;
  std::string torch_status = "not measured (--no-peer)";
  if (!o.no_peer) {
    for (int t : threads) {
      const bench::PeerResult r =
          bench::run_peer({o.python, peer_dir + "/torch_embed.py", "--threads", std::to_string(t),
                           "--reps", std::to_string(o.repetitions)});
      if (!r.json) {
        torch_status = r.status;
        break;
      }
      try {
        for (const auto& [k, v] : r.json->at("cases").items()) torch[{k, t}] = v.get<double>();
        torch_status = "torch " + r.json->at("torch").get<std::string>();
      } catch (const std::exception& e) {
        torch_status = std::string("not measured (") + e.what() + ")";
      }
    }
  }

  bench::Harness harness;
  const std::vector<bench::Case> cases = bench::embedding_cases(threads, llmc);
  std::vector<bench::Variant> variants;
  for (const auto& c : cases) variants.push_back(c.variant());
  const std::vector<bench::Harness::Stats> stats = harness.run_interleaved(variants, o.repetitions);
  std::vector<double> seconds;
  for (const auto& st : stats) seconds.push_back(o.min ? st.min : st.median);

  // Look-ups into this run's results.
  auto find = [&](const std::string& name, bench::Impl impl, int t) -> std::optional<double> {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].name() == name && cases[i].impl == impl && cases[i].threads == t) {
        return seconds[i];
      }
    }
    return std::nullopt;
  };
  std::map<int, double> copy_bw;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].impl == bench::Impl::copy) copy_bw[cases[i].threads] = cases[i].bytes / seconds[i];
  }

  StandaloneResult train;
  if (!o.no_train_step) {
    BenchContext ctx;
    ctx.harness = &harness;
    ctx.repetitions = o.repetitions;
    ctx.threads = threads.back();
    ctx.run_peers = !o.no_peer;
    ctx.python = o.python;
    ctx.peer_dir = peer_dir;
    train = train_step_demo(ctx);
  }
  const double load_end = bench::load_average();

  nlohmann::json doc;
  doc["simd_target"] = simd_target();
  doc["simd_targets"] = simd_targets();
  doc["threads"] = threads;
  doc["repetitions"] = o.repetitions;
  doc["statistic"] = o.min ? "min" : "median";
  doc["flush_bytes"] = harness.flush_bytes();
  doc["load_average"] = {{"start", load_start}, {"end", load_end}};
  doc["llmc_peer"] =
      llmc ? "llm.c encoder loop, -O3 -march=native" : "not measured (" + llmc_why + ")";
  doc["pytorch_peer"] = torch_status;
  for (const auto& [t, bw] : copy_bw) doc["copy_GBps"][std::to_string(t)] = bw / 1e9;
  doc["cases"] = nlohmann::json::array();

  if (!o.json) {
    fmt::print(
        "posemb bench: SIMD target {} (this CPU: {}); threads {}; {} of {} repetitions, each "
        "after an untimed run and a cache flush ({} MiB read)\n",
        simd_target(), fmt::format("{}", fmt::join(simd_targets(), ", ")),
        fmt::format("{}", fmt::join(threads, ",")), o.min ? "fastest" : "median", o.repetitions,
        harness.flush_bytes() >> 20);
    fmt::print("load average {:.2f} at the start, {:.2f} at the end\n", load_start, load_end);
    for (const auto& [t, bw] : copy_bw) {
      fmt::print("copy bandwidth, {} thread{}: {:.2f} GB/s\n", t, t == 1 ? "" : "s", bw / 1e9);
    }
    fmt::print("peers: llm.c encoder loop (-O3 -march=native): {}; PyTorch: {}\n",
               llmc ? "measured" : "not measured (" + llmc_why + ")", torch_status);
    fmt::print("{:<30} {:<10} {:>3} {:>9} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7}\n", "case",
               "impl", "thr", "ms", "GB/s", "of copy", "vs llm.c", "vs omp", "vs torch", "vs f32",
               "vs 1t");
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const bench::Case& c = cases[i];
    if (c.impl == bench::Impl::copy) continue;
    const double s = seconds[i];
    const double bw = c.bytes / s;
    const double of_copy = copy_bw.count(c.threads) != 0 ? bw / copy_bw[c.threads] : 0;
    std::optional<double> vs_llmc, vs_omp, vs_torch, vs_f32, vs_1t;
    if (c.impl == bench::Impl::posemb) {
      const bool half = c.op.ends_with("_bf16") || c.op.ends_with("_f16");
      const std::string f32_name = "embed_forward/" + c.shape;
      const std::string base = half ? f32_name : c.name();
      vs_llmc = find(base, bench::Impl::llmc, 1);
      vs_omp = find(base, bench::Impl::llmc_omp, c.threads);
      if (!half && torch.count({c.name(), c.threads}) != 0) vs_torch = torch[{c.name(), c.threads}];
      if (half) vs_f32 = find(f32_name, bench::Impl::posemb, c.threads);
      if (c.threads != 1) vs_1t = find(c.name(), bench::Impl::posemb, 1);
    }
    if (c.impl == bench::Impl::llmc_omp && c.threads != 1) {
      vs_1t = find(c.name(), bench::Impl::llmc_omp, 1);
    }
    nlohmann::json j{{"name", c.name()},
                     {"impl", bench::impl_name(c.impl)},
                     {"shape", c.shape_text},
                     {"threads", c.threads},
                     {"seconds", s},
                     {"median_seconds", stats[i].median},
                     {"min_seconds", stats[i].min},
                     {"bytes", c.bytes},
                     {"GBps", bw / 1e9},
                     {"fraction_of_copy_bandwidth", of_copy},
                     {"llmc_serial_seconds", opt_json(vs_llmc)},
                     {"llmc_omp_seconds", opt_json(vs_omp)},
                     {"pytorch_seconds", opt_json(vs_torch)},
                     {"f32_seconds", opt_json(vs_f32)},
                     {"one_thread_seconds", opt_json(vs_1t)}};
    doc["cases"].push_back(j);
    if (!o.json) {
      fmt::print("{:<30} {:<10} {:>3} {:>9.3f} {:>7.2f} {:>6.0f}% {:>8} {:>9} {:>8} {:>8} {:>7}\n",
                 c.name(), bench::impl_name(c.impl), c.threads, s * 1e3, bw / 1e9, 100 * of_copy,
                 ratio(vs_llmc, s), ratio(vs_omp, s), ratio(vs_torch, s), ratio(vs_f32, s),
                 ratio(vs_1t, s));
    }
  }
  if (!o.no_train_step) {
    doc["train_step"] = {{"name", train.name},
                         {"shape", train.shape},
                         {"threads", threads.back()},
                         {"matrix_products", train.blas},
                         {"seconds", train.seconds},
                         {"tokens_per_second", train.tokens / train.seconds},
                         {"pytorch_seconds", opt_json(train.peer_seconds)},
                         {"pytorch_status", train.peer_status}};
    if (!train.peer_coretype.empty()) {
      doc["train_step"]["pytorch_openblas_coretype"] = train.peer_coretype;
      doc["train_step"]["pytorch_coretype_seconds"] = opt_json(train.peer_coretype_seconds);
      doc["train_step"]["pytorch_coretype_status"] = train.peer_coretype_status;
    }
    if (!o.json) {
      auto peer = [&](const std::optional<double>& s, const std::string& status) {
        return s ? fmt::format("{:.0f} tokens/s ({})", train.tokens / *s, ratio(s, train.seconds))
                 : status;
      };
      fmt::print("{} ({}), {} threads, {}: {:.3f} ms, {:.0f} tokens/s; PyTorch {}\n", train.name,
                 train.shape, threads.back(), train.blas, train.seconds * 1e3,
                 train.tokens / train.seconds, peer(train.peer_seconds, train.peer_status));
      if (!train.peer_coretype.empty()) {
        fmt::print(
            "  (PyTorch with OPENBLAS_CORETYPE={}, the OpenBLAS kernels for this CPU's "
            "instructions: {})\n",
            train.peer_coretype, peer(train.peer_coretype_seconds, train.peer_coretype_status));
      }
    }
  }
  if (o.json) fmt::print("{}\n", doc.dump(2));
  std::fflush(stdout);
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Measure the embedding kernels against llm.c's encoder loop, PyTorch and the copy "
      "bandwidth of the same run (an untimed run and a cache flush before every repetition, "
      "cases interleaved), "
      "and the demo model's training step against PyTorch");
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
  sub->add_flag("--no-train-step", opts->no_train_step, "Skip the train_step/demo case");
  sub->add_flag("--min", opts->min,
                "Report the fastest repetition of each case instead of the median (on a busy "
                "machine)");
  sub->callback([opts] { run_bench(*opts); });
}

}  // namespace posemb::cli
