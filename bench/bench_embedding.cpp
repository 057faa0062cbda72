// Google Benchmark over the harness's embedding cases (bench/harness/embedding_cases.hpp): the
// same problems, the same cache flush before every timed call and the same timing as
// `posemb bench`, one benchmark per case and thread count, with the bytes each must move.
//
//   ./build/bench/bench_embedding --benchmark_filter=gpt2
//   ./build/bench/bench_embedding --threads=1,2       (default: 1 and OpenMP's count)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/embedding_cases.hpp"
#include "harness/harness.hpp"
#include "peers/llmc_encoder.hpp"
#include "posemb/simd.hpp"

namespace {

std::vector<int> thread_counts(int& argc, char** argv) {
  std::vector<int> out;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      for (const char* p = argv[i] + 10; *p != '\0';) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p || n < 1) break;
        out.push_back(static_cast<int>(n));
        p = *end == ',' ? end + 1 : end;
      }
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  if (out.empty()) {
    out.push_back(1);
    if (omp_get_max_threads() > 1) out.push_back(omp_get_max_threads());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu", posemb::bench::describe(posemb::bench::cpu_info()));
  benchmark::AddCustomContext("posemb_simd_target", posemb::simd_target());
  static const posemb::bench::Harness harness;
  std::string why;
  const bool llmc = posemb::bench::llmc_peer_available(why);
  if (!llmc) std::fprintf(stderr, "llm.c peer not measured: %s\n", why.c_str());
  static const std::vector<posemb::bench::Case> cases =
      posemb::bench::embedding_cases(threads, llmc);
  for (const auto& c : cases) {
    const std::string name =
        c.name() + "/" + posemb::bench::impl_name(c.impl) + "/threads:" + std::to_string(c.threads);
    benchmark::RegisterBenchmark(name.c_str(),
                                 [&c](benchmark::State& state) {
                                   const posemb::bench::Variant v = c.variant();
                                   for (auto _ : state)
                                     state.SetIterationTime(harness.time_once(v));
                                   state.SetBytesProcessed(static_cast<std::int64_t>(
                                       static_cast<double>(state.iterations()) * c.bytes));
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
