// The table of `posemb bench` (bench_run.hpp), printed from the JSON document it measured.
#include <fmt/core.h>
#include <fmt/format.h>

#include <optional>
#include <string>

#include "bench_run.hpp"

namespace posemb::cli {
namespace {

std::optional<double> opt(const nlohmann::json& v) {
  return v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
}

std::string ratio(std::optional<double> other, double ours) {
  return other ? fmt::format("{:.2f}x", *other / ours) : std::string("-");
}

void print_header(const nlohmann::json& doc) {
  const auto threads = doc["threads"].get<std::vector<int>>();
  const auto targets = doc["simd_targets"].get<std::vector<std::string>>();
  const bool min = doc["statistic"] == "min";
  fmt::print(
      "posemb bench: SIMD target {} (this CPU: {}); threads {}; {} of {} repetitions, each "
      "after an untimed run and a cache flush ({} MiB read)\n",
      doc["all_targets"].get<bool>() ? std::string("each of them (--all-targets)")
                                     : doc["simd_target"].get<std::string>(),
      fmt::format("{}", fmt::join(targets, ", ")), fmt::format("{}", fmt::join(threads, ",")),
      min ? "fastest" : "median", doc["repetitions"].get<int>(),
      doc["flush_bytes"].get<std::size_t>() >> 20);
  fmt::print("CPU: {}\n", doc["cpu"]["description"].get<std::string>());
  fmt::print("load average {:.2f} at the start, {:.2f} at the end\n",
             doc["load_average"]["start"].get<double>(), doc["load_average"]["end"].get<double>());
  if (doc.contains("copy_GBps")) {
    for (const auto& [t, gbps] : doc["copy_GBps"].items()) {
      fmt::print("copy bandwidth, {} thread{}: {:.2f} GB/s\n", t, t == "1" ? "" : "s",
                 gbps.get<double>());
    }
  }
  const std::string llmc = doc["llmc_peer"];
  fmt::print(
      "peers: llm.c encoder loop, for rope_* the plain rotate-half loop over cached cos and sin "
      "and "
      "for relative_bias_* the plain gather and scatter over a precomputed bucket matrix ('loop'), "
      "all -O3 -march=native: {}; PyTorch: {}\n",
      llmc.starts_with("not measured") ? llmc : std::string("measured"),
      doc["pytorch_peer"].get<std::string>());
}

// "posemb" (or, with --all-targets, "posemb avx2"), "llm.c", ...
std::string impl_column(const nlohmann::json& doc, const nlohmann::json& c) {
  std::string impl = c["impl"].get<std::string>();
  if (doc["all_targets"].get<bool>() && !c["simd"].is_null()) {
    impl += " " + c["simd"].get<std::string>();
  }
  return impl;
}

void print_cases(const nlohmann::json& doc) {
  const int w = doc["all_targets"].get<bool>() ? 15 : 10;
  fmt::print("{:<30} {:<{}} {:>3} {:>9} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7}\n", "case",
             "impl", w, "thr", "ms", "GB/s", "of copy", "vs loop", "vs omp", "vs torch", "vs f32",
             "vs 1t");
  for (const auto& c : doc["cases"]) {
    const double s = c["seconds"];
    fmt::print("{:<30} {:<{}} {:>3} {:>9.3f} {:>7.2f} {:>6.0f}% {:>8} {:>9} {:>8} {:>8} {:>7}\n",
               c["name"].get<std::string>(), impl_column(doc, c), w, c["threads"].get<int>(),
               s * 1e3, c["GBps"].get<double>(),
               100 * c["fraction_of_copy_bandwidth"].get<double>(),
               ratio(opt(c["peer_serial_seconds"]), s), ratio(opt(c["peer_omp_seconds"]), s),
               ratio(opt(c["pytorch_seconds"]), s), ratio(opt(c["f32_seconds"]), s),
               ratio(opt(c["one_thread_seconds"]), s));
  }
}

void print_train_step(const nlohmann::json& t) {
  if (t.contains("skipped")) {
    fmt::print("{} ({}): {}\n", t["name"].get<std::string>(), t["shape"].get<std::string>(),
               t["skipped"].get<std::string>());
    return;
  }
  const double seconds = t["seconds"];
  const double tokens = t["tokens_per_second"].get<double>() * seconds;
  auto peer = [&](const nlohmann::json& s, const nlohmann::json& status) {
    return s.is_null() ? status.get<std::string>()
                       : fmt::format("{:.0f} tokens/s ({})", tokens / s.get<double>(),
                                     ratio(opt(s), seconds));
  };
  fmt::print("{} ({}), {} threads, {}: {:.3f} ms, {:.0f} tokens/s; PyTorch {}\n",
             t["name"].get<std::string>(), t["shape"].get<std::string>(), t["threads"].get<int>(),
             t["matrix_products"].get<std::string>(), seconds * 1e3,
             t["tokens_per_second"].get<double>(), peer(t["pytorch_seconds"], t["pytorch_status"]));
  if (t.contains("pytorch_openblas_coretype")) {
    fmt::print(
        "  (PyTorch with OPENBLAS_CORETYPE={}, the OpenBLAS kernels for this CPU's "
        "instructions: {})\n",
        t["pytorch_openblas_coretype"].get<std::string>(),
        peer(t["pytorch_coretype_seconds"], t["pytorch_coretype_status"]));
  }
}

}  // namespace

void print_bench_table(const nlohmann::json& doc) {
  print_header(doc);
  print_cases(doc);
  if (doc.contains("train_step")) {
    for (const auto& t : doc["train_step"]) print_train_step(t);
  }
}

}  // namespace posemb::cli
