// The embedding cases of `posemb bench`: fused forward, backward (both gradients), and
// forward + backward, at GPT-2-small shape and a small shape, against the scalar reference and
// PyTorch.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "embed_reference.hpp"
#include "posemb/posemb.hpp"

namespace posemb::cli {

double median_seconds(const std::function<void()>& fn, int repetitions, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, repetitions); ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

double measure_copy_bandwidth(int repetitions) {
  const std::size_t n = (256u << 20) / sizeof(float) / 2;  // two 128 MiB buffers
  std::unique_ptr<float[]> src(new float[n]), dst(new float[n]);
  const std::ptrdiff_t chunks = 64;
  auto copy = [&] {
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t k = 0; k < chunks; ++k) {
      const std::size_t a = n * static_cast<std::size_t>(k) / chunks;
      const std::size_t b = n * static_cast<std::size_t>(k + 1) / chunks;
      std::memcpy(dst.get() + a, src.get() + a, (b - a) * sizeof(float));
    }
  };
  std::fill(src.get(), src.get() + n, 1.0f);
  std::fill(dst.get(), dst.get() + n, 0.0f);
  const double s = median_seconds(copy, std::max(3, repetitions / 4), 1);
  return 2.0 * static_cast<double>(n * sizeof(float)) / s;
}

namespace {

struct Shape {
  const char* tag;
  std::size_t B, T, C, V;
};

std::string describe(const Shape& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " C=" + std::to_string(s.C) +
         " V=" + std::to_string(s.V);
}

// Inputs of one shape: GPT-2 style N(0, 0.02) tables, uniformly random tokens, contiguous
// positions.
struct Problem {
  Shape s;
  Matrix<float> wte, wpe, out, dout, dwte, dwpe;
  Matrix<TokenId> tokens;
  Matrix<std::int64_t> pos;
  std::size_t unique_tokens = 0;

  explicit Problem(const Shape& sh)
      : s(sh),
        wte(sh.V, sh.C),
        wpe(sh.T, sh.C),
        out(sh.B * sh.T, sh.C),
        dout(sh.B * sh.T, sh.C),
        dwte(sh.V, sh.C),
        dwpe(sh.T, sh.C),
        tokens(sh.B, sh.T) {
    initialize_table(wte.view(), {InitKind::normal, 0.02, 1});
    initialize_table(wpe.view(), {InitKind::normal, 0.01, 2});
    initialize_table(dout.view(), {InitKind::normal, 1.0, 3});
    std::mt19937_64 rng(4);
    std::uniform_int_distribution<TokenId> u(0, static_cast<TokenId>(sh.V - 1));
    for (auto& t : tokens.flat()) t = u(rng);
    pos = resolve_positions(PositionSource::contiguous(), tokens, sh.T);
    unique_tokens = std::set<TokenId>(tokens.flat().begin(), tokens.flat().end()).size();
  }
  double row_bytes() const { return static_cast<double>(s.C * sizeof(float)); }
  // Forward: read a wte row and a wpe row, write an out row, per token.
  double forward_bytes() const { return 3.0 * static_cast<double>(s.B * s.T) * row_bytes(); }
  // Backward: read dout once; read and write each touched dwte and dwpe row once.
  double backward_bytes() const {
    return (static_cast<double>(s.B * s.T) + 2.0 * static_cast<double>(unique_tokens + s.T)) *
           row_bytes();
  }
  void forward() { embed_forward(out.view(), tokens, PositionSource::contiguous(), wte, wpe); }
  void backward() {
    embed_backward(dwte.view(), dwpe.view(), dout, tokens, PositionSource::contiguous());
  }
  void scalar_forward() { reference::embed_forward(out.view(), tokens, pos.data(), wte, wpe); }
  void scalar_backward() {
    reference::embed_backward(dwte.view(), dwpe.view(), dout, tokens, pos.data());
  }
};

std::optional<double> peer(const BenchContext& ctx, const std::string& key) {
  const auto it = ctx.peer_seconds.find(key);
  if (it == ctx.peer_seconds.end()) return std::nullopt;
  return it->second;
}

BenchCase make_case(const Shape& s, const std::string& op) {
  const std::string name = "embed_" + op + "/" + s.tag;
  return {name, [s, op, name](const BenchContext& ctx) {
            Problem p(s);
            const int reps = ctx.repetitions;
            const int scalar_reps = std::max(3, reps / 4);
            BenchResult r{name, describe(s), 0, 0, std::nullopt, std::nullopt, std::nullopt};
            if (op == "forward") {
              r.seconds = median_seconds([&] { p.forward(); }, reps);
              r.scalar_seconds = median_seconds([&] { p.scalar_forward(); }, scalar_reps);
              r.bytes = p.forward_bytes();
            } else if (op == "backward") {
              r.seconds = median_seconds([&] { p.backward(); }, reps);
              r.scalar_seconds = median_seconds([&] { p.scalar_backward(); }, scalar_reps);
              r.bytes = p.backward_bytes();
            } else {
              r.seconds = median_seconds(
                  [&] {
                    p.forward();
                    p.backward();
                  },
                  reps);
              r.scalar_seconds = median_seconds(
                  [&] {
                    p.scalar_forward();
                    p.scalar_backward();
                  },
                  scalar_reps);
              r.bytes = p.forward_bytes() + p.backward_bytes();
            }
            r.peer_seconds = peer(ctx, op + "/" + s.tag);
            return r;
          }};
}

}  // namespace

std::vector<BenchCase> embedding_bench_cases() {
  const Shape shapes[] = {{"gpt2", 4, 1024, 768, 50257}, {"small", 32, 64, 64, 64}};
  std::vector<BenchCase> cases;
  for (const Shape& s : shapes) {
    for (const char* op : {"forward", "backward", "forward_backward"}) {
      cases.push_back(make_case(s, op));
    }
  }
  return cases;
}

}  // namespace posemb::cli
