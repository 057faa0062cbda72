// posemb/simd_dispatch.hpp: run your own Google Highway kernels on the SIMD target posemb chose.
//
//   // my_kernels.cpp, compiled once per target with hwy/foreach_target.h (Highway 1.x, the
//   // same Highway posemb was built against, and the same HWY_DISABLED_TARGETS=HWY_SSSE3)
//   #include <hwy/highway.h>
//   #include "posemb/simd_dispatch.hpp"
//   ... namespace my::HWY_NAMESPACE { void ScaleRow(float* x, std::size_t n, float a); } ...
//   #if HWY_ONCE
//   HWY_EXPORT(ScaleRow);
//   void scale_row(float* x, std::size_t n, float a) { POSEMB_DISPATCH(ScaleRow)(x, n, a); }
//   #endif
//
// For code built against the same Highway (1.x) as posemb that wants its kernels on posemb's
// target (posemb/simd.hpp) rather than on Highway's own choice: POSEMB_SIMD and the choice the
// tests make with detail::set_simd_target then switch those kernels too, so a program's kernels
// and posemb's always run the same instruction set. posemb's lab (lab/model/kernels_simd.cpp) is
// such a client. Compile such a file for at least posemb's targets (Highway's default list with
// HWY_DISABLED_TARGETS=HWY_SSSE3, as posemb's src/CMakeLists.txt does): the index may name any
// of them, and a call through a table that lacks posemb's target throws std::logic_error naming
// the target (it never calls a null pointer). This header includes nothing from Highway: a
// program that does not use the macro needs no Highway at all.
#pragma once

#include <cstddef>

namespace posemb {

// The index, in a Highway HWY_EXPORT table (HWY_DISPATCH_TABLE), of the target that
// posemb::simd_target() names. Throws std::invalid_argument when POSEMB_SIMD names no target this
// build and CPU run (like posemb::simd_target()). Cheap after the first call (an atomic load).
std::size_t simd_dispatch_index();

namespace detail {

// Throws std::logic_error: a kernel's dispatch table has no function at `index` (its file was not
// compiled for posemb's target).
[[noreturn]] void throw_missing_simd_target(std::size_t index);

// table[index], checked: what POSEMB_DISPATCH calls through.
template <class Fn>
Fn checked_dispatch(Fn const* table, std::size_t index) {
  if (table[index] == nullptr) throw_missing_simd_target(index);
  return table[index];
}

}  // namespace detail
}  // namespace posemb

// POSEMB_DISPATCH(Fn): the version of Fn, exported with HWY_EXPORT in the same file, for posemb's
// target. Use after including hwy/highway.h, in the file's HWY_ONCE section. Unlike
// HWY_DYNAMIC_DISPATCH it does not consult Highway's process-wide choice.
#if defined(HWY_TARGETS) && ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
#define POSEMB_DISPATCH(FUNC_NAME) HWY_STATIC_DISPATCH(FUNC_NAME)
#else
#define POSEMB_DISPATCH(FUNC_NAME)                                    \
  (*::posemb::detail::checked_dispatch(HWY_DISPATCH_TABLE(FUNC_NAME), \
                                       ::posemb::simd_dispatch_index()))
#endif
