// Internal (core): the angles of the computed encodings (sinusoidal, rotary), accurate at large
// positions. The one place where posemb forms p * inverse_frequency and takes its sine and
// cosine.
//
// Below 2^24 radians the angle is formed and evaluated in double (its error is at most
// angle * 2^-52, under 4e-9); from 2^24 on it is formed and reduced in long double (64-bit
// mantissa), so that sin and cos stay within a few 1e-8 of the exact values for every position
// up to 2^31 and beyond (a float32 angle would be off by whole radians there).
#pragma once

#include <cmath>
#include <cstddef>

namespace posemb::detail {

inline constexpr double kDoubleAngleLimit = 16777216.0;  // 2^24

// An inverse frequency, base^(-exponent), formed in long double, and its rounding to double.
struct InverseFrequency {
  long double ld = 1.0L;
  double d = 1.0;
};

inline InverseFrequency inverse_frequency(double base, long double exponent) {
  const long double v = std::pow(static_cast<long double>(base), -exponent);
  return {v, static_cast<double>(v)};
}

// sin and cos of the angle position * inv.
inline void sin_cos(std::size_t position, const InverseFrequency& inv, double& s, double& c) {
  const double angle = static_cast<double>(position) * inv.d;
  if (angle < kDoubleAngleLimit) {
    s = std::sin(angle);
    c = std::cos(angle);
    return;
  }
  const long double a = static_cast<long double>(position) * inv.ld;
  s = static_cast<double>(std::sin(a));
  c = static_cast<double>(std::cos(a));
}

}  // namespace posemb::detail
