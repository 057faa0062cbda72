// tools/posemb/bench/bench_run.hpp: what `posemb bench` measures and how it reports it. One
// JSON document holds every figure (`posemb bench --json` prints it); the table is printed from
// it.
//
//   BenchOptions o;  o.threads = "1,2";
//   const nlohmann::json doc = measure_bench(o);   // the kernels, the peers, train_step/demo
//   print_bench_table(doc);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace posemb::cli {

struct BenchOptions {
  bool json = false;
  int repetitions = 15;
  std::string threads;  // "1,2"; empty: 1 and parallel_threads()
  std::string python = "/usr/bin/python3";
  std::string peer_dir;  // empty: the installed peers, else the source tree's
  bool no_peer = false;
  bool no_train_step = false;
  bool min = false;          // the table from the fastest repetition instead of the median
  bool lab_kernels = false;  // the lab's parallel kernels too (lab_kernel_cases)
  std::string filter;        // only the kernel cases whose name contains it (and the copy)
  bool all_targets = false;  // every posemb case (and train_step) on every SIMD target the CPU runs
};

// Runs every case with the harness's protocol; throws UsageError for bad --reps or --threads,
// or a --filter that matches no case.
nlohmann::json measure_bench(const BenchOptions& o);
// The table of a measure_bench document on stdout.
void print_bench_table(const nlohmann::json& doc);

}  // namespace posemb::cli
