// posemb::parallel_for (posemb/parallel.hpp): every index exactly once for any size, grain and
// thread count; small work on the calling thread (streaming loops counted in bytes); nested calls,
// calls from inside an OpenMP region and calls from several threads at once. parallel_for_slots:
// slots in range and never shared by two chunks running at once, one contiguous share of the
// chunks per thread, and no chunk for a helper on the caller's CPU. parallel_tasks: every task
// once, at most `concurrency` at a time, nested loops alone on their thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "posemb/parallel.hpp"

namespace posemb {
namespace {

// Counts how often each index is visited; also records whether a chunk ran off the caller.
struct Visits {
  explicit Visits(std::size_t n) : count(n) {}
  std::vector<std::atomic<int>> count;
  std::atomic<int> other_threads{0};
  bool each_once() const {
    for (const auto& c : count) {
      if (c.load() != 1) return false;
    }
    return true;
  }
};

void visit(Visits& v, std::size_t n, std::size_t grain, std::size_t work) {
  const auto caller = std::this_thread::get_id();
  parallel_for(n, grain, work, [&](std::size_t begin, std::size_t end) {
    ASSERT_LT(begin, end);
    ASSERT_LE(end, n);
    // chunks of `grain` indices, or the whole range on the calling thread
    EXPECT_TRUE(end - begin <= (grain == 0 ? 1 : grain) || (begin == 0 && end == n));
    for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
    if (std::this_thread::get_id() != caller) v.other_threads.fetch_add(1);
  });
}

// Sets the CPU affinity of every thread of the process (helpers included) to `set`.
void set_process_affinity(const cpu_set_t& set) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    sched_setaffinity(tid, sizeof(set), &set);
  }
}

// Puts the calling thread on one allowed CPU and every other thread of the process (the pool's
// helpers) on another, for as long as it lives, so that a helper never finds itself on the
// caller's CPU, where it takes no parallel_for chunk: the tests that need a helper to run chunks
// then hold on a loaded machine too. With a single allowed CPU it changes nothing (active()
// false), and those tests check only what does not need a helper.
class CallerAndHelpersApart {
 public:
  CallerAndHelpersApart() {
    omp_set_num_threads(2);
    parallel_for(64, 1, kParallelMinWork, [](std::size_t, std::size_t) {});  // helpers exist
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
      if (CPU_ISSET(c, &saved_)) cpus.push_back(c);
    }
    if (cpus.size() < 2) return;
    cpu_set_t mine, theirs;
    CPU_ZERO(&mine);
    CPU_SET(cpus[0], &mine);
    CPU_ZERO(&theirs);
    CPU_SET(cpus[1], &theirs);
    set_process_affinity(theirs);
    sched_setaffinity(0, sizeof(mine), &mine);
    active_ = true;
  }
  ~CallerAndHelpersApart() {
    if (active_) set_process_affinity(saved_);
  }
  CallerAndHelpersApart(const CallerAndHelpersApart&) = delete;
  CallerAndHelpersApart& operator=(const CallerAndHelpersApart&) = delete;
  bool active() const { return active_; }

 private:
  cpu_set_t saved_{};
  bool active_ = false;
};

TEST(ParallelFor, VisitsEveryIndexExactlyOnceForAnySizeGrainAndThreadCount) {
  for (int threads : {1, 2, 3, 5}) {
    omp_set_num_threads(threads);
    for (std::size_t n : {0u, 1u, 2u, 7u, 64u, 1000u, 4099u}) {
      for (std::size_t grain : {0u, 1u, 3u, 64u, 5000u}) {
        Visits v(n);
        visit(v, n, grain, kParallelMinWork);
        EXPECT_TRUE(v.each_once()) << "threads " << threads << " n " << n << " grain " << grain;
        if (threads == 1) {
          EXPECT_EQ(v.other_threads.load(), 0);
        }
      }
    }
  }
  omp_set_num_threads(2);
}

