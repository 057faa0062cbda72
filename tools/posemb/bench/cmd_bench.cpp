// `posemb bench [--json]`: runs the benchmark cases (bench_cases.hpp) and prints one line per
// case: name, shape, seconds, GB/s, fraction of the copy bandwidth measured in this process,
// speedup over the scalar reference and over PyTorch (bench/peers/torch_embed.py under
// /usr/bin/python3, when torch is available there).
#include <fmt/core.h>
#include <omp.h>
#include <stdio.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench_cases.hpp"
#include "cli.hpp"

namespace posemb::cli {
namespace {

struct BenchOptions {
  bool json = false;
  int repetitions = 20;
  std::string python = "/usr/bin/python3";
  std::string peer_script = POSEMB_SOURCE_DIR "/bench/peers/torch_embed.py";
  bool no_peer = false;
};

std::vector<BenchCase> all_bench_cases() {
  std::vector<BenchCase> cases = embedding_bench_cases();
  // Other features append their cases here.
  for (auto& c : lab_bench_cases()) cases.push_back(std::move(c));
  return cases;
}

// The peer's timings, or an empty map (with the reason) when it cannot run.
std::map<std::string, double> run_peer(const BenchOptions& o, std::string& status) {
  if (o.no_peer) {
    status = "not measured (--no-peer)";
    return {};
  }
  if (!std::filesystem::exists(o.python) || !std::filesystem::exists(o.peer_script)) {
    status = "not measured (" + o.python + " or " + o.peer_script + " not found)";
    return {};
  }
  const std::string cmd = o.python + " " + o.peer_script + " --threads " +
                          std::to_string(omp_get_max_threads()) + " --reps " +
                          std::to_string(o.repetitions) + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    status = "not measured (cannot start " + o.python + ")";
    return {};
  }
  std::string text;
  std::array<char, 4096> buf{};
  // The peer prints one small JSON document; more than 1 MiB is not it (a --python that
  // prints forever is stopped here).
  while (text.size() < (1u << 20) &&
         std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) {
    text += buf.data();
  }
  const int rc = pclose(pipe);
  std::map<std::string, double> out;
  try {
    if (rc != 0) throw std::runtime_error("exit status " + std::to_string(rc));
    const auto j = nlohmann::json::parse(text);
    for (const auto& [k, v] : j.at("cases").items()) out[k] = v.get<double>();
    status = "torch " + j.at("torch").get<std::string>() + ", " +
             std::to_string(j.at("threads").get<int>()) + " threads";
  } catch (const std::exception& e) {
    status = std::string("not measured (peer failed: ") + e.what() + ")";
    out.clear();
  }
  return out;
}

std::string ratio(std::optional<double> other, double ours) {
  return other ? fmt::format("{:.2f}x", *other / ours) : "not measured";
}

void run_bench(const BenchOptions& o) {
  if (o.repetitions < 1 || o.repetitions > 1000) {
    throw UsageError("--reps " + std::to_string(o.repetitions) + " is not in [1, 1000]");
  }
  BenchContext ctx;
  ctx.repetitions = o.repetitions;
  ctx.run_peers = !o.no_peer;
  ctx.python = o.python;
  std::string peer_status;
  ctx.peer_seconds = run_peer(o, peer_status);
  ctx.copy_bytes_per_second = measure_copy_bandwidth(o.repetitions);
  const int threads = omp_get_max_threads();

  nlohmann::json doc;
  doc["threads"] = threads;
  doc["copy_GBps"] = ctx.copy_bytes_per_second / 1e9;
  doc["peer"] = peer_status;
  doc["cases"] = nlohmann::json::array();
  if (!o.json) {
    fmt::print("posemb bench: {} threads; copy bandwidth {:.2f} GB/s (same process); peer: {}\n",
               threads, ctx.copy_bytes_per_second / 1e9, peer_status);
    fmt::print("{:<30} {:<27} {:>11} {:>8} {:>8} {:>11} {:>13}\n", "case", "shape", "seconds",
               "GB/s", "of copy", "vs scalar", "vs PyTorch");
  }
  for (const BenchCase& c : all_bench_cases()) {
    const BenchResult r = c.run(ctx);
    const double gbps = r.bytes / r.seconds / 1e9;
    const double frac = r.bytes / r.seconds / ctx.copy_bytes_per_second;
    nlohmann::json j{{"name", r.name},
                     {"shape", r.shape},
                     {"seconds", r.seconds},
                     {"GBps", gbps},
                     {"fraction_of_copy_bandwidth", frac}};
    j["speedup_vs_scalar"] = r.scalar_seconds ? nlohmann::json(*r.scalar_seconds / r.seconds)
                                              : nlohmann::json("not measured");
    j["speedup_vs_pytorch"] = r.peer_seconds ? nlohmann::json(*r.peer_seconds / r.seconds)
                                             : nlohmann::json("not measured");
    if (r.tokens) {
      j["tokens_per_second"] = *r.tokens / r.seconds;
      if (r.peer_seconds) j["peer_tokens_per_second"] = *r.tokens / *r.peer_seconds;
    }
    doc["cases"].push_back(j);
    if (!o.json) {
      fmt::print("{:<30} {:<27} {:>11.6f} {:>8.2f} {:>7.0f}% {:>11} {:>13}\n", r.name, r.shape,
                 r.seconds, gbps, 100.0 * frac, ratio(r.scalar_seconds, r.seconds),
                 ratio(r.peer_seconds, r.seconds));
      if (r.tokens) {
        fmt::print("{:<30} training throughput: {:.0f} tokens/s; PyTorch {}\n", "",
                   *r.tokens / r.seconds,
                   r.peer_seconds ? fmt::format("{:.0f} tokens/s", *r.tokens / *r.peer_seconds)
                                  : std::string("not measured"));
      }
      std::fflush(stdout);
    }
  }
  if (o.json) fmt::print("{}\n", doc.dump(2));
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Measure the embedding kernels (and other registered cases) against the same-process copy "
      "bandwidth, the scalar reference and PyTorch");
  sub->add_flag("--json", opts->json, "Print one JSON document instead of the table");
  sub->add_option("--reps", opts->repetitions, "Timed repetitions per case (median reported)")
      ->capture_default_str();
  sub->add_option("--python", opts->python, "Python with torch for the PyTorch peer")
      ->capture_default_str();
  sub->add_option("--peer-script", opts->peer_script, "The PyTorch peer script")
      ->capture_default_str();
  sub->add_flag("--no-peer", opts->no_peer, "Do not run the PyTorch peer");
  sub->callback([opts] { run_bench(*opts); });
}

}  // namespace posemb::cli
