#include "harness/harness.hpp"

#include <cpuid.h>
#include <fcntl.h>
#include <immintrin.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>

#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"
#include "posemb/simd.hpp"

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

// dst = src, n bytes (a multiple of 64, both 64-byte aligned), with streaming stores of the
// widest vectors the CPU has: the copy that writes once, straight to memory.
__attribute__((target("avx512f"))) void stream_copy_avx512(char* dst, const char* src,
                                                           std::size_t n) {
  for (std::size_t i = 0; i < n; i += 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i),
                        _mm512_load_si512(reinterpret_cast<const __m512i*>(src + i)));
  }
  _mm_sfence();
}
__attribute__((target("avx"))) void stream_copy_avx(char* dst, const char* src, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(src + i)));
  }
  _mm_sfence();
}
void stream_copy_sse2(char* dst, const char* src, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_load_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  _mm_sfence();
}
using CopyFn = void (*)(char*, const char*, std::size_t);
CopyFn stream_copy() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return stream_copy_avx512;
  if (__builtin_cpu_supports("avx")) return stream_copy_avx;
  return stream_copy_sse2;
}

// The sum of the g rows at r (each n floats, n a multiple of the vector width; the rest is
// summed by the caller), read vector column by vector column across the rows.
__attribute__((target("avx512f"))) float gather_sum_avx512(const float* const* r, std::size_t g,
                                                           std::size_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (std::size_t c = 0; c < n; c += 16) {
    for (std::size_t i = 0; i < g; ++i) acc = _mm512_add_ps(acc, _mm512_loadu_ps(r[i] + c));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}
__attribute__((target("avx"))) float gather_sum_avx(const float* const* r, std::size_t g,
                                                    std::size_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t c = 0; c < n; c += 8) {
    for (std::size_t i = 0; i < g; ++i) acc = _mm256_add_ps(acc, _mm256_loadu_ps(r[i] + c));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}
float gather_sum_sse2(const float* const* r, std::size_t g, std::size_t n) {
  __m128 acc = _mm_setzero_ps();
  for (std::size_t c = 0; c < n; c += 4) {
    for (std::size_t i = 0; i < g; ++i) acc = _mm_add_ps(acc, _mm_loadu_ps(r[i] + c));
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
struct GatherFn {
  float (*sum)(const float* const*, std::size_t, std::size_t);
  std::size_t width;
};
GatherFn gather_sum() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {gather_sum_avx512, 16};
  if (__builtin_cpu_supports("avx")) return {gather_sum_avx, 8};
  return {gather_sum_sse2, 4};
}

}  // namespace

Harness::Harness() : flush_bytes_(flush_size()) {
  flush_ = static_cast<float*>(::operator new (flush_bytes_, std::align_val_t{64}));
  std::memset(flush_, 1, flush_bytes_);  // touch every page
}

Harness::~Harness() {
  ::operator delete (flush_, std::align_val_t{64});
}

void Harness::flush(bool openmp) const {
  // One float per cache line is enough to bring the whole line in. Read on the threads the
  // variant runs on, at its thread count: every core it uses has its own caches flushed, and its
  // threads have just worked, as in a program that calls kernels one after another (a helper
  // that has gone to sleep took 0.1-0.2 ms, median of 31, to wake on this project's 2-core
  // virtual machine: more than a third of a GPT-2-sized rotation).
  const std::size_t lines = flush_bytes_ / 64;
  constexpr std::size_t kLinesPerChunk = 4096;
  const float* const f = flush_;
  auto read_lines = [f](std::size_t begin, std::size_t end) {
    float sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += f[i * 16];
    volatile float sink = sum;
    (void)sink;
  };
  if (openmp) {
    const auto n = static_cast<std::ptrdiff_t>(lines);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t k = 0; k < n; k += kLinesPerChunk) {
      read_lines(static_cast<std::size_t>(k),
                 std::min(lines, static_cast<std::size_t>(k) + kLinesPerChunk));
    }
  } else {
    posemb::parallel_for(lines, kLinesPerChunk, lines, read_lines);
  }
}

double Harness::time_once(const Variant& v) const {
  set_threads(v.threads);
  posemb::set_simd_target(v.simd);
  // Once untimed first, so that whatever the flush leaves behind is this variant's own: without
  // it a forward right after another forward on the same table (other rows) measured 1.36-1.63x
  // faster than after one on a different table (harness.hpp).
  v.run();
  flush(v.openmp);
  const auto a = std::chrono::steady_clock::now();
  v.run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

std::vector<Harness::Stats> Harness::run_interleaved(const std::vector<Variant>& variants,
                                                     int repetitions) const {
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
    char* src = static_cast<char*>(::operator new (kBytes, std::align_val_t{64}));
    char* dst = static_cast<char*>(::operator new (kBytes, std::align_val_t{64}));
    Buffers() {
      // The same pages as the kernels' Matrix buffers get (posemb/memory.hpp).
      advise_huge_pages(src, kBytes);
      advise_huge_pages(dst, kBytes);
      std::memset(src, 1, kBytes);
      std::memset(dst, 0, kBytes);
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
  v.run = [buf, copy = stream_copy()] {
    // posemb's own parallel loop: dynamic chunks of 1 MiB.
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    parallel_for(kBytes / kChunk, 1, kBytes / 4, [&](std::size_t begin, std::size_t end) {
      copy(buf->dst + begin * kChunk, buf->src + begin * kChunk, (end - begin) * kChunk);
    });
  };
  return v;
}

float gather_rows(const float* const* rows, std::size_t n, std::size_t cols) {
  static const GatherFn fn = gather_sum();
  const std::size_t vec_cols = cols - cols % fn.width;
  constexpr std::size_t kChunk = 64;
  std::vector<float> sums((n + kChunk - 1) / kChunk, 0.0f);
  parallel_for(sums.size(), 1, n * cols, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const std::size_t r1 = std::min(n, (k + 1) * kChunk);
      float sum = 0;
      for (std::size_t r = k * kChunk; r < r1; r += kGatherGroup) {
        const std::size_t g = std::min(kGatherGroup, r1 - r);
        sum += fn.sum(rows + r, g, vec_cols);
        for (std::size_t i = r; i < r + g; ++i) {
          for (std::size_t c = vec_cols; c < cols; ++c) sum += rows[i][c];
        }
      }
      sums[k] = sum;
    }
  });
  float total = 0;
  for (float s : sums) total += s;
  return total;
}

