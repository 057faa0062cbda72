// posemb/simd.hpp: which instruction set posemb's kernels run on.
//
//   std::string t = posemb::simd_target();                // "avx512" on a CPU with AVX-512
//   std::vector<std::string> all = posemb::simd_targets(); // {"avx512", "avx2", "sse4",
//   "baseline"}
//
// One build runs on any x86-64 CPU. Each kernel (the embedding forward and backward, the
// position-only add, the optimizers' updates, the initializers' fill, the sine and cosine of the
// sinusoidal encoding and the rotary embedding, the rotary rotation; and, through
// posemb/simd_dispatch.hpp, the lab's LayerNorm, GELU, residual add, softmax cross-entropy and
// attention kernels) is compiled for several targets: the build's baseline (plain x86-64 unless
// the build says otherwise), SSE4, AVX2 and AVX-512; the best one this CPU supports is chosen once
// per process (Google Highway's dynamic dispatch). Every target computes the same operations in the
// same order, so results are bitwise identical whichever target runs (the tests compare them).
//
// The environment variable POSEMB_SIMD, read once when a kernel first runs, overrides the choice:
//   POSEMB_SIMD=baseline   the build's baseline path (no dispatch)
//   POSEMB_SIMD=avx2       that target (also sse4, avx512); it must be one simd_targets() lists
//   unset, empty or best   the best target of this CPU
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace posemb {

// The target the kernels of this process use. Throws std::invalid_argument when POSEMB_SIMD
// names no target or one this build or this CPU lacks (the message lists the valid names).
std::string simd_target();

// The targets this build has and this CPU runs, best first; the last is "baseline".
std::vector<std::string> simd_targets();

// From now on the kernels use target `name`, as POSEMB_SIMD=name would: one of simd_targets(),
// or "best"; "" returns to POSEMB_SIMD's choice. For programs that compare targets in one
// process (`posemb bench --all-targets`); never call it while a kernel runs on another thread.
// Throws std::invalid_argument, listing the valid names, for a target this build or CPU lacks.
void set_simd_target(std::string_view name);

}  // namespace posemb
