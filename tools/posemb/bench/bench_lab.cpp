// `posemb bench` case train_step/demo: one AdamW training step (forward, backward, gradient
// clipping, update) of the demo model (lab/: 2 layers, 4 heads, d_model 64, batch 32 x 34
// tokens, learned table), steps run back to back as in training (median over repetitions of 10
// steps each, per step), against the same model, shapes and batch in PyTorch
// (bench/peers/torch_model.py under /usr/bin/python3, same thread count), the two taking turns.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "lab/encoding.hpp"
#include "lab/trainer.hpp"
#include "posemb/simd.hpp"

namespace posemb::cli {
namespace {

// The OpenBLAS kernels for this CPU's instructions, for PyTorch's OpenBLAS, or "" when the user
// set OPENBLAS_CORETYPE. OpenBLAS (0.3.21 in Debian 12) picks its kernels by CPU model and falls
// back to its SSE3 "Prescott" kernels on a model it does not know (newer Xeons with AVX-512):
// the peer runs once as it is and once with these (SkylakeX's single-precision kernels are also
// Cooperlake's and Sapphire Rapids', Haswell's are also Zen's).
std::string openblas_core_for_cpu() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512cd")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

}  // namespace

StandaloneResult train_step_demo(const BenchContext& ctx) {
  lab::RunConfig r;
  r.task.train_len = 16;
  r.task.alphabet = 8;
  r.model.vocab_size = r.task.vocab_size();
  r.model.pe = "learned";
  r.model.max_seq_len = lab::find_encoding(r.model.pe).default_table_rows(r.task.train_len);
  r.train.batch = 32;
  r.train.steps = 1000000;
  r.train.sort_by_length = false;  // pad every sequence to 34 tokens, as the peer does
  lab::Trainer tr(r);
  const int reps = std::max(ctx.repetitions, 10);
  StandaloneResult res;
  res.name = "train_step/demo";
  res.shape = "B=32 T=34 C=64 L=2 H=4 V=12";
  res.tokens = 32.0 * static_cast<double>(lab::input_len(r.task.train_len));
  res.blas = "lab::gemm on " + simd_target();
  res.peer_coretype = ctx.run_peers ? openblas_core_for_cpu() : "";
  // Training runs its steps back to back, and the peer times them so (no flush between steps):
  // each timed repetition is kSteps consecutive steps after one cache flush, reported per step.
  constexpr int kSteps = 10;
  const bench::Variant steps{"train_step/demo", ctx.threads, [&] {
                               for (int i = 0; i < kSteps; ++i) tr.train_step();
                             }};
  // The peer is another process, so the two cannot be interleaved repetition by repetition:
  // they take turns in kRounds rounds (ours, the peer, the peer with the OpenBLAS kernels for this
  // CPU), each reporting its median, and each side's figure is the median of its rounds. A change
  // in the machine's speed during the run then falls on both sides alike.
  constexpr int kRounds = 3;
  const int per_round = std::max(reps / kRounds, 5);
  const std::vector<std::string> args{ctx.peer_dir + "/torch_model.py", "--threads",
                                      std::to_string(ctx.threads), "--steps",
                                      std::to_string(per_round)};
  auto peer_seconds = [](const bench::PeerResult& peer, std::string& status) {
    status = peer.status;
    std::optional<double> s;
    if (peer.json) {
      try {
        s = peer.json->at("step_seconds").get<double>();
      } catch (const std::exception& e) {
        status = std::string("not measured (") + e.what() + ")";
      }
    }
    return s;
  };
  auto median = [](std::vector<double> v) -> std::optional<double> {
    if (v.empty()) return std::nullopt;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> ours, peer, peer_ct;
  for (int round = 0; round < kRounds; ++round) {
    ours.push_back(ctx.harness->run_interleaved({steps}, per_round).front().median / kSteps);
    if (!ctx.run_peers) continue;
    std::vector<std::string> argv{ctx.python};
    argv.insert(argv.end(), args.begin(), args.end());
    if (auto s = peer_seconds(bench::run_peer(argv), res.peer_status)) peer.push_back(*s);
    if (!res.peer_coretype.empty()) {
      std::vector<std::string> with_env{"/usr/bin/env", "OPENBLAS_CORETYPE=" + res.peer_coretype,
                                        ctx.python};
      with_env.insert(with_env.end(), args.begin(), args.end());
      if (auto s = peer_seconds(bench::run_peer(with_env), res.peer_coretype_status)) {
        peer_ct.push_back(*s);
      }
    }
  }
  res.seconds = *median(ours);
  if (!ctx.run_peers) res.peer_status = "not measured (--no-peer)";
  res.peer_seconds = median(peer);
  res.peer_coretype_seconds = median(peer_ct);
  return res;
}

}  // namespace posemb::cli
