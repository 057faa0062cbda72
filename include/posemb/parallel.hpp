// posemb/parallel.hpp: the one policy for when and how posemb's loops use more than the calling
// thread: the library's kernels, the lab's, the renderer's and the lab's concurrent runs all go
// through it (no OpenMP pragma anywhere else).
//
//   // rows [0, n) in chunks of 16 rows; n * cols elements of work decide whether to go parallel
//   posemb::parallel_for(n, 16, n * cols, [&](std::size_t begin, std::size_t end) {
//     for (std::size_t r = begin; r < end; ++r) scale_row(r);
//   });
//
//   // the same with one scratch buffer per thread: slot < slots, distinct among running chunks
//   const std::size_t slots = posemb::parallel_threads();
//   std::vector<float> scratch(slots * per_thread);
//   posemb::parallel_for_slots(n, 16, n * cols, slots,
//                              [&](std::size_t begin, std::size_t end, std::size_t slot) {
//     float* mine = scratch.data() + slot * per_thread;
//     for (std::size_t r = begin; r < end; ++r) transform_row(r, mine);
//   });
//
//   // a few large independent jobs (training runs, evaluated lengths), up to 4 at a time
//   posemb::parallel_tasks(jobs.size(), 4, [&](std::size_t i) { results[i] = run(jobs[i]); });
//
//   // a streaming loop (a few operations per element: limited by memory, not arithmetic),
//   // given as the bytes it reads and writes
//   posemb::parallel_for(n, 16, posemb::streaming_work(2 * n * cols * sizeof(float)),
//                        [&](std::size_t begin, std::size_t end) { add_rows(begin, end); });
//
// Small work stays on the calling thread: below kParallelMinWork elements (1 MiB of floats),
// waking helpers costs more than it saves, and far more on a busy machine.
//
// Streaming loops count their work in bytes moved: streaming_work(bytes) reaches
// kParallelMinWork only at kParallelMinStreamBytes (8 MiB) of reads and writes. Smaller ones
// take a few tens of microseconds on one core, where a second thread saves little beside what
// starting it costs. Larger ones gain from a second core once each thread streams a long run of
// its own (below): on a 2-core machine the rotary rotation and the position-only add and sum at
// GPT-2-small's sizes (24 to 28 MB moved) ran 1.4-2.7x faster on 2 threads than on 1 over
// several runs, and with another process busy on one of the cores, their 2-thread time stayed
// within 1.16x of their 1-thread time (docs/layer.md).
//
// Larger work is cut into chunks of `grain` indices, and the chunks into one contiguous share
// per thread (the calling thread and up to parallel_threads() - 1 helper threads). Each thread
// takes the chunks of its share one at a time, in order, then the chunks left in the others'
// shares, until none is left (dynamic scheduling): a streaming loop reads one long run per
// thread, which the hardware prefetcher follows. The caller never waits for a helper that has
// not started: a helper whose core is busy with another process takes fewer chunks, or none, and
// the caller does the rest; a helper that finds itself on the caller's core takes no more
// (parallel_for only: parallel_tasks' jobs may share a core on purpose). The
// caller waits only for chunks a helper has already taken. When that wait was long (more than
// 0.2 ms and more than a quarter of the caller's own time in the call: most likely the helper
// lost its core to another process in the middle of a chunk), the next parallel_for calls run on
// the calling thread alone for 4 ms, doubling with each such wait up to 256 ms; a call that a
// helper joined without such a wait ends the pause's doubling. Helpers spin for at most about 50
// microseconds after a job (to catch the next one) and then sleep; waking a sleeping one took
// 0.1-0.2 ms on a 2-core virtual machine, which the caller does not wait for.
//
// The thread count is OpenMP's (OMP_NUM_THREADS, or set_parallel_threads). A call made from
// inside an OpenMP parallel region, from a chunk or task of another parallel_for /
// parallel_tasks, or while another thread's call holds the helpers, runs on the calling thread
// alone: the loops inside a parallel task run serially.
//
// Signals: helper threads block the asynchronous signals (SIGINT, SIGTERM, SIGHUP, SIGUSR1, ...),
// so a signal sent to the process runs its handler on one of the application's threads.
//
// Determinism: which thread runs a chunk varies from run to run, so a chunk must write outputs
// no other chunk writes, and compute them the same way whoever runs it. Then results never
// depend on the thread count; this policy changes speed only.
#pragma once

#include <cstddef>
#include <type_traits>

namespace posemb {

inline constexpr std::size_t kParallelMinWork = std::size_t{1} << 18;

// True when a loop touching `elements` elements is worth running on several threads.
constexpr bool worth_parallel(std::size_t elements) noexcept {
  return elements >= kParallelMinWork;
}

// Streaming loops (see above): at least this many bytes read and written to go parallel.
inline constexpr std::size_t kParallelMinStreamBytes = std::size_t{8} << 20;

namespace detail {
// The streaming threshold in effect: kParallelMinStreamBytes unless a test changed it.
std::size_t min_stream_bytes() noexcept;

// For tests: while alive, streaming loops go parallel from `bytes` (at least kParallelMinWork)
// instead of kParallelMinStreamBytes, so that loops of a test's size run on several threads.
// Process-wide; not to be created while a loop runs.
class ScopedMinStreamBytes {
 public:
  explicit ScopedMinStreamBytes(std::size_t bytes) noexcept;
  ~ScopedMinStreamBytes();
  ScopedMinStreamBytes(const ScopedMinStreamBytes&) = delete;
  ScopedMinStreamBytes& operator=(const ScopedMinStreamBytes&) = delete;