TEST(ParallelFor, SmallWorkRunsOnTheCallingThreadAsOneChunk) {
  omp_set_num_threads(2);
  int calls = 0;
  const auto caller = std::this_thread::get_id();
  parallel_for(1000, 10, kParallelMinWork - 1, [&](std::size_t begin, std::size_t end) {
    ++calls;
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 1000u);
    EXPECT_EQ(std::this_thread::get_id(), caller);
  });
  EXPECT_EQ(calls, 1);
}

// Helpers block the asynchronous signals (SIGINT, SIGTERM, SIGHUP, ...), so a process-directed
// signal runs the application's handler on its own thread; the calling thread's mask is kept.
TEST(ParallelFor, HelpersBlockAsynchronousSignalsAndTheCallersMaskIsKept) {
  const CallerAndHelpersApart apart;
  sigset_t before;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &before), 0);
  ASSERT_EQ(sigismember(&before, SIGHUP), 0);
  std::atomic<int> helper_chunks{0}, unblocked{0}, sync_blocked{0};
  const auto caller = std::this_thread::get_id();
  for (int attempt = 0; attempt < 200 && helper_chunks.load() == 0; ++attempt) {
    parallel_for(64, 1, kParallelMinWork, [&](std::size_t, std::size_t) {
      if (std::this_thread::get_id() == caller) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // leave chunks to a helper
        return;
      }
      sigset_t mine;
      pthread_sigmask(SIG_BLOCK, nullptr, &mine);
      ++helper_chunks;
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE}) {
        if (sigismember(&mine, sig) != 1) ++unblocked;
      }
      for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
        if (sigismember(&mine, sig) == 1) ++sync_blocked;
      }
    });
  }
  if (apart.active()) {
    ASSERT_GT(helper_chunks.load(), 0) << "no chunk ran on a helper";
  }
  EXPECT_EQ(unblocked.load(), 0) << "a helper may receive a process-directed signal";
  EXPECT_EQ(sync_blocked.load(), 0) << "a helper blocks a synchronous signal";
  sigset_t after;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &after), 0);
  EXPECT_EQ(sigismember(&after, SIGHUP), 0);
  EXPECT_EQ(sigismember(&after, SIGINT), 0);
}

// Streaming loops count bytes: below 8 MiB moved (kParallelMinStreamBytes) they stay on the
// calling thread, from 8 MiB on they are worth a second thread, as the header states.
TEST(ParallelFor, StreamingWorkIsParallelFrom8MiBOfTraffic) {
  constexpr std::size_t MiB = std::size_t{1} << 20;
  static_assert(kParallelMinStreamBytes == 8 * MiB);
  EXPECT_EQ(detail::min_stream_bytes(), 8 * MiB);
  EXPECT_EQ(streaming_work(0), 0u);
  EXPECT_EQ(streaming_work(31), 0u);
  EXPECT_EQ(streaming_work(32), 1u);
  EXPECT_FALSE(worth_parallel_streaming(8 * MiB - 1));
  EXPECT_TRUE(worth_parallel_streaming(8 * MiB));
  EXPECT_TRUE(worth_parallel_streaming(std::size_t{1} << 40));
  // As elements, loops are parallel from 1 MiB of floats. The lab's add_into (x and y of
  // (4096, 128) read, x written: 6 MiB) is parallel as elements and stays on one thread as a
  // streaming loop; RoPE on GPT-2-small's queries (B=4 T=1024 H=12 D=64 floats, read and
  // written: 24 MiB) is parallel either way.
  const std::size_t add_into = 3 * 4096 * 128 * sizeof(float);
  const std::size_t rope = 2 * 4 * 1024 * 12 * 64 * sizeof(float);
  EXPECT_TRUE(worth_parallel(add_into / sizeof(float)));
  EXPECT_FALSE(worth_parallel_streaming(add_into));
  EXPECT_TRUE(worth_parallel(rope / sizeof(float)));
  EXPECT_TRUE(worth_parallel_streaming(rope));
}

