#include "posemb/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace posemb {
namespace {

std::atomic<std::size_t> g_limit{0};  // 0: the default

std::string human(std::size_t bytes) {
  const double b = static_cast<double>(bytes);
  const char* unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = b;
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  std::string s = std::to_string(bytes) + " bytes";
  if (u > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.1f %s)", v, unit[u]);
    s += buf;
  }
  return s;
}

}  // namespace

MemoryLimitExceeded::MemoryLimitExceeded(std::string_view operation, std::size_t bytes,
                                         std::size_t limit)
    : std::runtime_error(std::string(operation) + ": needs " + human(bytes) +
                         ", over the memory budget of " + human(limit)),
      bytes_(bytes),
      limit_(limit) {}

std::size_t default_memory_limit() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::size_t{1} << 30;
  return saturating_mul(static_cast<std::size_t>(pages), static_cast<std::size_t>(page)) / 4 * 3;
}

std::size_t memory_limit() noexcept {
  const std::size_t l = g_limit.load(std::memory_order_relaxed);
  return l != 0 ? l : default_memory_limit();
}

void set_memory_limit(std::size_t bytes) noexcept {
  g_limit.store(bytes, std::memory_order_relaxed);
}

void check_allocation(std::string_view operation, std::size_t bytes) {
  const std::size_t limit = memory_limit();
  if (bytes > limit) throw MemoryLimitExceeded(operation, bytes, limit);
}

void advise_huge_pages(void* p, std::size_t bytes) noexcept {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  if (p == nullptr || bytes < kHuge || begin > UINTPTR_MAX - bytes) return;
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
#ifdef MADV_HUGEPAGE
  if (last > first) {
    (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#else
  (void)first;
  (void)last;
#endif
}

}  // namespace posemb
