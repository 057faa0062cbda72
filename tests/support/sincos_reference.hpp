// The plain scalar reference of posemb's sine-cosine kernel (src/core/sincos_kernels.hpp): the
// same double operations in the same order, one angle at a time, auto-vectorization off (GCC).
// The kernel must equal it bit for bit on every SIMD target; its accuracy against long double
// is tested in tests/core/test_sincos.cpp. Also the sinusoidal encoding's and the rotary
// angles' reference built on it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "posemb/matrix_view.hpp"
#include "posemb/sinusoidal.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#define POSEMB_SINCOS_REFERENCE __attribute__((noinline, optimize("no-tree-vectorize")))
#else
#define POSEMB_SINCOS_REFERENCE __attribute__((noinline))
#endif

namespace posemb::reference {

// sin x and cos x: for |x| < 2^24 by the kernel's method, else std::sin / std::cos in long
// double (as the kernel falls back).
POSEMB_SINCOS_REFERENCE inline void sin_cos(double x, double& sin_x, double& cos_x) {
  if (!(std::fabs(x) < 16777216.0)) {
    sin_x = static_cast<double>(std::sin(static_cast<long double>(x)));
    cos_x = static_cast<double>(std::cos(static_cast<long double>(x)));
    return;
  }
  // n = nearest integer to x * 2/pi; its two low bits are those of t's bits.
  const double magic = 0x1.8p52;
  const double t = x * 0x1.45f306dc9c883p-1 + magic;
  const double n = t - magic;
  std::uint64_t q;
  std::memcpy(&q, &t, sizeof q);
  // r = x - n * pi/2, pi/2 in three pieces.
  double r = x - n * 0x1.921fb54000000p+0;
  r = r - n * 0x1.10b4612000000p-30;
  r = r - n * -0x1.676733ae8fe48p-60;
  const double z = r * r;
  const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
               S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
               S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
  const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
               C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
               C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
  const double sin_r = r + (z * r) * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
  const double pc = C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6))));
  const double w = 1.0 - 0.5 * z;
  const double cos_r = w + (((1.0 - w) - 0.5 * z) + z * (z * pc));
  switch (q & 3) {
    case 0:
      sin_x = sin_r, cos_x = cos_r;
      break;
    case 1:
      sin_x = cos_r, cos_x = -sin_r;
      break;
    case 2:
      sin_x = -sin_r, cos_x = -cos_r;
      break;
    default:
      sin_x = -cos_r, cos_x = sin_r;
      break;
  }
}

// sin and cos of the angle p * inv (inv = base^(-exponent) formed in long double, inv_d its
// rounding): the kernel below 2^24 radians, p * inv in long double from there.
inline void angle_sin_cos(std::size_t p, long double inv, double& s, double& c) {
  const double angle = static_cast<double>(p) * static_cast<double>(inv);
  if (angle < 16777216.0) {
    sin_cos(angle, s, c);
  } else {
    const long double a = static_cast<long double>(p) * inv;
    s = static_cast<double>(std::sin(a));
    c = static_cast<double>(std::cos(a));
  }
}

// The sinusoidal encoding of positions start + r (posemb/sinusoidal.hpp), element by element.
template <class T>
void sinusoidal(MatrixView<T> out, std::size_t start, const SinusoidalOptions& o) {
  const std::size_t dim = out.cols();
  const bool vaswani = o.frequencies == SinusoidalFrequencies::vaswani;
  const std::size_t sines = vaswani ? (dim + 1) / 2 : dim / 2, cosines = dim / 2;
  const bool interleaved = o.layout == SinusoidalLayout::interleaved;
  for (std::size_t r = 0; r < out.rows(); ++r) {
    for (std::size_t c = 0; c < dim; ++c) out(r, c) = T(0);
    for (std::size_t i = 0; i < sines; ++i) {
      const long double expo = vaswani
                                   ? static_cast<long double>(2 * i) / static_cast<long double>(dim)
                                   : static_cast<long double>(i) /
                                         (sines > 1 ? static_cast<long double>(sines - 1) : 1.0L);
      double s, c;
      angle_sin_cos(start + r, std::pow(static_cast<long double>(o.base), -expo), s, c);
      out(r, interleaved ? 2 * i : i) = static_cast<T>(s);
      if (i < cosines) out(r, interleaved ? 2 * i + 1 : sines + i) = static_cast<T>(c);
    }
  }
}

}  // namespace posemb::reference
