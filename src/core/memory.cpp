#include "posemb/memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

namespace posemb {
namespace {

std::atomic<std::size_t> g_limit{0};  // 0: the default

constexpr std::size_t kMinDefaultBudget = std::size_t{1} << 20;
// Allocations from this size on are checked against the address space left (one read of
// /proc/self/statm each; smaller ones are not worth it).
constexpr std::size_t kAddressCheckBytes = std::size_t{1} << 20;

// The address-space limit (RLIMIT_AS, ulimit -v) in bytes, or nullopt when there is none.
std::optional<std::size_t> address_space_limit() noexcept {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::size_t>(rl.rlim_cur);
}

// The bytes of address space the process maps now (/proc/self/statm's first field, in pages);
// 0 when it cannot be read (the check then relies on the limit alone).
std::size_t mapped_bytes() noexcept {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = 0;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  std::size_t pages = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) {
    pages = saturating_add(saturating_mul(pages, 10), static_cast<std::size_t>(buf[i] - '0'));
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  return saturating_mul(pages, page > 0 ? static_cast<std::size_t>(page) : 4096);
}

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
    : MemoryLimitExceeded(operation, bytes, limit, "the memory budget of " + human(limit)) {}

MemoryLimitExceeded::MemoryLimitExceeded(std::string_view operation, std::size_t bytes,
                                         std::size_t limit, std::string_view limit_text,
                                         bool address_space)
    : std::runtime_error(std::string(operation) + ": needs " + human(bytes) + ", over " +
                         std::string(limit_text)),
      bytes_(bytes),
      limit_(limit),
      address_space_(address_space) {}

std::size_t default_memory_limit() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::size_t budget = std::size_t{1} << 30;
  if (pages > 0 && page > 0) {
    budget = std::max(
        saturating_mul(static_cast<std::size_t>(pages), static_cast<std::size_t>(page)) / 4 * 3,
        kMinDefaultBudget);
  }
  if (const auto as = address_space_limit()) {
    budget = std::min(budget, std::max<std::size_t>(*as / 2, kMinDefaultBudget));
  }
  return budget;
}

std::size_t memory_limit() noexcept {
  const std::size_t l = g_limit.load(std::memory_order_relaxed);
  return l != 0 ? l : default_memory_limit();
}

void set_memory_limit(std::size_t bytes) noexcept {
  g_limit.store(bytes, std::memory_order_relaxed);
}

void check_allocation(std::string_view operation, std::size_t bytes) {
  // Without a budget set, a small allocation passes the default (never below kMinDefaultBudget)
  // and skips the address-space check: no system call (sysconf's sysinfo and getrlimit took a
  // third of a small embed_forward's time, its copy of the token ids, after a cache flush).
  if (bytes < kAddressCheckBytes && bytes <= kMinDefaultBudget &&
      g_limit.load(std::memory_order_relaxed) == 0) {
    return;
  }
  const std::size_t limit = memory_limit();
  if (bytes > limit) throw MemoryLimitExceeded(operation, bytes, limit);
  if (bytes < kAddressCheckBytes) return;
  const auto as = address_space_limit();
  if (!as) return;
  const std::size_t mapped = mapped_bytes();
  const std::size_t left = *as > mapped ? *as - mapped : 0;
  if (bytes > left) {
    throw MemoryLimitExceeded(operation, bytes, left,
                              "the " + human(left) +
                                  " of address space left under the address-space limit "
                                  "(ulimit -v) of " +
                                  human(*as) + " (" + human(mapped) + " of it in use)",
                              true);
  }
}

std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view operation,
                        std::string_view what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw std::length_error(std::string(operation) + ": " + std::string(what) + " " +
                            std::to_string(a) + " x " + std::to_string(b) +
                            " do not fit a 64-bit size (the product passes 2^64 - 1)");
  }
  return r;
}

std::size_t checked_add(std::size_t a, std::size_t b, std::string_view operation,
                        std::string_view what) {
  std::size_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw std::length_error(std::string(operation) + ": " + std::string(what) + " " +
                            std::to_string(a) + " + " + std::to_string(b) +
                            " do not fit a 64-bit size (the sum passes 2^64 - 1)");
  }
  return r;
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
