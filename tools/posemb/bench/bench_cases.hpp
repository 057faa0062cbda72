// tools/posemb/bench/bench_cases.hpp: the cases `posemb bench` measures beside the interleaved
// kernel cases of the harness (bench/harness/embedding_cases.hpp): each runs through the same
// harness (flush, timing, median) and its peer through the same run_peer.
#pragma once

#include <optional>
#include <string>

#include <vector>

#include "harness/embedding_cases.hpp"
#include "harness/harness.hpp"

namespace posemb::cli {

// What a standalone case needs to know.
struct BenchContext {
  const bench::Harness* harness = nullptr;
  int repetitions = 15;
  int threads = 1;                          // threads for the case and its peer
  bool run_peers = true;                    // false with --no-peer
  std::string python = "/usr/bin/python3";  // for peer scripts
  std::string peer_dir;                     // where the peer scripts are
  std::vector<std::string> targets;         // posemb's SIMD targets to measure; empty: the chosen
  std::string filter;                       // --filter: only the cases whose name contains it
};

struct StandaloneResult {
  std::string name;     // "train_step/demo"
  std::string shape;    // "B=32 T=34 C=64 L=2 H=4 F=256 V=12"
  std::string skipped;  // why the case was not measured ("" when it was)
  double seconds = 0;
  double tokens = 0;                   // tokens one call processes
  std::optional<double> peer_seconds;  // PyTorch, same model and thread count
  std::string peer_status;
  std::string blas;  // the lab's matrix products ("lab::gemm on avx512")
  std::string simd;  // posemb's SIMD target ("avx512")
  // Unless the user set OPENBLAS_CORETYPE: the OpenBLAS kernels for this CPU's instructions, and
  // the peer again with that variable, for PyTorch's own use of OpenBLAS.
  std::string peer_coretype;
  std::optional<double> peer_coretype_seconds;
  std::string peer_coretype_status;
};

// The training-step cases' names: train_step/demo (the symbol demo's model) and train_step/text
// (the text demo's byte-level model).
std::vector<std::string> train_step_names();

// One AdamW training step of each demo's model (lab/) against the same model in PyTorch, the
// cases whose name contains ctx.filter: one result per target of ctx.targets (the chosen target
// when empty), the same PyTorch figures in each. A case that cannot run here (the text case
// without its corpus) is one result with `skipped` saying why.
std::vector<StandaloneResult> train_step_cases(const BenchContext& ctx);

// Every kernel the lab runs through posemb::parallel_for (matrix products, attention,
// LayerNorm, GELU, residual add, softmax cross-entropy; RoPE and AdamW from the library) on one
// problem large enough to go parallel, at each thread count: named "<kernel>/lab", so the
// table's "vs 1t" column gives each kernel's 2-thread time against its 1-thread time.
std::vector<bench::Case> lab_kernel_cases(const std::vector<int>& threads);

}  // namespace posemb::cli
