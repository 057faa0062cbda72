// posemb/parallel.hpp: the one policy for when and how posemb's loops use more than the calling
// thread.
//
//   // rows [0, n) in chunks of 16 rows; n * cols elements of work decide whether to go parallel
//   posemb::parallel_for(n, 16, n * cols, [&](std::size_t begin, std::size_t end) {
//     for (std::size_t r = begin; r < end; ++r) scale_row(r);
//   });
//
// Small work stays on the calling thread: below kParallelMinWork elements (1 MiB of floats),
// waking helpers costs more than it saves, and far more on a busy machine.
//
// Larger work is cut into chunks of `grain` indices that the calling thread and up to
// parallel_threads() - 1 helper threads take one at a time until none is left (dynamic
// scheduling). The caller never waits for a helper that has not started: a helper whose core is
// busy with another process takes fewer chunks, or none, and the caller does the rest. The
// caller waits only for chunks a helper has already taken. Helpers spin for at most about 50
// microseconds after a job (to catch the next one) and then sleep.
//
// The thread count is OpenMP's (OMP_NUM_THREADS, omp_set_num_threads). A call made from inside
// an OpenMP parallel region, from a chunk of another parallel_for, or while another thread's
// parallel_for holds the helpers, runs on the calling thread alone.
//
// Determinism: which thread runs a chunk varies from run to run, so a chunk must write outputs
// no other chunk writes, and compute them the same way whoever runs it. Then results never
// depend on the thread count; this policy changes speed only.
#pragma once

#include <cstddef>

namespace posemb {

inline constexpr std::size_t kParallelMinWork = std::size_t{1} << 18;

// True when a loop touching `elements` elements is worth running on several threads.
constexpr bool worth_parallel(std::size_t elements) noexcept {
  return elements >= kParallelMinWork;
}

// The most threads (the caller included) a parallel_for started from this thread may use.
std::size_t parallel_threads() noexcept;

namespace detail {
// Runs fn(ctx, k) for every k in [0, n_chunks), each exactly once, on the calling thread and the
// helpers (see above). fn must not throw.
void run_chunks(std::size_t n_chunks, void (*fn)(void* ctx, std::size_t chunk), void* ctx);
}  // namespace detail

// Calls body(begin, end) over [0, n) in chunks of `grain` indices (the last may be shorter),
// each index exactly once; on several threads when worth_parallel(work) and there is more than
// one chunk, else as body(0, n) on the calling thread. body must not throw.
template <class F>
void parallel_for(std::size_t n, std::size_t grain, std::size_t work, F&& body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  const std::size_t chunks = n / grain + (n % grain != 0 ? 1 : 0);
  if (chunks == 1 || !worth_parallel(work) || parallel_threads() == 1) {
    body(std::size_t{0}, n);
    return;
  }
  struct Ctx {
    F* body;
    std::size_t n, grain;
  } ctx{&body, n, grain};
  detail::run_chunks(
      chunks,
      [](void* p, std::size_t k) {
        const Ctx& c = *static_cast<const Ctx*>(p);
        const std::size_t begin = k * c.grain;
        const std::size_t end = c.n - begin < c.grain ? c.n : begin + c.grain;
        (*c.body)(begin, end);
      },
      &ctx);
}

}  // namespace posemb
