// Google Benchmark: the fused embedding forward and backward at GPT-2-small shape
// (B=4, T=1024, C=768, V=50257) and a small shape (B=32, T=64, C=64, V=64), the plain scalar
// reference beside them, and a parallel copy kernel for the memory bandwidth of this run.
// Bytes per second use the traffic model of docs/layer.md (forward: 3 rows per token;
// backward: dout once plus each touched gradient row read and written).
//
//   ./build/bench/bench_embedding --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "embed_reference.hpp"
#include "posemb/posemb.hpp"

namespace {

using namespace posemb;

struct Problem {
  std::size_t B, T, C, V;
  Matrix<float> wte, wpe, out, dout, dwte, dwpe;
  Matrix<TokenId> tokens;
  Matrix<std::int64_t> pos;
  Problem(std::size_t b, std::size_t t, std::size_t c, std::size_t v)
      : B(b),
        T(t),
        C(c),
        V(v),
        wte(v, c),
        wpe(t, c),
        out(b * t, c),
        dout(b * t, c),
        dwte(v, c),
        dwpe(t, c),
        tokens(b, t) {
    initialize_table(wte.view(), {InitKind::normal, 0.02, 1});
    initialize_table(wpe.view(), {InitKind::normal, 0.01, 2});
    initialize_table(dout.view(), {InitKind::normal, 1.0, 3});
    std::mt19937_64 rng(4);
    std::uniform_int_distribution<TokenId> u(0, static_cast<TokenId>(v - 1));
    for (auto& x : tokens.flat()) x = u(rng);
    pos = resolve_positions(PositionSource::contiguous(), tokens, t);
    unique = std::set<TokenId>(tokens.flat().begin(), tokens.flat().end()).size();
  }
  std::size_t unique = 0;
  // Backward: read dout once; read and write each touched dwte and dwpe row once.
  std::int64_t backward_bytes() const {
    return static_cast<std::int64_t>((B * T + 2 * (unique + T)) * C * 4);
  }
  std::int64_t token_bytes() const { return static_cast<std::int64_t>(B * T * C * 4); }
};

Problem& problem(int which) {
  static Problem gpt2(4, 1024, 768, 50257);
  static Problem small(32, 64, 64, 64);
  return which == 0 ? gpt2 : small;
}

void BM_copy(benchmark::State& state) {
  const std::size_t n = (256u << 20) / sizeof(float) / 2;
  std::unique_ptr<float[]> src(new float[n]), dst(new float[n]);
  std::memset(src.get(), 1, n * sizeof(float));
  std::memset(dst.get(), 0, n * sizeof(float));
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t k = 0; k < 64; ++k) {
      const std::size_t a = n * static_cast<std::size_t>(k) / 64;
      const std::size_t b = n * static_cast<std::size_t>(k + 1) / 64;
      std::memcpy(dst.get() + a, src.get() + a, (b - a) * sizeof(float));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * sizeof(float)));
}
BENCHMARK(BM_copy)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_forward(benchmark::State& state) {
  Problem& p = problem(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    embed_forward(p.out.view(), p.tokens, PositionSource::contiguous(), p.wte, p.wpe);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * p.token_bytes());
}
void BM_scalar_forward(benchmark::State& state) {
  Problem& p = problem(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    reference::embed_forward(p.out.view(), p.tokens, p.pos.data(), p.wte, p.wpe);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * p.token_bytes());
}
void BM_backward(benchmark::State& state) {
  Problem& p = problem(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    embed_backward(p.dwte.view(), p.dwpe.view(), p.dout, p.tokens, PositionSource::contiguous());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * p.backward_bytes());
}
void BM_scalar_backward(benchmark::State& state) {
  Problem& p = problem(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    reference::embed_backward(p.dwte.view(), p.dwpe.view(), p.dout, p.tokens, p.pos.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * p.backward_bytes());
}
// Arg 0: GPT-2-small shape; arg 1: the small shape.
BENCHMARK(BM_forward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scalar_forward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_backward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scalar_backward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
