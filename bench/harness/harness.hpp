// bench/harness/harness.hpp: how posemb measures, defined once for `posemb bench` and the Google
// Benchmark program (bench/bench_embedding.cpp).
//
//   posemb::bench::Harness h;                                  // allocates the flush buffer
//   std::vector<posemb::bench::Variant> vs = ...;              // what to time, at which threads
//   auto stats = h.run_interleaved(vs, 20);                    // median and min per variant
//   posemb::bench::PeerResult torch = posemb::bench::run_peer({"/usr/bin/python3", script});
//
// The protocol: every timed repetition of every variant is preceded by one untimed run of the
// same variant and then a flush of the caches, by reading a buffer larger than the last-level
// cache (at least 256 MiB; reading leaves clean lines, so no write-back of the flush lands in
// the next timing) on the variant's own threads (Harness::flush). The untimed run makes each timing
// independent of the variant before it: the flush evicts the data but not all the state a kernel's
// speed depends on (most likely the address translations of its tables: a forward run right after
// another forward on the same table, gathering other rows, measured 1.36-1.63x faster than after
// one on another table). The variants are interleaved (repetition 1 of every variant, then
// repetition 2, ...), so that a change in the machine's load affects every variant alike; the
// result is the median. Ratios between variants of one run are the figures to trust on a shared
// machine, together with the load average.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace posemb::bench {

// One thing to time: `run` at `threads` threads (OpenMP's thread count, which posemb's
// parallel_for follows too).
struct Variant {
  std::string name;  // "embed_forward/gpt2 posemb 2t", for listings
  int threads = 1;
  std::function<void()> run;
  bool openmp = false;  // runs on OpenMP's threads (a peer), not on posemb::parallel_for's
  // posemb's SIMD target for the variant's calls (posemb::set_simd_target, before its untimed
  // call); "" for the process's choice (POSEMB_SIMD, else the best).
  std::string simd;
};

class Harness {
 public:
  Harness();
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // Evicts the caches: reads the whole flush buffer at the current thread count, on OpenMP's
  // threads (openmp) or posemb::parallel_for's (the calling thread and its helpers).
  void flush(bool openmp = false) const;
  std::size_t flush_bytes() const noexcept { return flush_bytes_; }
  // Seconds of one call of v.run after setting its thread count, one untimed call and a flush.
  double time_once(const Variant& v) const;
  // `repetitions` rounds that time every variant once (time_once: each timing after an untimed
  // call and a flush); returns the statistics of each variant, in order.
  struct Stats {
    double median = 0, min = 0;  // seconds
  };
  std::vector<Stats> run_interleaved(const std::vector<Variant>& variants, int repetitions) const;

 private:
  float* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
};

// A copy of n = 256 MiB (read n bytes, write n bytes with streaming stores of the widest vectors
// the CPU has, the write going straight to memory) in chunks of 1 MiB over `threads` threads,
// as a Variant over its own two buffers; `bytes` receives 2n, the bytes moved.
Variant copy_variant(int threads, double& bytes);

// The rows at rows[0 .. n), each `cols` floats, read and nothing written: kGatherGroup rows at a
// time, vector by vector across the group (how posemb's forward reads the token rows of a table
// larger than the caches), with the widest vectors the CPU has, in chunks of 64 rows over the
// current thread count (posemb's parallel_for). How fast this machine reads rows scattered over
// a large table: a reference beside the copy, not a kernel. Returns a sum of what was read.
inline constexpr std::size_t kGatherGroup = 16;
float gather_rows(const float* const* rows, std::size_t n, std::size_t cols);

// The 1-minute load average, or -1 when unknown.
double load_average();

// What the CPU reports about itself (cpuid, and the caches as the C library reads them), for the
// header of a benchmark's figures: they depend on the CPU at least as much as on the code.
struct CpuInfo {
  std::string brand;   // "AMD EPYC 7763 64-Core Processor" (cpuid's brand string)
  std::string vendor;  // "AuthenticAMD"
  int family = 0, model = 0, stepping = 0;
  long l1d = 0, l2 = 0, l3 = 0;       // bytes per cache (L1d and L2 per core), 0 when unknown
  std::vector<std::string> features;  // of sse4.1, avx2, fma, f16c, avx512f/bw/vl, the CPU's
  int cpus = 0;                       // online logical CPUs
};
CpuInfo cpu_info();
// "AMD EPYC 7763 (AuthenticAMD family 25 model 1); L1d 32 KiB, L2 512 KiB, L3 32 MiB; sse4.1 avx2
// fma f16c; 2 CPUs"
std::string describe(const CpuInfo& cpu);

// An external peer (a Python script today): runs argv[0] with the arguments, reads its
// standard output as one JSON document. On failure (not found, non-zero exit, bad JSON)
// `json` is empty and `status` says why.
struct PeerResult {
  std::optional<nlohmann::json> json;
  std::string status;
};
PeerResult run_peer(const std::vector<std::string>& argv);

}  // namespace posemb::bench
