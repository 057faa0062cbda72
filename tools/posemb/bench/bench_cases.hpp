// tools/posemb/bench_cases.hpp: the cases `posemb bench` runs. A case is a name and a function
// that measures and returns one result line; each feature contributes a list of cases
// (embedding_bench_cases(), ...) and cmd_bench.cpp concatenates the lists. To add a case
// (e.g. training throughput), write a `std::vector<BenchCase> my_bench_cases()` in its own
// bench_*.cpp and append it in all_bench_cases() in cmd_bench.cpp.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace posemb::cli {

// What every case can use: the copy bandwidth measured in this process, the PyTorch peer's
// timings (seconds by case name; empty when not measured) and the repetition count.
struct BenchContext {
  double copy_bytes_per_second = 0;
  std::map<std::string, double> peer_seconds;
  int repetitions = 20;
  bool run_peers = true;                    // false with --no-peer
  std::string python = "/usr/bin/python3";  // for cases that run their own peer script
};

struct BenchResult {
  std::string name;                      // "embed_forward/gpt2"
  std::string shape;                     // "B=4 T=1024 C=768 V=50257"
  double seconds = 0;                    // median time of one call
  double bytes = 0;                      // bytes the operation must move (its traffic model)
  std::optional<double> scalar_seconds;  // the plain scalar reference, same shape
  std::optional<double> peer_seconds;    // PyTorch, same shape
  std::optional<double> tokens;          // tokens one call processes (training cases)
};

struct BenchCase {
  std::string name;
  std::function<BenchResult(const BenchContext&)> run;
};

// Median wall time of fn over `repetitions` calls after `warmup` calls.
double median_seconds(const std::function<void()>& fn, int repetitions, int warmup = 2);

// Bytes per second of a parallel copy of a 256 MiB buffer (bytes read + bytes written).
double measure_copy_bandwidth(int repetitions);

std::vector<BenchCase> embedding_bench_cases();
// Training throughput of the demo model (src/lab) against the same model in PyTorch.
std::vector<BenchCase> lab_bench_cases();

}  // namespace posemb::cli