// A test lowers the streaming threshold for as long as its guard lives (never below
// kParallelMinWork bytes), and the guard puts back what was there.
TEST(ParallelFor, ScopedMinStreamBytesLowersTheThresholdWhileItLives) {
  constexpr std::size_t MiB = std::size_t{1} << 20;
  {
    const detail::ScopedMinStreamBytes outer(4 * MiB);
    EXPECT_TRUE(worth_parallel_streaming(4 * MiB));
    EXPECT_FALSE(worth_parallel_streaming(4 * MiB - 1));
    {
      const detail::ScopedMinStreamBytes inner(1);
      EXPECT_EQ(detail::min_stream_bytes(), kParallelMinWork);
      EXPECT_TRUE(worth_parallel_streaming(kParallelMinWork));
    }
    EXPECT_EQ(detail::min_stream_bytes(), 4 * MiB);
  }
  EXPECT_EQ(detail::min_stream_bytes(), kParallelMinStreamBytes);
  EXPECT_FALSE(worth_parallel_streaming(4 * MiB));
}

// parallel_for given streaming_work: one call on the calling thread below the threshold, and
// chunks (some on a helper) above it.
TEST(ParallelFor, StreamingWorkBelowTheThresholdRunsOnTheCallingThread) {
  const CallerAndHelpersApart apart;
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(4096, 16, streaming_work(kParallelMinStreamBytes - 1),
               [&](std::size_t begin, std::size_t end) {
                 ++calls;
                 EXPECT_EQ(begin, 0u);
                 EXPECT_EQ(end, 4096u);
                 EXPECT_EQ(std::this_thread::get_id(), caller);
               });
  EXPECT_EQ(calls, 1);
  int helped = 0;
  for (int attempt = 0; attempt < 50 && helped == 0; ++attempt) {
    Visits v(256);
    parallel_for(256, 1, streaming_work(kParallelMinStreamBytes),
                 [&](std::size_t begin, std::size_t end) {
                   for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
                   if (std::this_thread::get_id() != caller) v.other_threads.fetch_add(1);
                   std::this_thread::sleep_for(std::chrono::microseconds(100));
                 });
    EXPECT_TRUE(v.each_once());
    helped = v.other_threads.load();
  }
  if (apart.active()) {
    EXPECT_GT(helped, 0);
  }
}

