// posemb/half.hpp: the 16-bit element types of position tables, IEEE binary16 (`float16`) and
// bfloat16, with exact widening to float and round-to-nearest-even narrowing (the conversions of
// numpy and torch, bit for bit, NaN included).
//
//   posemb::bfloat16 b(0.1f);          // rounded to nearest even: 0.10009765625
//   float f = b;                       // widening is exact and implicit
//   b.bits();                          // 0x3dcd, the stored pattern
//   posemb::float16 h = posemb::float16::from_bits(0x3c00);   // 1.0
//
// Both are trivially copyable 2-byte values, so a Matrix<bfloat16> or a MatrixView over a
// mapped file's bytes holds a table at half the memory of float.
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

namespace posemb {

// IEEE 754 binary16.
class float16 {
 public:
  constexpr float16() noexcept = default;
  // Rounded to nearest even; overflow gives infinity; NaN stays NaN.
  explicit float16(float f) noexcept : bits_(detail::f32_to_f16(f)) {}
  static constexpr float16 from_bits(std::uint16_t bits) noexcept {
    float16 h;
    h.bits_ = bits;
    return h;
  }
  constexpr std::uint16_t bits() const noexcept { return bits_; }
  // Exact.
  operator float() const noexcept { return detail::f16_to_f32(bits_); }  // NOLINT

 private:
  std::uint16_t bits_ = 0;
};

// bfloat16: the upper half of a float32.
class bfloat16 {
 public:
  constexpr bfloat16() noexcept = default;
  // Rounded to nearest even; NaN stays NaN.
  explicit bfloat16(float f) noexcept : bits_(detail::f32_to_bf16(f)) {}
  static constexpr bfloat16 from_bits(std::uint16_t bits) noexcept {
    bfloat16 b;
    b.bits_ = bits;
    return b;
  }
  constexpr std::uint16_t bits() const noexcept { return bits_; }
  // Exact.
  operator float() const noexcept { return detail::bf16_to_f32(bits_); }  // NOLINT

 private:
  std::uint16_t bits_ = 0;
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace posemb
