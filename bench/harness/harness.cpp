#include "harness/harness.hpp"

#include <emmintrin.h>  // SSE2 (x86-64 baseline): the copy's streaming stores
#include <fcntl.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

#include "posemb/parallel.hpp"

extern char** environ;

namespace posemb::bench {
namespace {

constexpr std::size_t kMinFlushBytes = std::size_t{256} << 20;

// Twice the last-level cache, at least 256 MiB.
std::size_t flush_size() {
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const std::size_t twice = llc > 0 ? 2 * static_cast<std::size_t>(llc) : 0;
  return std::max(kMinFlushBytes, twice);
}

double median(std::vector<double> v) {  // the upper median for an even count
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void set_threads(int threads) {
  omp_set_num_threads(std::max(1, threads));
}

}  // namespace

Harness::Harness() : flush_bytes_(flush_size()) {
  flush_ = static_cast<float*>(::operator new (flush_bytes_, std::align_val_t{64}));
  std::memset(flush_, 1, flush_bytes_);  // touch every page
}

Harness::~Harness() {
  ::operator delete (flush_, std::align_val_t{64});
}

void Harness::flush() const {
  // One float per cache line is enough to bring the whole line in.
  const std::size_t n = flush_bytes_ / sizeof(float);
  float sum = 0;
  for (std::size_t i = 0; i < n; i += 16) sum += flush_[i];
  volatile float sink = sum;
  (void)sink;
}

double Harness::time_once(const Variant& v) const {
  set_threads(v.threads);
  flush();
  const auto a = std::chrono::steady_clock::now();
  v.run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

std::vector<Harness::Stats> Harness::run_interleaved(const std::vector<Variant>& variants,
                                                     int repetitions, int warmup) const {
  for (const Variant& v : variants) {
    set_threads(v.threads);
    for (int i = 0; i < warmup; ++i) v.run();
  }
  std::vector<std::vector<double>> seconds(variants.size());
  for (int r = 0; r < std::max(1, repetitions); ++r) {
    for (std::size_t i = 0; i < variants.size(); ++i) seconds[i].push_back(time_once(variants[i]));
  }
  std::vector<Stats> out;
  for (auto& s : seconds) out.push_back({median(s), *std::min_element(s.begin(), s.end())});
  return out;
}

Variant copy_variant(int threads, double& bytes) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  struct Buffers {
    __m128i* src = static_cast<__m128i*>(::operator new (kBytes, std::align_val_t{64}));
    __m128i* dst = static_cast<__m128i*>(::operator new (kBytes, std::align_val_t{64}));
    Buffers() {
      std::memset(static_cast<void*>(src), 1, kBytes);
      std::memset(static_cast<void*>(dst), 0, kBytes);
    }
    ~Buffers() {
      ::operator delete (src, std::align_val_t{64});
      ::operator delete (dst, std::align_val_t{64});
    }
    Buffers(const Buffers&) = delete;
    Buffers& operator=(const Buffers&) = delete;
  };
  auto buf = std::make_shared<Buffers>();
  bytes = 2.0 * static_cast<double>(kBytes);
  Variant v;
  v.name = "copy " + std::to_string(threads) + "t";
  v.threads = threads;
  v.run = [buf] {
    // posemb's own parallel loop: dynamic chunks of 1 MiB.
    const __m128i* s = buf->src;
    __m128i* d = buf->dst;
    parallel_for(kBytes / 16, (std::size_t{1} << 20) / 16, kBytes / 4,
                 [&](std::size_t begin, std::size_t end) {
                   for (std::size_t i = begin; i < end; ++i) {
                     _mm_stream_si128(d + i, _mm_load_si128(s + i));
                   }
                   _mm_sfence();
                 });
  };
  return v;
}

double load_average() {
  double avg[1] = {-1};
  return getloadavg(avg, 1) == 1 ? avg[0] : -1;
}

PeerResult run_peer(const std::vector<std::string>& argv) {
  PeerResult r;
  if (argv.empty() || access(argv[0].c_str(), X_OK) != 0) {
    r.status =
        "not measured (" + (argv.empty() ? std::string("no command") : argv[0]) + " not found)";
    return r;
  }
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].ends_with(".py") && access(argv[i].c_str(), R_OK) != 0) {
      r.status = "not measured (" + argv[i] + " not found)";
      return r;
    }
  }
  int out[2];
  if (pipe(out) != 0) {
    r.status = "not measured (pipe failed)";
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    r.status = "not measured (cannot start " + argv[0] + ")";
    return r;
  }
  std::string text;
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = read(out[0], buf.data(), buf.size())) != 0;) {
    if (n < 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.status = WIFSIGNALED(status)
                   ? "not measured (peer killed by signal " + std::to_string(WTERMSIG(status)) + ")"
                   : "not measured (peer exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return r;
  }
  try {
    r.json = nlohmann::json::parse(text);
    r.status = "ok";
  } catch (const std::exception& e) {
    r.status = std::string("not measured (peer output is not JSON: ") + e.what() + ")";
  }
  return r;
}

}  // namespace posemb::bench
