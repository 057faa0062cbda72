// src/io/grid_math.hpp (internal): integer square roots for square grids, without a product
// that could wrap around.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace posemb::detail {

// floor(sqrt(n)) for every n up to 2^64 - 1 (r * r is formed only for r < 2^32, where it fits).
inline std::size_t floor_sqrt(std::size_t n) noexcept {
  constexpr std::size_t kMaxRoot = 0xFFFFFFFFu;  // floor(sqrt(2^64 - 1))
  auto r = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
  if (r > kMaxRoot) r = kMaxRoot;
  while (r * r > n) --r;
  while (r < kMaxRoot && (r + 1) * (r + 1) <= n) ++r;
  return r;
}

}  // namespace posemb::detail
