// posemb/memory.hpp: the memory budget. Every large allocation posemb makes is estimated first
// and refused, with the bytes needed and the limit, when it would exceed the budget: a bad
// argument fails at once with a clear message instead of swapping the machine or ending in
// std::bad_alloc.
//
//   posemb::set_memory_limit(8ull << 30);                 // 8 GiB for this process's posemb work
//   posemb::check_allocation("resize_table", bytes);       // throws MemoryLimitExceeded
//   posemb::Matrix<float> m(1u << 30, 1u << 10);          // also checked: 4 TiB is refused
//
// The budget is process-wide. By default it is 3/4 of the machine's physical memory, or half of
// the address-space limit (ulimit -v, RLIMIT_AS) when that is lower; 0 restores the default.
// Matrix checks every allocation against it; operations that allocate several buffers check their
// total up front, naming themselves. Under an address-space limit, an allocation of 1 MiB or more
// is also checked against the address space the process has left (the limit minus what it maps
// now), whatever the budget, so that it is refused as MemoryLimitExceeded instead of failing as
// std::bad_alloc.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace posemb {

// An allocation that would exceed the memory budget. Derives from std::runtime_error.
class MemoryLimitExceeded : public std::runtime_error {
 public:
  // "OPERATION: needs N bytes (...), over the memory budget of L bytes (...)".
  MemoryLimitExceeded(std::string_view operation, std::size_t bytes, std::size_t limit);
  // The same with another limit than the budget: "... over " + limit_text; address_space: the
  // limit is the address space left (ulimit -v).
  MemoryLimitExceeded(std::string_view operation, std::size_t bytes, std::size_t limit,
                      std::string_view limit_text, bool address_space = false);
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t limit() const noexcept { return limit_; }
  // True when the limit is the address space left under ulimit -v, not the budget (a larger
  // budget would not help).
  bool address_space() const noexcept { return address_space_; }

 private:
  std::size_t bytes_;
  std::size_t limit_;
  bool address_space_ = false;
};

// 3/4 of physical memory (sysconf; 1 GiB when it cannot be read; at least 1 MiB), or half of the
// address-space limit (RLIMIT_AS, at least 1 MiB) when that is lower.
std::size_t default_memory_limit() noexcept;
// The current budget in bytes.
std::size_t memory_limit() noexcept;
// Sets the budget (0: the default). Thread-safe.
void set_memory_limit(std::size_t bytes) noexcept;
// Throws MemoryLimitExceeded naming `operation` when `bytes` exceeds the budget, or (1 MiB and
// more, under an address-space limit) the address space the process has left.
void check_allocation(std::string_view operation, std::size_t bytes);

// Asks the kernel to back [p, p + bytes) with transparent huge pages (2 MiB) where it can: large
// tables are read at random rows, and with 4 KiB pages nearly every row costs a TLB miss and a
// page walk. Matrix calls it for allocations of 4 MiB and more, before their first touch. Only
// the whole 2 MiB pages inside the range are advised; a no-op where the system has no
// transparent huge pages or they are switched off, and never an error.
void advise_huge_pages(void* p, std::size_t bytes) noexcept;

// a * b, or SIZE_MAX when the product overflows (estimates saturate; the check then refuses).
constexpr std::size_t saturating_mul(std::size_t a, std::size_t b) noexcept {
  if (a != 0 && b > static_cast<std::size_t>(-1) / a) return static_cast<std::size_t>(-1);
  return a * b;
}
// a + b, or SIZE_MAX when the sum overflows.
constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  return b > static_cast<std::size_t>(-1) - a ? static_cast<std::size_t>(-1) : a + b;
}

// A size (a count of rows, cells, elements or bytes) formed from numbers a caller gave: a * b
// and a + b, or std::length_error naming the operation, what is being counted and both numbers
// when the true result does not fit a std::size_t (it would wrap around to a small number, and a
// buffer of that small size would then be indexed as the large one).
//
//   const std::size_t cells = posemb::checked_mul(h, w, "interpolate_grid", "the grid's cells");
//   // h = 2^63 + 1, w = 2: "interpolate_grid: the grid's cells 9223372036854775809 x 2 do not
//   //                       fit a 64-bit size"
std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view operation,
                        std::string_view what);
std::size_t checked_add(std::size_t a, std::size_t b, std::string_view operation,
                        std::string_view what);

}  // namespace posemb
