// src/half.hpp (internal): IEEE binary16 and bfloat16 <-> float, round to nearest even.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace posemb::detail {

// binary16 -> float, exact (NaN payloads shifted into the float's mantissa).
inline float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h >> 15) << 31;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// float -> binary16, round to nearest even; overflow to infinity; NaN stays NaN (quiet).
inline std::uint16_t f32_to_f16(float f) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t absbits = bits & 0x7fffffffu;
  if (absbits > 0x7f800000u) {  // NaN
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((absbits >> 13) & 0x3ffu));
  }
  const float a = std::bit_cast<float>(absbits);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (a < 0x1p-14f) {  // half subnormal (or zero): a * 2^24 rounded to an integer <= 1024
    const float m = std::nearbyint(a * 0x1p24f);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(m));
  }
  const std::uint32_t e = (absbits >> 23) - 127 + 15;  // 1..30
  const std::uint32_t m = absbits & 0x7fffffu;
  std::uint32_t h = (e << 10) | (m >> 13);
  const std::uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) ++h;  // carries into the exponent
  return static_cast<std::uint16_t>(sign | h);
}

// bfloat16 -> float, exact.
inline float bf16_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// float -> bfloat16, round to nearest even; NaN stays NaN (quiet).
inline std::uint16_t f32_to_bf16(float f) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  }
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

}  // namespace posemb::detail
