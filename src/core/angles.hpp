// Internal (core): the angles of the computed encodings (sinusoidal, rotary), accurate at large
// positions. The one place where posemb defines how p * inverse_frequency is formed and its sine
// and cosine taken; sincos_kernels.hpp evaluates it for many angles at once.
//
// Below 2^24 radians the angle is formed in double (its error is at most angle * 2^-53, under
// 2e-9) and its sine and cosine evaluated in double by posemb's own kernel (sincos_kernels.hpp,
// within about 2^-53 of exact, the same bits on every SIMD target); from 2^24 on the angle is
// formed and reduced in long double (64-bit mantissa, sin_cos_long_double below), so that sin
// and cos stay within a few 1e-8 of the exact values for every position up to 2^31 and beyond
// (a float32 angle would be off by whole radians there).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

namespace posemb::detail {

inline constexpr double kDoubleAngleLimit = 16777216.0;  // 2^24

// The inverse frequencies posemb computes with (radians per position), refused outside: every
// one a normal double whose wavelength 2 pi / theta is finite too. A base of 5e-324 or 1e-300
// (theta up to 1e303) or a scaling factor of 1e308 (theta below 1e-308) is past them.
inline constexpr long double kMinInverseFrequency = 1e-300L;
inline constexpr long double kMaxInverseFrequency = 1e300L;

// A base whose inverse frequencies base^-x, 0 <= x <= 1, are all in the range above.
inline bool usable_base(double base) noexcept {
  return base >= 1e-300 && base <= 1e300;  // false for NaN too
}

// v as "%.17g" (std::to_string writes 1e-300 as 0.000000).
inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// An inverse frequency, base^(-exponent), formed in long double, and its rounding to double.
struct InverseFrequency {
  long double ld = 1.0L;
  double d = 1.0;
};

inline InverseFrequency inverse_frequency(double base, long double exponent) {
  const long double v = std::pow(static_cast<long double>(base), -exponent);
  return {v, static_cast<double>(v)};
}

// sin and cos of the angle position * inv_ld, formed and evaluated in long double: for angles
// position * inv_d of 2^24 radians or more (or not a number).
inline void sin_cos_long_double(std::size_t position, long double inv_ld, double& s, double& c) {
  const long double a = static_cast<long double>(position) * inv_ld;
  s = static_cast<double>(std::sin(a));
  c = static_cast<double>(std::cos(a));
}

}  // namespace posemb::detail
