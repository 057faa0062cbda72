// Internal: runtime SIMD dispatch for posemb's kernels (Google Highway, dynamic dispatch).
//
// A kernel file is compiled once per target with hwy/foreach_target.h and exports its per-target
// functions with HWY_EXPORT; POSEMB_DISPATCH(Fn) is the version of Fn for the target chosen for
// this process (posemb/simd.hpp: the best the CPU runs, or the one POSEMB_SIMD names). Unlike
// HWY_DYNAMIC_DISPATCH it does not consult Highway's process-wide state, so the tests can switch
// targets with set_simd_target. docs/architecture.md ("a kernel") shows the whole pattern.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace posemb::detail {

// The index, in a HWY_EXPORT table, of the chosen target. Throws std::invalid_argument when
// POSEMB_SIMD is invalid (see posemb::simd_target).
std::size_t simd_table_index();

// For tests: makes the kernels use target `name` (one of posemb::simd_targets()) from now on;
// "" returns to the environment's choice. Throws std::invalid_argument for another name. Not to
// be called while a kernel runs.
void set_simd_target(std::string_view name);

}  // namespace posemb::detail

// The chosen target's version of a function exported with HWY_EXPORT in the same file. Use after
// including hwy/highway.h, in the file's HWY_ONCE section.
#if defined(HWY_TARGETS) && ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
#define POSEMB_DISPATCH(FUNC_NAME) HWY_STATIC_DISPATCH(FUNC_NAME)
#else
#define POSEMB_DISPATCH(FUNC_NAME) \
  (*(HWY_DISPATCH_TABLE(FUNC_NAME)[::posemb::detail::simd_table_index()]))
#endif