double load_average() {
  double avg[1] = {-1};
  return getloadavg(avg, 1) == 1 ? avg[0] : -1;
}

namespace {

// The size of the first CPU's cache of `level` and `type` as the kernel reports it (sysfs), else
// as the C library does (glibc multiplies a shared L3 by the cores of the whole package: a VM's
// 32 MiB reads 384 MiB there); 0 when unknown.
long cache_bytes(int level, const std::string& type, int sysconf_name) {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    auto read = [&](const char* file) {
      std::ifstream in(dir + std::to_string(i) + "/" + file);
      std::string v;
      in >> v;
      return v;
    };
    if (read("level") != std::to_string(level) || read("type") != type) continue;
    const std::string size = read("size");  // "48K", "32768K", "1M"
    char* end = nullptr;
    const long n = std::strtol(size.c_str(), &end, 10);
    if (end == size.c_str() || n <= 0) break;
    return *end == 'M' ? n << 20 : *end == 'K' ? n << 10 : n;
  }
  return std::max(0L, sysconf(sysconf_name));
}

}  // namespace

CpuInfo cpu_info() {
  CpuInfo c;
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &cx, &d) != 0) {
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &cx, 4);
    c.vendor = vendor;
  }
  if (__get_cpuid(1, &a, &b, &cx, &d) != 0) {
    const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
    c.family = static_cast<int>(base_family + (base_family == 0xf ? (a >> 20) & 0xff : 0));
    c.model = static_cast<int>(
        base_model + (base_family == 0xf || base_family == 0x6 ? ((a >> 16) & 0xf) << 4 : 0));
    c.stepping = static_cast<int>(a & 0xf);
  }
  if (__get_cpuid(0x80000000, &a, &b, &cx, &d) != 0 && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &cx, &d);
      const unsigned regs[4] = {a, b, cx, d};
      std::memcpy(brand + 16 * leaf, regs, 16);
    }
    std::string s = brand;
    const auto first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
    c.brand = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  }
  c.l1d = cache_bytes(1, "Data", _SC_LEVEL1_DCACHE_SIZE);
  c.l2 = cache_bytes(2, "Unified", _SC_LEVEL2_CACHE_SIZE);
  c.l3 = cache_bytes(3, "Unified", _SC_LEVEL3_CACHE_SIZE);
  c.cpus = static_cast<int>(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN)));
  __builtin_cpu_init();
  // (__builtin_cpu_supports takes a string literal.)
  if (__builtin_cpu_supports("sse4.1")) c.features.emplace_back("sse4.1");
  if (__builtin_cpu_supports("avx2")) c.features.emplace_back("avx2");
  if (__builtin_cpu_supports("fma")) c.features.emplace_back("fma");
  if (__builtin_cpu_supports("f16c")) c.features.emplace_back("f16c");
  if (__builtin_cpu_supports("avx512f")) c.features.emplace_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) c.features.emplace_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) c.features.emplace_back("avx512vl");
  return c;
}

std::string describe(const CpuInfo& cpu) {
  auto bytes = [](long n) {
    return n >= (1L << 20) && n % (1L << 20) == 0 ? std::to_string(n >> 20) + " MiB"
                                                  : std::to_string(n >> 10) + " KiB";
  };
  std::string s = cpu.brand.empty() ? "an unnamed CPU" : cpu.brand;
  s += " (" + cpu.vendor + " family " + std::to_string(cpu.family) + " model " +
       std::to_string(cpu.model) + ");";
  const char* names[] = {" L1d ", ", L2 ", ", L3 "};
  const long sizes[] = {cpu.l1d, cpu.l2, cpu.l3};
  for (int i = 0; i < 3; ++i) s += names[i] + (sizes[i] > 0 ? bytes(sizes[i]) : "unknown");
  s += ";";
  for (const std::string& f : cpu.features) s += " " + f;
  s += "; " + std::to_string(cpu.cpus) + " CPUs";
  return s;
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
  // The peer prints one small JSON document; more than 1 MiB is not it (a --python that prints
  // forever is stopped here).
  constexpr std::size_t kMaxOutput = std::size_t{1} << 20;
  for (ssize_t n; (n = read(out[0], buf.data(), buf.size())) != 0;) {
    if (n < 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
    if (text.size() > kMaxOutput) break;
  }
  close(out[0]);
  int status = 0;
  if (text.size() > kMaxOutput) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    r.status = "not measured (the peer printed more than 1 MiB)";
    return r;
  }
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
