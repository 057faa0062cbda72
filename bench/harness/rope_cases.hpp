// bench/harness/rope_cases.hpp: the rotary embedding's benchmark cases, part of
// embedding_cases() (the one list `posemb bench` and the Google Benchmark program run):
// rope_forward and rope_backward of queries (B, T, H, D) = (4, 1024, 12, 64), half pairing,
// contiguous positions, with a RopeCache and without (rope_forward_uncached, ...), against the
// plain rotate-half loop over the same cached cos and sin (bench/peers/rope_loop.hpp; serial,
// and the forward with OpenMP).
#pragma once

#include <vector>

#include "harness/embedding_cases.hpp"

namespace posemb::bench {

struct RopeShape {
  const char* tag;  // "gpt2"
  std::size_t B, T, H, D;
  std::string describe() const;  // "B=4 T=1024 H=12 D=64"
};
inline constexpr RopeShape kGpt2RopeShape{"gpt2", 4, 1024, 12, 64};

// Every rope case at every thread count in `threads`; the serial loops once (threads 1), the
// loops only when `with_loop` (see llmc_peer_available: the same -march=native build).
std::vector<Case> rope_cases(const std::vector<int>& threads, bool with_loop);

}  // namespace posemb::bench
