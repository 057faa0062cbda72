// The helper threads behind posemb::parallel_for (posemb/parallel.hpp).
//
// One job at a time. A job is published in `state_`, a 64-bit word holding the job's generation
// (upper 32 bits), a "closed" bit and the number of helpers registered in it. A helper joins the
// current job by incrementing that count with a compare-and-swap that also checks the generation
// and that the job is still open; it then takes chunks until none is left and deregisters. The
// caller takes chunks too; when they run out it closes the job (no helper can join any more) and
// waits only for the helpers that did join. A helper that wakes up late finds the job closed and
// goes back to sleep: nobody waits for it. A helper's slot (the scratch index the job's chunks
// see) is its place in the registration count: helpers that register after the job's last chunk
// was taken run no chunk, so the slots of running chunks never collide.
//
// The chunks: a parallel_for job cuts them into one contiguous share per thread (`ranges_`),
// each with its own counter; a thread takes the chunks of the share of its slot in order, then
// those left in the other shares. A parallel_tasks job has one share that every thread takes
// from, so tasks start in increasing order. In a parallel_for job, a helper that finds itself on
// the caller's CPU (the scheduler put both on one core, the other being busy) takes no more
// chunks: the two would only take turns on that core, and the caller would wait for the
// helper's chunk. (parallel_tasks' jobs may block or share a core on purpose: no such rule.)
#include <omp.h>
#include <sched.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "posemb/parallel.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POSEMB_CPU_RELAX() _mm_pause()
#else
#define POSEMB_CPU_RELAX() ((void)0)
#endif

