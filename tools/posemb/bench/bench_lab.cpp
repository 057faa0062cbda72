// `posemb bench` case train_step/demo: one AdamW training step (forward, backward, gradient
// clipping, update) of the demo model (src/lab: 2 layers, 4 heads, d_model 64, batch 32 x 34
// tokens, learned table), median over the repetitions, against the same model, shapes and
// batch in PyTorch (bench/peers/torch_model.py under /usr/bin/python3, same thread count).
#include <omp.h>
#include <stdio.h>

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_cases.hpp"
#include "lab/encoding.hpp"
#include "lab/trainer.hpp"

namespace posemb::cli {
namespace {

std::optional<double> torch_step_seconds(const BenchContext& ctx, int steps) {
  const std::string script = POSEMB_SOURCE_DIR "/bench/peers/torch_model.py";
  if (!ctx.run_peers || !std::filesystem::exists(ctx.python) || !std::filesystem::exists(script)) {
    return std::nullopt;
  }
  const std::string cmd = ctx.python + " " + script + " --threads " +
                          std::to_string(omp_get_max_threads()) + " --steps " +
                          std::to_string(steps) + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string text;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) text += buf.data();
  if (pclose(pipe) != 0) return std::nullopt;
  try {
    return nlohmann::json::parse(text).at("step_seconds").get<double>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

BenchResult train_step_demo(const BenchContext& ctx) {
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
  BenchResult res;
  res.name = "train_step/demo";
  res.shape = "B=32 T=34 C=64 L=2 H=4 V=12";
  res.seconds = median_seconds([&] { tr.train_step(); }, reps, 3);
  res.bytes = 0;  // a training step is compute-bound: see tokens per second
  res.tokens = 32.0 * static_cast<double>(lab::input_len(r.task.train_len));
  res.peer_seconds = torch_step_seconds(ctx, reps);
  return res;
}

}  // namespace

std::vector<BenchCase> lab_bench_cases() {
  return {{"train_step/demo", train_step_demo}};
}

}  // namespace posemb::cli
