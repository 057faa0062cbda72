// bench/harness/embedding_cases.hpp: the embedding benchmark cases, defined once for
// `posemb bench` and the Google Benchmark program: the problems (GPT-2-small's input layer and a
// small one), what each case runs, at which thread count, and the bytes it must move.
//
//   for (const auto& c : posemb::bench::embedding_cases({1, 2}, peers)) ... c.variant() ...
//
// Implementations: posemb's kernels (float, and bfloat16 / float16 tables for the forward; the
// position-only add and its backward), the llm.c encoder loop (serial, and the forward with
// OpenMP; for the position-only add, the same loops without the token term;
// bench/peers/llmc_encoder.hpp), and two references for the machine in the same run: a
// streaming copy of 2 x 256 MiB (its bandwidth) and, at the GPT-2 shape, the forward's token
// rows read and nothing written (read_token_rows, "machine": how fast it reads scattered rows).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/harness.hpp"

namespace posemb::bench {

struct Shape {
  const char* tag;  // "gpt2"
  std::size_t B, T, C, V;
  std::string describe() const;  // "B=4 T=1024 C=768 V=50257"
};
inline constexpr Shape kGpt2Shape{"gpt2", 4, 1024, 768, 50257};
inline constexpr Shape kSmallShape{"small", 32, 64, 64, 64};

// loop, loop_omp: the plain loops of the rope cases (rope_cases.hpp) and the relative bias cases
// (relative_bias_cases.hpp); machine: a reference for the machine (read_token_rows), like the
// copy.
enum class Impl { posemb, llmc, llmc_omp, copy, loop, loop_omp, machine };
// "posemb", "llm.c", "llm.c omp", "copy", "loop", "loop omp", "machine"
const char* impl_name(Impl impl);

struct Case {
  std::string op;     // embed_forward, embed_backward, embed_forward_backward,
                      // embed_forward_bf16, embed_forward_f16, add_positions_forward,
                      // add_positions_backward, copy, read_token_rows; rope_forward, rope_backward,
                      // rope_forward_uncached, rope_backward_uncached (rope_cases.hpp);
                      // relative_bias_forward, relative_bias_backward (relative_bias_cases.hpp)
  std::string shape;  // Shape::tag ("" for copy)
  std::string shape_text;
  Impl impl = Impl::posemb;
  int threads = 1;
  double bytes = 0;  // the bytes the operation must move (see embedding_cases.cpp)
  std::function<void()> run;
  std::string simd;  // posemb's SIMD target for a posemb case; "" for the process's choice

  std::string name() const {
    return shape.empty() ? op : op + "/" + shape;
  }  // "embed_forward/gpt2"
  Variant variant() const;
};

// Every case at every thread count in `threads`, then the rope cases (rope_cases.hpp) and the
// relative bias cases (relative_bias_cases.hpp). The serial llm.c loops appear once (threads 1)
// and only when `with_llmc` (see llmc_peer_available), the plain loops likewise.
std::vector<Case> embedding_cases(const std::vector<int>& threads, bool with_llmc);

// Every posemb case once per SIMD target in `targets` (Case::simd set), the targets of a case
// next to each other; the peers and the references (copy, read_token_rows) once. With no
// targets, the cases as they are.
std::vector<Case> for_targets(std::vector<Case> cases, const std::vector<std::string>& targets);

}  // namespace posemb::bench