 private:
  std::size_t saved_;
};
}  // namespace detail

// parallel_for's work for a streaming loop that reads and writes `bytes` bytes in all: one unit
// per kParallelMinStreamBytes / kParallelMinWork (256) bytes, so that worth_parallel holds from
// kParallelMinStreamBytes on.
inline std::size_t streaming_work(std::size_t bytes) noexcept {
  return bytes / (detail::min_stream_bytes() / kParallelMinWork);
}

// True when a streaming loop moving `bytes` bytes is worth running on several threads.
inline bool worth_parallel_streaming(std::size_t bytes) noexcept {
  return worth_parallel(streaming_work(bytes));
}

// The most threads (the caller included) a parallel_for started from this thread may use: 1
// inside a chunk or task, or inside an OpenMP parallel region; else OpenMP's thread count.
std::size_t parallel_threads() noexcept;

// Sets the thread count parallel_threads() reports from now on on the calling thread (OpenMP's
// omp_set_num_threads: other threads keep OMP_NUM_THREADS). n >= 1; 0 is taken as 1.
void set_parallel_threads(std::size_t n) noexcept;

namespace detail {
// True inside a chunk or task of a call above, or inside an OpenMP parallel region.
bool nested() noexcept;

// Runs fn(ctx, k, slot) for every k in [0, n_chunks), each exactly once, on the calling thread
// and up to max_threads - 1 helpers (see above). With `split`, every thread starts on its own
// contiguous share of the chunks (the calling thread on the first), each share started in
// increasing k; without, all chunks are started in increasing k. slot is 0 on the calling
// thread, 1.. on helpers: below max_threads, and distinct among chunks running at the same time.
// Nested (see nested()): all on the calling thread, in increasing k. fn must not throw.
void run_chunks(std::size_t n_chunks, std::size_t max_threads,
                void (*fn)(void* ctx, std::size_t chunk, std::size_t slot), void* ctx, bool split);

// Chunk k of [0, n) in chunks of `grain`.
template <class F>
struct ChunkedBody {
  F* body;
  std::size_t n, grain;
  static void call(void* p, std::size_t k, std::size_t slot) {
    const ChunkedBody& c = *static_cast<const ChunkedBody*>(p);
    const std::size_t begin = k * c.grain;
    const std::size_t end = c.n - begin < c.grain ? c.n : begin + c.grain;
    (*c.body)(begin, end, slot);
  }
};
}  // namespace detail

// Calls body(begin, end, slot) over [0, n) in chunks of `grain` indices (the last may be
// shorter), each index exactly once, on at most `slots` threads (slots >= 1; 0 is taken as 1):
// slot < slots, and no two chunks running at the same time have the same slot, so body may
// use scratch buffer `slot` of `slots`. On several threads when worth_parallel(work) and there
// is more than one chunk, else as body(0, n, 0) on the calling thread. body must not throw.
template <class F>
void parallel_for_slots(std::size_t n, std::size_t grain, std::size_t work, std::size_t slots,
                        F&& body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  const std::size_t chunks = n / grain + (n % grain != 0 ? 1 : 0);
  const std::size_t threads = slots < parallel_threads() ? slots : parallel_threads();
  if (chunks == 1 || !worth_parallel(work) || threads <= 1) {
    body(std::size_t{0}, n, std::size_t{0});
    return;
  }
  using Body = std::remove_reference_t<F>;
  detail::ChunkedBody<Body> ctx{&body, n, grain};
  detail::run_chunks(chunks, threads, &detail::ChunkedBody<Body>::call, &ctx, true);
}

// Calls body(begin, end) over [0, n) in chunks of `grain` indices (the last may be shorter),
// each index exactly once; on several threads when worth_parallel(work) and there is more than
// one chunk, else as body(0, n) on the calling thread. body must not throw.
template <class F>
void parallel_for(std::size_t n, std::size_t grain, std::size_t work, F&& body) {
  parallel_for_slots(
      n, grain, work, parallel_threads(),
      [&body](std::size_t begin, std::size_t end, std::size_t) { body(begin, end); });
}

// Calls task(i) for every i in [0, n), each exactly once, up to `concurrency` at a time (the
// calling thread and concurrency - 1 helpers; 0: parallel_threads()), whatever the size: for a
// few large independent jobs. Tasks start in increasing i (put the longest first) and each
// thread takes the next one when it is done; while tasks run concurrently, the loops inside each
// run on its thread alone. With concurrency 1, one task, or inside a chunk or task of another
// call or an OpenMP region, they run one after another on the calling thread (their loops then
// follow the rules above). task must not throw (catch inside and keep the exception).
template <class F>
void parallel_tasks(std::size_t n, std::size_t concurrency, F&& task) {
  if (n == 0) return;
  if (concurrency == 0) concurrency = parallel_threads();
  // Nested: one thread. Otherwise a concurrency above OpenMP's count is honoured.
  if (detail::nested()) concurrency = 1;
  if (n == 1 || concurrency <= 1) {
    for (std::size_t i = 0; i < n; ++i) task(i);
    return;
  }
  auto body = [&task](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t i = begin; i < end; ++i) task(i);
  };
  detail::ChunkedBody<decltype(body)> ctx{&body, n, 1};
  detail::run_chunks(n, concurrency, &detail::ChunkedBody<decltype(body)>::call, &ctx, false);
}

}  // namespace posemb