// With two threads and enough chunks that each takes a while, a helper takes some of them.
TEST(ParallelFor, UsesAHelperThreadWhenThereIsEnoughWork) {
  const CallerAndHelpersApart apart;
  int helped = 0;
  for (int attempt = 0; attempt < 50 && helped == 0; ++attempt) {
    Visits v(256);
    const auto caller = std::this_thread::get_id();
    parallel_for(256, 1, kParallelMinWork, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
      if (std::this_thread::get_id() != caller) v.other_threads.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    EXPECT_TRUE(v.each_once());
    helped = v.other_threads.load();
  }
  if (apart.active()) {
    EXPECT_GT(helped, 0);
  }
}

TEST(ParallelFor, NestedCallsAndCallsInsideAnOpenMpRegionRunInline) {
  omp_set_num_threads(2);
  std::vector<std::atomic<int>> count(64 * 64);
  parallel_for(64, 1, kParallelMinWork, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t i = b0; i < b1; ++i) {
      EXPECT_EQ(parallel_threads(), 1u);  // inside a chunk: one thread
      parallel_for(64, 4, kParallelMinWork, [&](std::size_t c0, std::size_t c1) {
        for (std::size_t j = c0; j < c1; ++j) count[i * 64 + j].fetch_add(1);
      });
    }
  });
  for (const auto& c : count) EXPECT_EQ(c.load(), 1);

  // Inside an active OpenMP team each member runs its own loops alone.
  std::atomic<int> alone{0}, wrong{0}, team{0};
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    team = omp_get_num_threads();
    if (parallel_threads() == 1) alone.fetch_add(1);
    Visits v(300);
    visit(v, 300, 7, kParallelMinWork);
    if (!v.each_once() || (team > 1 && v.other_threads.load() != 0)) wrong.fetch_add(1);
  }
  if (team > 1) {
    EXPECT_EQ(alone.load(), team.load());
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ParallelFor, ConcurrentCallersFromSeveralThreadsEachGetEveryIndexOnce) {
  omp_set_num_threads(2);
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        Visits v(97);
        visit(v, 97, 3, kParallelMinWork);
        if (!v.each_once()) bad.fetch_add(1);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// The chunks go in one contiguous share per thread: the caller starts on chunk 0 and a helper on
// the first chunk of its share; each thread takes the chunks of a share in increasing order, and
// a thread that runs out of its own share goes on with what is left of the others'.
TEST(ParallelForSlots, EachThreadStartsOnItsOwnShareAndGoesThroughItInOrder) {
  const CallerAndHelpersApart apart;
  constexpr std::size_t n = 64;
  bool helper_seen = false;
  for (int attempt = 0; attempt < 50 && !helper_seen; ++attempt) {
    std::vector<std::size_t> by_slot[2];
    std::atomic<int> bad_slot{0};
    Visits v(n);
    parallel_for_slots(n, 1, kParallelMinWork, 2,
                       [&](std::size_t begin, std::size_t end, std::size_t slot) {
                         if (slot >= 2) {
                           bad_slot.fetch_add(1);
                           return;
                         }
                         by_slot[slot].push_back(begin);  // one thread per slot at a time
                         for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
                         std::this_thread::sleep_for(std::chrono::microseconds(50));
                       });
    ASSERT_EQ(bad_slot.load(), 0);
    ASSERT_TRUE(v.each_once());
    ASSERT_FALSE(by_slot[0].empty());
    EXPECT_EQ(by_slot[0].front(), 0u) << "the caller starts on its share's first chunk";
    for (const auto& chunks : by_slot) {
      // increasing within each share: [0, n/2) and [n/2, n)
      for (std::size_t i = 1; i < chunks.size(); ++i) {
        if ((chunks[i - 1] < n / 2) == (chunks[i] < n / 2)) {
          EXPECT_LT(chunks[i - 1], chunks[i])
              << "chunk " << chunks[i] << " after " << chunks[i - 1];
        }
      }
    }
    if (!by_slot[1].empty()) {
      helper_seen = true;
      // The helper starts on its own share, which the caller only reaches after its own.
      EXPECT_GE(by_slot[1].front(), n / 2);
      const auto caller_left = std::find_if(by_slot[0].begin(), by_slot[0].end(),
                                            [&](std::size_t k) { return k >= n / 2; });
      EXPECT_TRUE(
          std::all_of(by_slot[0].begin(), caller_left, [&](std::size_t k) { return k < n / 2; }));
    }
  }
  if (apart.active()) {
    EXPECT_TRUE(helper_seen) << "no chunk ran on a helper in 50 attempts";
  }
}

// A helper that runs on the caller's CPU takes no chunk (the two would only take turns there):
// with every thread of the process on one CPU, the caller runs every chunk, and none is lost.
TEST(ParallelFor, AHelperOnTheCallersCpuRunsNoChunk) {
  omp_set_num_threads(2);
  parallel_for(64, 1, kParallelMinWork, [](std::size_t, std::size_t) {});  // helpers exist
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  set_process_affinity(one);
  int other = 0;
  for (int round = 0; round < 5; ++round) {
    Visits v(128);
    const auto caller = std::this_thread::get_id();
    parallel_for(128, 1, kParallelMinWork, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
      if (std::this_thread::get_id() != caller) v.other_threads.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(30));  // the helper may run meanwhile
    });
    EXPECT_TRUE(v.each_once());
    other += v.other_threads.load();
  }
  set_process_affinity(before);
  EXPECT_EQ(other, 0) << "a helper on the caller's CPU ran chunks";
}

