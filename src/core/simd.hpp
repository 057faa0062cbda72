// Internal: runtime SIMD dispatch for posemb's kernels (Google Highway, dynamic dispatch).
//
// A kernel file is compiled once per target with hwy/foreach_target.h and exports its per-target
// functions with HWY_EXPORT; POSEMB_DISPATCH(Fn) is the version of Fn for the target chosen for
// this process (posemb/simd.hpp: the best the CPU runs, or the one POSEMB_SIMD names). Unlike
// HWY_DYNAMIC_DISPATCH it does not consult Highway's process-wide state, so the tests can switch
// targets with set_simd_target. The macro lives in the public posemb/simd_dispatch.hpp, so that
// clients (the lab) dispatch their own kernels through the same choice. docs/architecture.md
// ("a kernel") shows the whole pattern.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/simd_dispatch.hpp"  // POSEMB_DISPATCH

namespace posemb::detail {

// The index, in a HWY_EXPORT table, of the chosen target. Throws std::invalid_argument when
// POSEMB_SIMD is invalid (see posemb::simd_target).
std::size_t simd_table_index();

// For tests: makes the kernels use target `name` (one of posemb::simd_targets()) from now on;
// "" returns to the environment's choice. Throws std::invalid_argument for another name. Not to
// be called while a kernel runs.
void set_simd_target(std::string_view name);

}  // namespace posemb::detail
