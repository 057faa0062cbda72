// The SIMD target of this process (posemb/simd.hpp, src/core/simd.hpp).
#include "simd.hpp"

#include <hwy/targets.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "posemb/simd.hpp"
#include "posemb/simd_dispatch.hpp"

namespace posemb {
namespace detail {
namespace {

struct Target {
  std::int64_t bit;
  const char* name;
};
// Best first. The baseline is the build's static target (plain x86-64: Highway's scalar or
// EMU128 target, vectorized by the compiler as far as SSE2 allows).
constexpr Target kTargets[] = {{HWY_AVX3_DL, "avx512-dl"},
                               {HWY_AVX3, "avx512"},
                               {HWY_AVX2, "avx2"},
                               {HWY_SSE4, "sse4"},
                               {HWY_SSSE3, "ssse3"}};

// The targets compiled into the kernels (HWY_TARGETS is the same in every file of the library)
// that this CPU supports, best first, the baseline last.
std::vector<Target> available() {
  std::vector<Target> out;
  const std::int64_t have = hwy::SupportedTargets() & HWY_TARGETS;
  for (const Target& t : kTargets) {
    if ((have & t.bit) != 0 && t.bit != HWY_STATIC_TARGET) out.push_back(t);
  }
  out.push_back({HWY_STATIC_TARGET, "baseline"});
  return out;
}

// The position of a target's function in a HWY_EXPORT table (see hwy/targets.h: entry 0
// initializes Highway's own choice, the dynamic targets follow, the fallback comes last).
std::size_t table_index(std::int64_t bit) {
  const std::int64_t chosen_mask = (bit == HWY_EMU128 || bit == HWY_SCALAR)
                                       ? HWY_CHOSEN_TARGET_MASK_SCALAR
                                       : HWY_CHOSEN_TARGET_SHIFT(bit);
  return static_cast<std::size_t>(std::countr_zero(static_cast<std::uint64_t>(chosen_mask)));
}

std::string valid_names() {
  std::string s = "best";
  for (const Target& t : available()) s += std::string(", ") + t.name;
  return s;
}

// The target `name` selects; throws for a name this build or CPU lacks.
Target find(std::string_view name, std::string_view source) {
  const std::vector<Target> have = available();
  if (name.empty() || name == "best") return have.front();
  for (const Target& t : have) {
    if (name == t.name) return t;
  }
  throw std::invalid_argument(
      std::string(source) + "=" + std::string(name) +
      " names no SIMD target this build and CPU run; valid: " + valid_names());
}

struct Choice {
  std::mutex mu;
  bool resolved = false;
  std::string error;  // POSEMB_SIMD was invalid
  Target target{HWY_STATIC_TARGET, "baseline"};
  std::atomic<std::size_t> index{0};  // 0: not resolved yet (entry 0 is never a target)
};

Choice& choice() {
  static Choice c;
  return c;
}

// Resolves the choice from the environment (once) and returns it; throws if POSEMB_SIMD is bad.
Target resolve() {
  Choice& c = choice();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.resolved) {
    const char* env = std::getenv("POSEMB_SIMD");
    try {
      c.target = find(env != nullptr ? env : "", "POSEMB_SIMD");
      c.index.store(table_index(c.target.bit), std::memory_order_release);
    } catch (const std::invalid_argument& e) {
      c.error = e.what();
    }
    c.resolved = true;
  }
  if (!c.error.empty()) throw std::invalid_argument(c.error);
  return c.target;
}

}  // namespace

std::size_t simd_table_index() {
  const std::size_t i = choice().index.load(std::memory_order_acquire);
  if (i != 0) return i;
  return table_index(resolve().bit);
}

void throw_missing_simd_target(std::size_t index) {
  throw std::logic_error("POSEMB_DISPATCH: the kernel has no version for posemb's SIMD target " +
                         simd_target() + " (dispatch index " + std::to_string(index) +
                         "): compile its file for posemb's targets (Highway's default list with "
                         "HWY_DISABLED_TARGETS=HWY_SSSE3), or set POSEMB_SIMD to a target it has");
}

void set_simd_target(std::string_view name) {
  Choice& c = choice();
  if (name.empty()) {
    std::lock_guard<std::mutex> lock(c.mu);
    c.resolved = false;
    c.error.clear();
    c.index.store(0, std::memory_order_release);
    return;
  }
  const Target t = find(name, "set_simd_target");
  std::lock_guard<std::mutex> lock(c.mu);
  c.target = t;
  c.resolved = true;
  c.error.clear();
  c.index.store(table_index(t.bit), std::memory_order_release);
}

}  // namespace detail

std::size_t simd_dispatch_index() {
  return detail::simd_table_index();
}

std::string simd_target() {
  return detail::resolve().name;
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> out;
  for (const auto& t : detail::available()) out.emplace_back(t.name);
  return out;
}

void set_simd_target(std::string_view name) {
  detail::set_simd_target(name);
}

}  // namespace posemb
