// Sine and cosine of many angles (sincos_kernels.hpp), compiled once per SIMD target. Every lane
// runs the same operations in the same order on every target (separate Mul, Add and Sub; the
// rounding to an integer by adding and subtracting 1.5 * 2^52), so the results are the same bits
// whichever target runs; a partial last vector is padded and computed as a whole one.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/sincos_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/angles.hpp"
#include "core/simd.hpp"
#include "core/sincos_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;

// sin x and cos x for |x| < 2^24 (the method of sincos_kernels.hpp).
HWY_INLINE void SinCosVec(DD d, VD x, VD& sin_x, VD& cos_x) {
  const hn::RebindToUnsigned<DD> du;
  const auto magic = hn::Set(d, kRoundMagic);
  const auto t = hn::Add(hn::Mul(x, hn::Set(d, kTwoOverPi)), magic);  // magic + n
  const auto n = hn::Sub(t, magic);
  const auto q = hn::BitCast(du, t);  // its low two bits: n mod 4
  auto r = hn::Sub(x, hn::Mul(n, hn::Set(d, kPio2Hi)));
  r = hn::Sub(r, hn::Mul(n, hn::Set(d, kPio2Mid)));
  r = hn::Sub(r, hn::Mul(n, hn::Set(d, kPio2Lo)));
  const auto z = hn::Mul(r, r);

  // sin r = r + (z r) (S1 + z (S2 + z (S3 + z (S4 + z (S5 + z S6)))))
  auto ps = hn::Set(d, kSin[5]);
  for (int k = 4; k >= 1; --k) ps = hn::Add(hn::Mul(z, ps), hn::Set(d, kSin[k]));
  const auto sin_r =
      hn::Add(r, hn::Mul(hn::Mul(z, r), hn::Add(hn::Set(d, kSin[0]), hn::Mul(z, ps))));

  // cos r = w + (((1 - w) - z/2) + z (z (C1 + z (C2 + ... + z C6)))), w = 1 - z/2
  auto pc = hn::Set(d, kCos[5]);
  for (int k = 4; k >= 0; --k) pc = hn::Add(hn::Mul(z, pc), hn::Set(d, kCos[k]));
  const auto one = hn::Set(d, 1.0);
  const auto hz = hn::Mul(hn::Set(d, 0.5), z);
  const auto w = hn::Sub(one, hz);
  const auto cos_r = hn::Add(w, hn::Add(hn::Sub(hn::Sub(one, w), hz), hn::Mul(z, hn::Mul(z, pc))));

  // Quadrant q: sin x = sin r, cos r, -sin r, -cos r and cos x = cos r, -sin r, -cos r, sin r.
  const auto one_u = hn::Set(du, 1);
  const auto swap = hn::RebindMask(d, hn::Eq(hn::And(q, one_u), one_u));
  const auto sign = hn::Set(du, std::uint64_t{1} << 63);
  const auto sin_sign = hn::BitCast(d, hn::And(hn::ShiftLeft<62>(q), sign));  // q & 2
  const auto cos_sign = hn::BitCast(d, hn::And(hn::ShiftLeft<62>(hn::Add(q, one_u)), sign));
  sin_x = hn::Xor(hn::IfThenElse(swap, cos_r, sin_r), sin_sign);
  cos_x = hn::Xor(hn::IfThenElse(swap, sin_r, cos_r), cos_sign);
}

// sin x and cos x of one vector stored to s and c; lanes at or past 2^24 (or not a number) are
// redone by slow(j, x_j, s_j, c_j) instead.
template <class Slow>
HWY_INLINE void StoreSinCos(DD d, VD x, double* s, double* c, Slow slow) {
  VD sv, cv;
  SinCosVec(d, x, sv, cv);
  hn::StoreU(sv, d, s);
  hn::StoreU(cv, d, c);
  const auto fast = hn::Lt(hn::Abs(x), hn::Set(d, kDoubleAngleLimit));
  if (HWY_LIKELY(hn::AllTrue(d, fast))) return;
  HWY_ALIGN double xs[hn::MaxLanes(d)];
  hn::Store(x, d, xs);
  for (std::size_t j = 0; j < hn::Lanes(d); ++j) {
    if (!(std::fabs(xs[j]) < kDoubleAngleLimit)) slow(j, xs[j], s[j], c[j]);
  }
}

// One vector of angles x = position * inv (the slow lanes from position * inv_ld in long
// double), its results stored to s and c.
HWY_INLINE void AnglesVec(DD d, std::size_t position, VD x, const long double* inv_ld, double* s,
                          double* c) {
  StoreSinCos(d, x, s, c, [&](std::size_t j, double, double& sj, double& cj) {
    sin_cos_long_double(position, inv_ld[j], sj, cj);
  });
}

void SinCosAngles(std::size_t position, const double* inv_d, const long double* inv_ld,
                  std::size_t n, double* s, double* c) {
  const DD d;
  const std::size_t N = hn::Lanes(d);
  const auto p = hn::Set(d, static_cast<double>(position));
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    AnglesVec(d, position, hn::Mul(p, hn::LoadU(d, inv_d + i)), inv_ld + i, s + i, c + i);
  }
  if (i == n) return;
  // The last n - i angles, padded with zero angles (never on the long double path).
  HWY_ALIGN double inv[hn::MaxLanes(d)] = {};
  HWY_ALIGN double ts[hn::MaxLanes(d)];
  HWY_ALIGN double tc[hn::MaxLanes(d)];
  for (std::size_t j = 0; i + j < n; ++j) inv[j] = inv_d[i + j];
  AnglesVec(d, position, hn::Mul(p, hn::Load(d, inv)), inv_ld + i, ts, tc);
  for (std::size_t j = 0; i + j < n; ++j) {
    s[i + j] = ts[j];
    c[i + j] = tc[j];
  }
}

// One vector of values x, results stored to s and c.
HWY_INLINE void ValuesVec(DD d, VD x, double* s, double* c) {
  StoreSinCos(d, x, s, c, [](std::size_t, double xj, double& sj, double& cj) {
    sj = static_cast<double>(std::sin(static_cast<long double>(xj)));
    cj = static_cast<double>(std::cos(static_cast<long double>(xj)));
  });
}

void SinCosValues(const double* x, std::size_t n, double* s, double* c) {
  const DD d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) ValuesVec(d, hn::LoadU(d, x + i), s + i, c + i);
  if (i == n) return;
  HWY_ALIGN double xs[hn::MaxLanes(d)] = {};
  HWY_ALIGN double ts[hn::MaxLanes(d)];
  HWY_ALIGN double tc[hn::MaxLanes(d)];
  for (std::size_t j = 0; i + j < n; ++j) xs[j] = x[i + j];
  ValuesVec(d, hn::Load(d, xs), ts, tc);
  for (std::size_t j = 0; i + j < n; ++j) {
    s[i + j] = ts[j];
    c[i + j] = tc[j];
  }
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(SinCosAngles);
HWY_EXPORT(SinCosValues);

SinCosAnglesFn sin_cos_angles() {
  return &POSEMB_DISPATCH(SinCosAngles);
}

SinCosValuesFn sin_cos_values() {
  return &POSEMB_DISPATCH(SinCosValues);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