namespace posemb {
namespace {

// How long a thread spins on a flag before sleeping on it.
constexpr auto kSpin = std::chrono::microseconds(50);

// Spins until pred() or kSpin has passed; returns pred()'s last value.
template <class Pred>
bool spin_until(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    POSEMB_CPU_RELAX();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

thread_local bool t_in_chunk = false;  // this thread is running a chunk of some job

using ChunkFn = void (*)(void* ctx, std::size_t chunk, std::size_t slot);

class Pool {
 public:
  static Pool& instance() {
    // Never destroyed: helpers may still be asleep on its members when the process exits.
    static Pool* pool = new Pool;
    return *pool;
  }

  // Runs the job; false when the helpers are busy with another caller's job, or a parallel_for
  // job comes during a pause after a long wait for a helper (note_wait): run it serially.
  // `split`: one contiguous share of the chunks per thread (else one shared sequence).
  bool run(std::size_t n_chunks, ChunkFn fn, void* ctx, std::size_t helpers, bool split) {
    std::unique_lock<std::mutex> lock(caller_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    const Clock::time_point start = split ? Clock::now() : Clock::time_point{};
    if (split && start < serial_until_) return false;
    grow(helpers);
    fn_ = fn;
    ctx_ = ctx;
    max_helpers_ = helpers;
    const std::size_t shares = split ? std::min(helpers + 1, n_chunks) : 1;
    if (shares > ranges_capacity_) {
      ranges_ = std::make_unique<Range[]>(shares);
      ranges_capacity_ = shares;
    }
    // Shares of n_chunks / shares chunks, the first n_chunks % shares one more.
    const std::size_t base = n_chunks / shares, extra = n_chunks % shares;
    for (std::size_t i = 0, begin = 0; i < shares; ++i) {
      const std::size_t end = begin + base + (i < extra ? 1 : 0);
      ranges_[i].next.store(begin, std::memory_order_relaxed);
      ranges_[i].end = end;
      begin = end;
    }
    n_ranges_ = shares;
    // A parallel_tasks job's tasks may block or be meant to share a core: the same-CPU rule is
    // for parallel_for's compute chunks only.
    caller_cpu_.store(split ? ::sched_getcpu() : -1, std::memory_order_relaxed);
    generation_ += 1;
    state_.store(generation_ << 32, std::memory_order_release);
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();

    take_chunks(0);

    const std::uint64_t before = state_.fetch_or(kClosed, std::memory_order_acq_rel);
    if (count(before) == 0) return true;  // no helper joined: nothing learned
    const Clock::time_point closed = Clock::now();
    wait_for_helpers();
    if (split) note_wait(closed - start, Clock::now() - closed);
    return true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 31;

  // A parallel_for job whose caller waited for a helper's chunk longer than kLongWait and longer
  // than a quarter of its own time in the job: a helper lost its core in the middle of a chunk
  // (another process runs there), and the caller could hand that chunk to nobody. The next jobs
  // run on the caller alone for kFirstBackoff, doubling with each such job up to kMostBackoff;
  // a job that a helper joined without such a wait starts the doubling again.
  static constexpr Clock::duration kLongWait = std::chrono::microseconds(200);
  static constexpr Clock::duration kFirstBackoff = std::chrono::milliseconds(4);
  static constexpr Clock::duration kMostBackoff = std::chrono::milliseconds(256);
  void note_wait(Clock::duration worked, Clock::duration waited) {
    if (waited <= kLongWait || 4 * waited <= worked) {
      backoff_ = Clock::duration::zero();
      return;
    }
    backoff_ =
        backoff_ == Clock::duration::zero() ? kFirstBackoff : std::min(2 * backoff_, kMostBackoff);
    serial_until_ = Clock::now() + backoff_;
  }
  static std::uint64_t count(std::uint64_t s) { return s & (kClosed - 1); }

  // A share of a job's chunks: [next, end), taken from the front.
  struct alignas(64) Range {
    std::atomic<std::size_t> next{0};
    std::size_t end = 0;
  };

  // Chunks of the share of `slot` first, then of the others. False when a helper stopped
  // because it runs on the caller's CPU.
  bool take_chunks(std::size_t slot) {
    t_in_chunk = true;
    const std::size_t shares = n_ranges_;
    for (std::size_t i = 0; i < shares; ++i) {
      Range& r = ranges_[(slot + i) % shares];
      while (r.next.load(std::memory_order_relaxed) < r.end) {
        if (slot != 0 && on_callers_cpu()) {
          t_in_chunk = false;
          return false;
        }
        const std::size_t k = r.next.fetch_add(1, std::memory_order_relaxed);
        if (k >= r.end) break;
        fn_(ctx_, k, slot);
      }
    }
    t_in_chunk = false;
    return true;
  }

  void wait_for_helpers() {
    auto done = [&] { return count(state_.load(std::memory_order_acquire)) == 0; };
    if (spin_until(done)) return;
    for (;;) {
      const std::uint32_t seen = finished_.load(std::memory_order_acquire);
      if (done()) return;
      finished_.wait(seen, std::memory_order_acquire);
    }
  }

  // Starts helpers until there are n (under the caller lock). A helper blocks the asynchronous
  // signals (it inherits the mask it is created with), so that a process-directed signal
  // (SIGINT, SIGTERM, SIGHUP, ...) runs the application's handler on one of its own threads,
  // never on a helper while the application's thread carries on (a handler that cleans up files
  // and ends the process would race with the thread still writing them).
  void grow(std::size_t n) {
    struct BlockedSignals {
      sigset_t old;
      BlockedSignals() {
        sigset_t all;
        ::sigfillset(&all);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) ::sigdelset(&all, sig);
        ::pthread_sigmask(SIG_BLOCK, &all, &old);
      }
      ~BlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &old, nullptr); }
    } const blocked;  // while the helpers are created, on this thread only
    while (helpers_.size() < n) {
      helpers_.emplace_back([this] { helper_loop(); });
      helpers_.back().detach();
    }
  }

  // A helper that left a job because it ran on the caller's CPU sleeps at once instead of
  // spinning: its spinning would take that CPU from the caller.
  void helper_loop() {
    std::uint32_t seen = wake_.load(std::memory_order_acquire);
    bool spin = true;
    for (;;) {
      if (!spin || !spin_until([&] { return wake_.load(std::memory_order_acquire) != seen; })) {
        wake_.wait(seen, std::memory_order_acquire);
      }
      seen = wake_.load(std::memory_order_acquire);
      spin = join_current_job();
    }
  }

  // False when the helper left (or did not join) because it runs on the caller's CPU.
  bool join_current_job() {
    if (on_callers_cpu()) return false;
    std::uint64_t s = state_.load(std::memory_order_acquire);
    do {
      if ((s & kClosed) != 0) return true;
    } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire));
    // Registered: the job's fields stay as they are until this helper leaves.
    const bool stayed = count(s) >= max_helpers_ || take_chunks(count(s) + 1);
    const std::uint64_t before = state_.fetch_sub(1, std::memory_order_acq_rel);
    if ((before & kClosed) != 0 && count(before) == 1) {
      finished_.fetch_add(1, std::memory_order_release);
      finished_.notify_all();
    }
    return stayed;
  }