// A helper that stops in the middle of a chunk for long (as when another process takes its core)
// makes the caller wait; the next parallel_for calls then run on the caller alone for a while
// (4 ms after the first such wait), and later calls use the helpers again.
TEST(ParallelFor, AfterALongWaitForAHelperTheNextCallsRunOnTheCaller) {
  using Clock = std::chrono::steady_clock;
  const CallerAndHelpersApart apart;
  bool judged = false;
  for (int attempt = 0; attempt < 50 && !judged; ++attempt) {
    std::atomic<int> helper_chunks{0};
    parallel_for_slots(64, 1, kParallelMinWork, 2, [&](std::size_t, std::size_t, std::size_t slot) {
      if (slot != 0 && helper_chunks.fetch_add(1) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    const Clock::time_point after = Clock::now();
    if (helper_chunks.load() == 0) continue;  // no helper joined: nothing was waited for
    std::atomic<int> next_on_helpers{0};
    // The call decides before its first chunk runs: judged only when that chunk started within
    // 3 ms of the long wait, well inside the 4 ms pause (a descheduled caller starts later).
    std::atomic<bool> first_seen{false};
    Clock::time_point first_chunk{};
    parallel_for_slots(64, 1, kParallelMinWork, 2, [&](std::size_t, std::size_t, std::size_t slot) {
      if (!first_seen.exchange(true)) first_chunk = Clock::now();
      if (slot != 0) next_on_helpers.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    const bool in_time = first_chunk - after < std::chrono::milliseconds(3);
    if (!in_time) continue;  // started too late to judge
    EXPECT_EQ(next_on_helpers.load(), 0) << "the call after a long wait used a helper";
    judged = true;
  }
  if (apart.active()) {
    EXPECT_TRUE(judged) << "no helper ran a chunk in 50 attempts";
  }
  // Past the pause, calls use the helpers again. On a loaded machine the attempts above can
  // each have waited long, doubling the pause up to its most (256 ms): wait that out, then
  // try for a few seconds (a helper that is descheduled meanwhile may start the pause again).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  int helped = 0;
  while (helped == 0 && Clock::now() < give_up) {
    std::atomic<int> on_helpers{0};
    parallel_for_slots(64, 1, kParallelMinWork, 2, [&](std::size_t, std::size_t, std::size_t slot) {
      if (slot != 0) on_helpers.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
    helped = on_helpers.load();
  }
  if (apart.active()) {
    EXPECT_GT(helped, 0) << "the helpers were not used again after the pause";
  }
}

// Each slot is held by one running chunk at a time: a chunk marks its slot busy, works a while,
// and frees it; a second chunk finding the slot busy would be a collision.
TEST(ParallelForSlots, SlotsAreBelowTheCountAndNeverSharedByRunningChunks) {
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (std::size_t slots : {1u, 2u, 3u, 8u}) {
      std::vector<std::atomic<int>> busy(slots);
      std::atomic<int> collisions{0}, out_of_range{0}, other{0};
      Visits v(200);
      const auto caller = std::this_thread::get_id();
      parallel_for_slots(200, 1, kParallelMinWork, slots,
                         [&](std::size_t begin, std::size_t end, std::size_t slot) {
                           if (slot >= slots) {
                             out_of_range.fetch_add(1);
                             return;
                           }
                           if (busy[slot].exchange(1) != 0) collisions.fetch_add(1);
                           for (std::size_t i = begin; i < end; ++i) v.count[i].fetch_add(1);
                           if (std::this_thread::get_id() != caller) other.fetch_add(1);
                           std::this_thread::sleep_for(std::chrono::microseconds(20));
                           busy[slot].store(0);
                         });
      EXPECT_EQ(out_of_range.load(), 0) << "threads " << threads << " slots " << slots;
      EXPECT_EQ(collisions.load(), 0) << "threads " << threads << " slots " << slots;
      EXPECT_TRUE(v.each_once());
      if (slots == 1 || threads == 1) {
        EXPECT_EQ(other.load(), 0);
      }
    }
  }
  omp_set_num_threads(2);
}

TEST(ParallelForSlots, SmallWorkIsOneCallWithSlotZero) {
  omp_set_num_threads(2);
  int calls = 0;
  parallel_for_slots(500, 10, kParallelMinWork - 1, 4,
                     [&](std::size_t begin, std::size_t end, std::size_t slot) {
                       ++calls;
                       EXPECT_EQ(begin, 0u);
                       EXPECT_EQ(end, 500u);
                       EXPECT_EQ(slot, 0u);
                     });
  EXPECT_EQ(calls, 1);
}

// Records how many tasks run at once and the most seen.
struct Concurrency {
  std::atomic<int> now{0}, most{0};
  void enter() {
    const int n = now.fetch_add(1) + 1;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
  void leave() { now.fetch_sub(1); }
};

TEST(ParallelTasks, EveryTaskOnceAtMostConcurrencyAtATime) {
  omp_set_num_threads(2);
  for (std::size_t concurrency : {0u, 1u, 2u, 3u}) {
    for (std::size_t n : {0u, 1u, 2u, 5u, 17u}) {
      Visits v(n);
      Concurrency c;
      std::atomic<int> not_alone{0};
      parallel_tasks(n, concurrency, [&](std::size_t i) {
        c.enter();
        v.count[i].fetch_add(1);
        // While tasks run concurrently, a loop inside one runs on its thread alone.
        if (c.now.load() > 1 && parallel_threads() != 1) not_alone.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        c.leave();
      });
      EXPECT_TRUE(v.each_once()) << "n " << n << " concurrency " << concurrency;
      const int allowed = static_cast<int>(concurrency == 0 ? 2 : concurrency);
      EXPECT_LE(c.most.load(), allowed) << "n " << n << " concurrency " << concurrency;
      EXPECT_EQ(not_alone.load(), 0);
    }
  }
}

// An explicit concurrency above OpenMP's thread count is honoured (the sweep's --parallel-runs):
// with 3 slow tasks at concurrency 3 and OMP_NUM_THREADS=1, at some point two run at once.
TEST(ParallelTasks, ConcurrencyAboveTheThreadCountIsHonoured) {
  omp_set_num_threads(1);
  int most = 0;
  for (int attempt = 0; attempt < 20 && most < 2; ++attempt) {
    Concurrency c;
    parallel_tasks(3, 3, [&](std::size_t) {
      c.enter();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      c.leave();
    });
    most = std::max(most, c.most.load());
  }
  EXPECT_GE(most, 2);
  omp_set_num_threads(2);
}

TEST(ParallelTasks, InsideAChunkTheyRunInOrderOnTheCallingThread) {
  omp_set_num_threads(2);
  std::atomic<int> wrong{0};
  parallel_for(4, 1, kParallelMinWork, [&](std::size_t, std::size_t) {
    const auto me = std::this_thread::get_id();
    std::vector<std::size_t> seen;
    parallel_tasks(6, 2, [&](std::size_t i) {
      if (std::this_thread::get_id() != me) wrong.fetch_add(1);
      seen.push_back(i);
    });
    if (seen != std::vector<std::size_t>{0, 1, 2, 3, 4, 5}) wrong.fetch_add(1);
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ParallelThreads, SetParallelThreadsIsWhatParallelThreadsReports) {
  set_parallel_threads(3);
  EXPECT_EQ(parallel_threads(), 3u);
  EXPECT_EQ(omp_get_max_threads(), 3);
  set_parallel_threads(0);
  EXPECT_EQ(parallel_threads(), 1u);
  set_parallel_threads(2);
  EXPECT_EQ(parallel_threads(), 2u);
}

}  // namespace
}  // namespace posemb
