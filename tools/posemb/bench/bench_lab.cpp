// `posemb bench` case train_step/demo: one AdamW training step (forward, backward, gradient
// clipping, update) of the demo model (lab/: 2 layers, 4 heads, d_model 64, batch 32 x 34
// tokens, learned table), steps run back to back as in training (median over repetitions of 10
// steps each, per step), against the same model, shapes and batch in PyTorch
// (bench/peers/torch_model.py under /usr/bin/python3, same thread count), the two taking turns.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "lab/blas.hpp"
#include "lab/encoding.hpp"
#include "lab/trainer.hpp"

namespace posemb::cli {

StandaloneResult train_step_demo(const BenchContext& ctx) {
  lab::RunConfig r;
  r.task.train_len = 16;
  r.task.alphabet = 8;
  r.model.vocab_size = r.task.vocab_size();
  // The learned table trained at positions 0..len-1, as the peer's model (GPT-2's).
  const lab::EncodingSpec* pe = lab::find_encoding_if([](const lab::EncodingSpec& e) {
    return e.has_table && e.train_positions == lab::PositionMode::contiguous;
  });
  r.model.pe = pe->name;
  r.model.max_seq_len = pe->default_table_rows(r.task.train_len);
  r.train.batch = 32;
  r.train.steps = 1000000;
  r.train.sort_by_length = false;  // pad every sequence to 34 tokens, as the peer does
  lab::Trainer tr(r);
  const int reps = std::max(ctx.repetitions, 10);
  StandaloneResult res;
  res.name = "train_step/demo";
  res.shape = "B=32 T=34 C=64 L=2 H=4 V=12";
  res.tokens = 32.0 * static_cast<double>(lab::input_len(r.task.train_len));
  res.blas = lab::blas().corename();
  res.peer_coretype = ctx.run_peers ? lab::blas_coretype_override() : "";
  // Training runs its steps back to back, and the peer times them so (no flush between steps):
  // each timed repetition is kSteps consecutive steps after one cache flush, reported per step.
  constexpr int kSteps = 10;
  const bench::Variant steps{"train_step/demo", ctx.threads, [&] {
                               for (int i = 0; i < kSteps; ++i) tr.train_step();
                             }};
  // The peer is another process, so the two cannot be interleaved repetition by repetition:
  // they take turns in kRounds rounds (ours, the peer, the peer with our OpenBLAS kernels), each
  // reporting its median, and each side's figure is the median of its rounds. A change in the
  // machine's speed during the run then falls on both sides alike.
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