  bool on_callers_cpu() const {
    const int caller = caller_cpu_.load(std::memory_order_relaxed);
    return caller >= 0 && ::sched_getcpu() == caller;
  }

  std::mutex caller_;                 // one job at a time
  std::vector<std::thread> helpers_;  // detached; sleep on wake_ when idle
  std::uint64_t generation_ = 0;      // caller only
  std::atomic<std::uint64_t> state_{kClosed};
  std::atomic<std::uint32_t> wake_{0};      // bumped for every job
  std::atomic<std::uint32_t> finished_{0};  // bumped when the last helper leaves a closed job
  // The job; written by the caller only while no helper is registered.
  ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t max_helpers_ = 0;
  std::unique_ptr<Range[]> ranges_;  // the job's shares of chunks: n_ranges_ of them
  std::size_t ranges_capacity_ = 0;
  std::size_t n_ranges_ = 0;
  // The CPU the caller ran on when it published its job (-1: unknown).
  std::atomic<int> caller_cpu_{-1};
  // parallel_for jobs run on the caller alone until serial_until_ (note_wait); caller only.
  Clock::time_point serial_until_{};
  Clock::duration backoff_{Clock::duration::zero()};
};

}  // namespace

std::size_t parallel_threads() noexcept {
  if (detail::nested()) return 1;
  return static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
}

void set_parallel_threads(std::size_t n) noexcept {
  constexpr std::size_t kMost = 1 << 20;
  omp_set_num_threads(static_cast<int>(std::clamp<std::size_t>(n, 1, kMost)));
}

namespace detail {
namespace {
std::atomic<std::size_t> g_min_stream_bytes{kParallelMinStreamBytes};
}  // namespace

std::size_t min_stream_bytes() noexcept {
  return g_min_stream_bytes.load(std::memory_order_relaxed);
}

ScopedMinStreamBytes::ScopedMinStreamBytes(std::size_t bytes) noexcept
    : saved_(g_min_stream_bytes.exchange(bytes < kParallelMinWork ? kParallelMinWork : bytes)) {}

ScopedMinStreamBytes::~ScopedMinStreamBytes() {
  g_min_stream_bytes.store(saved_);
}

bool nested() noexcept {
  return t_in_chunk || omp_in_parallel();
}

void run_chunks(std::size_t n_chunks, std::size_t max_threads, ChunkFn fn, void* ctx, bool split) {
  const std::size_t threads = nested() ? 1 : max_threads;
  if (threads > 1 && n_chunks > 1 &&
      Pool::instance().run(n_chunks, fn, ctx, std::min(threads, n_chunks) - 1, split)) {
    return;
  }
  for (std::size_t k = 0; k < n_chunks; ++k) fn(ctx, k, 0);
}

}  // namespace detail
}  // namespace posemb
