// bench/harness/relative_bias_cases.hpp: T5's relative position bias cases, part of
// embedding_cases() (the one list `posemb bench` and the Google Benchmark program run):
// relative_bias_forward and relative_bias_backward of T5-base's 12 heads and 32 bidirectional
// buckets at Tq = Tk = 512 ("t5"), of 16 heads at 1024 ("t5-1k"), and one query against 4096
// keys (cached decoding, "t5-step"), against the plain loops over a precomputed bucket matrix
// (bench/peers/relative_bias_loop.hpp; serial, and the forward with OpenMP).
#pragma once

#include <vector>

#include "harness/embedding_cases.hpp"

namespace posemb::bench {

struct RelativeBiasShape {
  const char* tag;  // "t5"
  std::size_t H, Tq, Tk, query_start;
  std::string describe() const;  // "H=12 Tq=512 Tk=512 buckets 32/128"
};
inline constexpr RelativeBiasShape kRelativeBiasShapes[] = {
    {"t5", 12, 512, 512, 0}, {"t5-1k", 16, 1024, 1024, 0}, {"t5-step", 12, 1, 4096, 4095}};

// Every relative bias case at every thread count in `threads`; the serial loops once (threads 1),
// the loops only when `with_loop` (see llmc_peer_available: the same -march=native build).
std::vector<Case> relative_bias_cases(const std::vector<int>& threads, bool with_loop);

}  // namespace posemb::bench
