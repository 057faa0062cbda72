// Internal (core): sine and cosine of many angles at once, compiled for every SIMD target
// (sincos_simd.cpp), for the computed encodings (sinusoidal.cpp, rope.cpp).
//
// The method, the same operations in the same order on every target (so every target, the
// baseline included, gives the same bits), in double:
//   n  = nearest integer to x * 2/pi        (x * 2/pi + 1.5 * 2^52 - 1.5 * 2^52; n < 2^24)
//   r  = ((x - n * kPio2Hi) - n * kPio2Mid) - n * kPio2Lo       (Cody-Waite, |r| <= ~pi/4)
//        pi/2 = kPio2Hi + kPio2Mid + kPio2Lo + O(1e-34); kPio2Hi and kPio2Mid have at most 28
//        significant bits, so n * kPio2Hi and n * kPio2Mid are exact for every n < 2^24, and
//        so is x - n * kPio2Hi
//   sin r, cos r by the fdlibm minimax polynomials on [-pi/4, pi/4] (kSin*, kCos* below),
//        each product and sum a separate operation (no fused multiply-add)
//   quadrant n mod 4 picks sin r or cos r for each result and its sign.
// Absolute error about 1 ulp of double (2^-53) against the exact sine and cosine of the double
// x (tests/core/test_sincos.cpp measures it). Angles of magnitude kDoubleAngleLimit (2^24) or
// more, and any that is not a number, fall back lane by lane to long double std::sin / std::cos
// (angles.hpp).
// tests/support/sincos_reference.hpp is the same computation written as plain scalar code.
#pragma once

#include <cstddef>

namespace posemb::detail {

// pi/2 in three pieces (see above), 2/pi, and the polynomial coefficients (fdlibm's __kernel_sin
// and __kernel_cos: sin r ~ r + r^3 (S1 + z S2 + ... + z^5 S6), cos r ~ 1 - z/2 + z^2 (C1 + ...
// + z^5 C6), z = r^2).
inline constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
inline constexpr double kPio2Hi = 0x1.921fb54000000p+0;    // 27 significant bits
inline constexpr double kPio2Mid = 0x1.10b4612000000p-30;  // 28 significant bits
inline constexpr double kPio2Lo = -0x1.676733ae8fe48p-60;
inline constexpr double kRoundMagic = 0x1.8p52;  // 1.5 * 2^52: x + it - it rounds x to an integer
inline constexpr double kSin[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                   -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                   -2.50507602534068634195e-08, 1.58969099521155010221e-10};
inline constexpr double kCos[6] = {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                   2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                   2.08757232129817482790e-09, -1.13596475577881948265e-11};

// s[i], c[i] = sin and cos of the angle position * inv_d[i] (in double; from 2^24 radians on,
// position * inv_ld[i] in long double, as angles.hpp's sin_cos_long_double), i < n.
using SinCosAnglesFn = void (*)(std::size_t position, const double* inv_d,
                                const long double* inv_ld, std::size_t n, double* s, double* c);
SinCosAnglesFn sin_cos_angles();

// s[i], c[i] = sin and cos of x[i], i < n (|x[i]| >= 2^24 or not a number: std::sin and
// std::cos of x[i] in long double).
using SinCosValuesFn = void (*)(const double* x, std::size_t n, double* s, double* c);
SinCosValuesFn sin_cos_values();

}  // namespace posemb::detail
