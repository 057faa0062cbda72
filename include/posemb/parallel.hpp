// posemb/parallel.hpp: the one policy for when posemb's loops use more than the calling thread.
//
//   #pragma omp parallel for if (posemb::worth_parallel(rows * cols))
//
// Below kParallelMinWork elements (1 MiB of floats) a loop runs on the calling thread: waking a
// team of threads costs more than it saves, and far more on a busy machine. Results never depend
// on the thread count, so this policy changes speed only.
#pragma once

#include <cstddef>

namespace posemb {

inline constexpr std::size_t kParallelMinWork = std::size_t{1} << 18;

// True when a loop touching `elements` elements is worth running on several threads.
constexpr bool worth_parallel(std::size_t elements) noexcept {
  return elements >= kParallelMinWork;
}

}  // namespace posemb
