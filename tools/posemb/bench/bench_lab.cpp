// `posemb bench --lab-kernels`: the lab's parallel kernels (and the library's RoPE and AdamW
// that the lab calls) at each thread count, for the contention check (2 threads against 1 with
// another process busy on one core); see lab_kernel_cases below.
//
// `posemb bench` cases train_step/demo and train_step/text: one AdamW training step (forward,
// backward, gradient clipping, update) of the symbol demo's model (lab/: 2 layers, 4 heads,
// d_model 64, batch 32 x 34 tokens, learned table) and of the text demo's (vocabulary 256, batch
// 16 x 64 bytes), steps run back to back as in training (median over repetitions of 10 steps
// each, per step), against the same model, shapes and batch in PyTorch
// (bench/peers/torch_model.py under /usr/bin/python3, same thread count), the two taking turns.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "lab/encodings/registry.hpp"
#include "lab/model/attention.hpp"
#include "lab/model/kernels.hpp"
#include "lab/tasks/registry.hpp"
#include "lab/train/trainer.hpp"
#include "posemb/posemb.hpp"

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

namespace {

// A training step to time: the lab's run settings and the same model for the peer.
struct TrainStepSpec {
  std::string name;                    // "train_step/demo"
  lab::RunConfig run;                  // the lab's model, task and batch
  std::vector<std::string> peer_args;  // bench/peers/torch_model.py's flags for its task
};

// The peer's flags for run's model and batch (its task's come from the spec).
std::vector<std::string> peer_model_args(const lab::RunConfig& r) {
  return {
      "--batch",  std::to_string(r.train.batch),    "--d-model", std::to_string(r.model.d_model),
      "--layers", std::to_string(r.model.n_layers), "--heads",   std::to_string(r.model.n_heads),
      "--d-ff",   std::to_string(r.model.d_ff),     "--pe",      r.model.pe};
}

// The learned table trained at positions 0..len-1, as the peer's model (GPT-2's).
const lab::EncodingSpec* learned_table() {
  return lab::find_encoding_if([](const lab::EncodingSpec& e) {
    return e.has_table && e.train_positions == lab::PositionMode::contiguous;
  });
}

// The task scored on windows of a corpus's text (the byte-level language model).
const lab::TaskSpec& text_task() {
  for (const lab::TaskSpec* t : lab::tasks()) {
    if (t->windows != nullptr) return *t;
  }
  throw std::logic_error("bench: no task reads a corpus");
}

// The symbol demo's model: 2 layers, 4 heads, d_model 64, the copy task at n = 16 (34 tokens),
// batch 32, a learned table.
TrainStepSpec demo_step() {
  TrainStepSpec s;
  s.name = "train_step/demo";
  lab::RunConfig& r = s.run;
  r.task.kind = lab::default_task_name();
  r.task.train_len = 16;
  r.task.alphabet = 8;
  r.model.vocab_size = lab::task_vocab_size(r.task);
  const lab::EncodingSpec* pe = learned_table();
  r.model.pe = pe->name;
  r.model.max_seq_len = pe->default_table_rows(lab::train_tokens(r.task));
  r.train.batch = 32;
  r.train.steps = 1000000;
  r.train.sort_by_length = false;  // pad every row to the batch's tokens, as the peer does
  s.peer_args = {"--task",      r.task.kind,
                 "--train-len", std::to_string(r.task.train_len),
                 "--alphabet",  std::to_string(r.task.alphabet)};
  return s;
}

// The text demo's model (docs/experiments.md, "The text demo's training step"): a byte-level
// language model (vocabulary 256) with a learned table, its size, window L and batch the text
// task's demo preset (lab/tasks/text.cpp: d_model 64, 2 layers, 4 heads, d_ff 256, L = 64 bytes,
// batch 16), micro-batches of 8 as the demo trains, on the default corpus (every row is full).
TrainStepSpec text_step() {
  TrainStepSpec s;
  s.name = "train_step/text";
  lab::RunConfig& r = s.run;
  const lab::TaskSpec& task = text_task();
  const lab::DemoPreset& p = task.demo;  // the text demo's model and batch
  r.task.kind = std::string(task.name);
  r.task.train_len = p.train_len;
  r.model.vocab_size = lab::task_vocab_size(r.task);
  r.model.d_model = p.d_model;
  r.model.n_layers = p.n_layers;
  r.model.n_heads = p.n_heads;
  r.model.d_ff = p.d_ff;
  r.model.pe = learned_table()->name;
  r.model.max_seq_len = r.task.train_len;
  r.train.batch = p.batch;
  r.train.steps = 1000000;
  s.peer_args = {"--task", r.task.kind, "--train-len", std::to_string(r.task.train_len)};
  return s;
}

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The peer's step_seconds, or nothing with `status` saying why.
std::optional<double> peer_seconds(const bench::PeerResult& peer, std::string& status) {
  status = peer.status;
  if (!peer.json) return std::nullopt;
  try {
    return peer.json->at("step_seconds").get<double>();
  } catch (const std::exception& e) {
    status = std::string("not measured (") + e.what() + ")";
  }
  return std::nullopt;
}

std::string shape_of(const lab::RunConfig& r) {
  return fmt::format("B={} T={} C={} L={} H={} F={} V={}", r.train.batch, lab::train_tokens(r.task),
                     r.model.d_model, r.model.n_layers, r.model.n_heads, r.model.d_ff,
                     r.model.vocab_size);
}

// One case: spec's step against the peer, one result per target of ctx.targets (the chosen
// target when empty). A trainer that cannot be built (the text case without its corpus) gives a
// result with `skipped` saying why.
std::vector<StandaloneResult> train_step_case(const BenchContext& ctx, const TrainStepSpec& spec) {
  const std::vector<std::string> targets =
      ctx.targets.empty() ? std::vector<std::string>{simd_target()} : ctx.targets;
  StandaloneResult proto;
  proto.name = spec.name;
  proto.shape = shape_of(spec.run);
  proto.tokens = static_cast<double>(spec.run.train.batch * lab::train_tokens(spec.run.task));
  std::optional<lab::Trainer> tr;
  try {
    tr.emplace(spec.run);
  } catch (const std::exception& e) {
    proto.skipped = std::string("not measured (") + e.what() + ")";
    return {proto};
  }
  const int reps = std::max(ctx.repetitions, 10);
  proto.peer_coretype = ctx.run_peers ? openblas_core_for_cpu() : "";
  // Training runs its steps back to back, and the peer times them so (no flush between steps):
  // each timed repetition is kSteps consecutive steps after one cache flush, reported per step.
  constexpr int kSteps = 10;
  std::vector<bench::Variant> steps;
  for (const std::string& t : targets) {
    steps.push_back({spec.name + " " + t, ctx.threads,
                     [&tr] {
                       for (int i = 0; i < kSteps; ++i) tr->train_step();
                     },
                     false, ctx.targets.empty() ? "" : t});
  }
  // The peer is another process, so the two cannot be interleaved repetition by repetition:
  // they take turns in kRounds rounds (ours on each target, the peer, the peer with the OpenBLAS
  // kernels for this CPU), each reporting its median, and each side's figure is the median of its
  // rounds. A change in the machine's speed during the run then falls on both sides alike.
  constexpr int kRounds = 3;
  const int per_round = std::max(reps / kRounds, 5);
  std::vector<std::string> args{ctx.peer_dir + "/torch_model.py", "--threads",
                                std::to_string(ctx.threads), "--steps", std::to_string(per_round)};
  args.insert(args.end(), spec.peer_args.begin(), spec.peer_args.end());
  for (std::string& a : peer_model_args(spec.run)) args.push_back(std::move(a));
  std::vector<std::vector<double>> ours(targets.size());
  std::vector<double> peer, peer_ct;
  for (int round = 0; round < kRounds; ++round) {
    const auto stats = ctx.harness->run_interleaved(steps, per_round);
    for (std::size_t i = 0; i < stats.size(); ++i) ours[i].push_back(stats[i].median / kSteps);
    if (!ctx.run_peers) continue;
    std::vector<std::string> argv{ctx.python};
    argv.insert(argv.end(), args.begin(), args.end());
    if (auto s = peer_seconds(bench::run_peer(argv), proto.peer_status)) peer.push_back(*s);
    if (!proto.peer_coretype.empty()) {
      std::vector<std::string> with_env{"/usr/bin/env", "OPENBLAS_CORETYPE=" + proto.peer_coretype,
                                        ctx.python};
      with_env.insert(with_env.end(), args.begin(), args.end());
      if (auto s = peer_seconds(bench::run_peer(with_env), proto.peer_coretype_status)) {
        peer_ct.push_back(*s);
      }
    }
  }
  if (!ctx.run_peers) proto.peer_status = "not measured (--no-peer)";
  proto.peer_seconds = median_of(peer);
  proto.peer_coretype_seconds = median_of(peer_ct);
  std::vector<StandaloneResult> out;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    StandaloneResult res = proto;
    res.simd = targets[i];
    res.blas = "lab::gemm on " + targets[i];
    res.seconds = *median_of(ours[i]);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace

std::vector<std::string> train_step_names() {
  return {demo_step().name, text_step().name};
}

std::vector<StandaloneResult> train_step_cases(const BenchContext& ctx) {
  std::vector<StandaloneResult> out;
  for (const TrainStepSpec& spec : {demo_step(), text_step()}) {
    if (!ctx.filter.empty() && spec.name.find(ctx.filter) == std::string::npos) continue;
    for (auto& r : train_step_case(ctx, spec)) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace posemb::cli

namespace posemb::cli {
namespace {

// The contention problem: a batch of 16 x 256 tokens of a model with d_model 128, 4 heads,
// d_ff 512 and 256 symbols, large enough that every kernel below goes parallel
// (posemb::worth_parallel) when given a second thread. Inputs N(0, 1) (fixed seeds).
struct LabProblem {
  static constexpr std::size_t B = 16, T = 256, C = 128, H = 4, F = 512, V = 256, M = B * T;
  Matrix<float> x{M, C}, y{M, C}, dy{M, C}, dx{M, C}, qkv{M, 3 * C}, dqkv{M, 3 * C};
  Matrix<float> w{C, 3 * C}, dw{C, 3 * C}, b{1, 3 * C}, db{1, 3 * C}, lnw{1, C}, lnb{1, C};
  Matrix<float> dlnw{1, C}, dlnb{1, C}, fc{M, F}, fct{M, F}, fcg{M, F}, dfc{M, F};
  Matrix<float> logits{M, V}, dlogits{M, V}, adam_w{M / 2, F}, adam_g{M / 2, F};
  std::vector<float> mean = std::vector<float>(M), rstd = std::vector<float>(M);
  std::vector<float> losses = std::vector<float>(M), probs = std::vector<float>(B * H * T * T);
  std::vector<std::int32_t> targets = std::vector<std::int32_t>(M);
  RopeCache rope{Rope(C / H, RopeLayout::interleaved), T};
  AdamW adam;

  LabProblem() {
    std::uint64_t seed = 10;
    for (Matrix<float>* m : {&x, &dy, &qkv, &w, &b, &lnw, &lnb, &fc, &logits, &adam_w, &adam_g}) {
      initialize_table(m->view(), {InitKind::normal, 1.0, seed++});
    }
    for (std::size_t r = 0; r < M; ++r) targets[r] = static_cast<std::int32_t>(r % V);
    lab::gelu_forward(fcg.view(), fct.view(), fc);
    lab::attention_forward(y.view(), probs, qkv, B, T, H);
  }
  static double float_bytes(std::size_t floats) {
    return static_cast<double>(floats) * sizeof(float);
  }
};

}  // namespace

std::vector<bench::Case> lab_kernel_cases(const std::vector<int>& threads) {
  auto p = std::make_shared<LabProblem>();
  using P = LabProblem;
  const std::string shape = "B=16 T=256 C=128 H=4 F=512 V=256";
  std::vector<bench::Case> cases;
  // bytes: the inputs read and the outputs written once (the least an implementation moves).
  auto add = [&](const char* op, double bytes, std::function<void()> run) {
    for (int t : threads)
      cases.push_back({op, "lab", shape, bench::Impl::posemb, t, bytes, run, ""});
  };
  const double MC = P::float_bytes(P::M * P::C), MF = P::float_bytes(P::M * P::F),
               MV = P::float_bytes(P::M * P::V);
  const double qkv = P::float_bytes(P::M * 3 * P::C),
               attn = P::float_bytes(P::B * P::H * P::T * P::T);
  add("linear_forward", MC + qkv, [p] { lab::linear_forward(p->qkv.view(), p->x, p->w, p->b); });
  add("linear_backward", 2 * MC + qkv + 2 * P::float_bytes(3 * P::C * P::C),
      [p] { lab::linear_backward(p->dx.view(), p->dw.view(), p->db.view(), p->qkv, p->x, p->w); });
  add("attention_forward", qkv + MC + attn,
      [p] { lab::attention_forward(p->y.view(), p->probs, p->qkv, P::B, P::T, P::H); });
  add("attention_backward", 2 * qkv + MC + attn, [p] {
    lab::attention_backward(p->dqkv.view(), {}, p->dy, p->probs, p->qkv, P::B, P::T, P::H);
  });
  add("layernorm_forward", 2 * MC,
      [p] { lab::layernorm_forward(p->y.view(), p->mean, p->rstd, p->x, p->lnw, p->lnb); });
  add("layernorm_backward", 3 * MC, [p] {
    lab::layernorm_backward(p->dx.view(), p->dlnw.view(), p->dlnb.view(), p->dy, p->x, p->mean,
                            p->rstd, p->lnw);
  });
  add("gelu_forward", 3 * MF, [p] { lab::gelu_forward(p->fcg.view(), p->fct.view(), p->fc); });
  add("gelu_backward", 4 * MF, [p] { lab::gelu_backward(p->dfc.view(), p->fcg, p->fc, p->fct); });
  add("add_into", 3 * MC, [p] { lab::add_into(p->y.view(), p->x); });
  add("softmax_cross_entropy", 2 * MV,
      [p] { lab::softmax_cross_entropy(p->dlogits.view(), p->losses, p->logits, p->targets); });
  // The library kernels the lab calls: RoPE on q (the lab rotates q and k), AdamW on a
  // (2048, 512) parameter.
  const auto q = [p] { return p->qkv.view().subcols(0, P::C); };
  add("rope_forward", 2 * MC,
      [p, q] { rope_forward(q(), P::H, P::B, P::T, PositionSource::contiguous(), p->rope); });
  add("rope_backward", 2 * MC,
      [p, q] { rope_backward(q(), P::H, P::B, P::T, PositionSource::contiguous(), p->rope); });
  add("adamw_step", 5 * MF / 2, [p] { p->adam.step({{p->adam_w.view(), p->adam_g.cview()}}); });
  return cases;
}

}  // namespace posemb::cli
