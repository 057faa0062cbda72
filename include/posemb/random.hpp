// posemb/random.hpp: the one random number generator of posemb, SplitMix64 (Steele, Lea and
// Flood 2014): the same stream on every platform, compiler and thread count.
//
//   posemb::Rng rng(posemb::mix_seed(seed, step));   // a sequential stream
//   std::uint64_t die = 1 + rng.below(6);             // uniform in [1, 6]
//   double u = posemb::counter_uniform01(seed, 3, k); // element k of counter stream 3
//   double z = posemb::counter_normal(seed, k);       // a standard normal for element k
//
// Two ways to draw. A sequential stream (Rng) for data that is generated in order. A
// counter-based draw (counter_uniform01, counter_normal): a pure function of (seed, stream,
// index), so element k of a table gets the same value whichever thread computes it.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace posemb {

// SplitMix64's output for state `state`: the state advanced by the golden gamma, then mixed
// (a bijection of 64-bit values).
constexpr std::uint64_t splitmix64(std::uint64_t state) noexcept {
  std::uint64_t z = state + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A sequential SplitMix64 stream.
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed) noexcept : state_(seed) {}
  // The next 64 random bits.
  constexpr std::uint64_t next() noexcept {
    const std::uint64_t r = splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ull;
    return r;
  }
  // Uniform in [0, n) for 1 <= n < 2^32 (multiply-shift on the high 32 bits).
  constexpr std::uint64_t below(std::uint64_t n) noexcept { return ((next() >> 32) * n) >> 32; }
  // Uniform in (0, 1), 53 bits.
  constexpr double uniform01() noexcept {
    return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_;
};

// A seed for sub-stream b of seed a (a training step, an evaluation length, ...).
constexpr std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept {
  Rng r(a ^ (b * 0xD1B54A32D192ED03ull));
  r.next();
  return r.next();
}

// Element `index` of counter stream `stream` under seed: uniform in (0, 1), 53 bits.
constexpr double counter_uniform01(std::uint64_t seed, std::uint64_t stream,
                                   std::uint64_t index) noexcept {
  const std::uint64_t bits =
      splitmix64(splitmix64(seed ^ (stream * 0xD1B54A32D192ED03ull)) + index);
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

// A standard normal for element `index` under seed (Box-Muller on counter streams 1 and 2).
inline double counter_normal(std::uint64_t seed, std::uint64_t index) noexcept {
  const double u1 = counter_uniform01(seed, 1, index);
  const double u2 = counter_uniform01(seed, 2, index);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace posemb
