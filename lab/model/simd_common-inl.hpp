// Per-target helpers of the lab's SIMD kernels (lab/kernels_simd.cpp, lab/attention_simd.cpp):
// lab_exp and its scalar twin, the fixed 16-partial sum, dot products, weighted rows. Included
// by each kernel file once per Highway target (after hwy/highway.h), so guarded per target, as
// Highway's own -inl headers are.
#if defined(POSEMB_LAB_SIMD_COMMON_INL_HPP_) == defined(HWY_TARGET_TOGGLE)  // NOLINT
#ifdef POSEMB_LAB_SIMD_COMMON_INL_HPP_
#undef POSEMB_LAB_SIMD_COMMON_INL_HPP_
#else
#define POSEMB_LAB_SIMD_COMMON_INL_HPP_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace posemb::lab::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<D>;
using V = hn::Vec<D>;
constexpr std::size_t N = hn::MaxLanes(D());
static_assert(N <= 16 && 16 % N == 0, "the 16 partial sums must be whole vectors");
constexpr std::size_t kVecs = 16 / N;  // vectors of partial sums
// Vectors of half the width, for the columns left after the whole vectors of a row (a head of 8
// columns on a 16-lane target): each lane does the operations of the scalar loop it replaces.
// Targets of 8 lanes or more only.
constexpr bool kHalfTail = N >= 8;
using DH = hn::CappedTag<float, (N >= 2 ? N / 2 : 1)>;

// lab_exp (lab/kernels_simd.hpp). The constants: log2(e); c1 + c2 = ln 2 with c1 exact in 9
// bits, so n c1 is exact; 1.5 * 2^23, whose addition rounds to an integer (ties to even) held in
// the low mantissa bits; the clamp bounds, beyond which the result is 0 or +inf anyway.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kC1 = 0.693359375f;
constexpr float kC2 = -2.12194440e-4f;
constexpr float kRound = 12582912.0f;
constexpr float kExpLo = -104.0f, kExpHi = 100.0f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

HWY_INLINE V Exp(V x) {
  const D d;
  const DI di;
  x = hn::IfThenElse(hn::Lt(x, hn::Set(d, kExpLo)), hn::Set(d, kExpLo), x);
  x = hn::IfThenElse(hn::Lt(hn::Set(d, kExpHi), x), hn::Set(d, kExpHi), x);
  const V t = hn::Add(hn::Mul(x, hn::Set(d, kLog2e)), hn::Set(d, kRound));
  const V nf = hn::Sub(t, hn::Set(d, kRound));
  const auto n = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, hn::Set(d, kRound)));
  const V r = hn::Sub(hn::Sub(x, hn::Mul(nf, hn::Set(d, kC1))), hn::Mul(nf, hn::Set(d, kC2)));
  const V z = hn::Mul(r, r);
  V p = hn::Set(d, kP0);
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kP1));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kP2));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kP3));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kP4));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kP5));
  const V y = hn::Add(hn::Add(hn::Mul(p, z), r), hn::Set(d, 1.0f));
  // 2^n as 2^a 2^b, a = floor(n / 2), both normal for n in [-150, 144]: one rounding at the end,
  // into the subnormals when the result lies there.
  const auto a = hn::ShiftRight<1>(n);
  const auto b = hn::Sub(n, a);
  const auto bias = hn::Set(di, 127);
  const V sa = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(a, bias)));
  const V sb = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(b, bias)));
  return hn::Mul(hn::Mul(y, sa), sb);
}

// The same operations on one float (the scalar tails).
HWY_INLINE float ExpScalar(float x) {
  x = x < kExpLo ? kExpLo : x;
  x = kExpHi < x ? kExpHi : x;
  const float t = x * kLog2e + kRound;
  const float nf = t - kRound;
  const std::int32_t n = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kRound);
  const float r = (x - nf * kC1) - nf * kC2;
  const float z = r * r;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const float y = (p * z + r) + 1.0f;
  const std::int32_t a = n >> 1, b = n - a;
  const float sa = std::bit_cast<float>(static_cast<std::uint32_t>(a + 127) << 23);
  const float sb = std::bit_cast<float>(static_cast<std::uint32_t>(b + 127) << 23);
  return (y * sa) * sb;
}

// The pairwise combination of the 16 partial sums (the last step of the fixed order).
HWY_INLINE float Combine16(float* p) {
  for (std::size_t w = 8; w >= 1; w /= 2) {
    for (std::size_t j = 0; j < w; ++j) p[j] = p[j] + p[j + w];
  }
  return p[0];
}

// The sum of term(i), i < n, in the fixed 16-partial order: vterm(i) gives terms i..i+N-1 as a
// vector, sterm(i) term i alone (the same operations).
template <class VTerm, class STerm>
HWY_INLINE float Sum16(std::size_t n, VTerm vterm, STerm sterm) {
  const D d;
  V acc[kVecs];
  for (std::size_t k = 0; k < kVecs; ++k) acc[k] = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (std::size_t k = 0; k < kVecs; ++k) acc[k] = hn::Add(acc[k], vterm(i + k * N));
  }
  alignas(64) float p[16];
  for (std::size_t k = 0; k < kVecs; ++k) hn::Store(acc[k], d, p + k * N);
  for (std::size_t j = 0; i + j < n; ++j) p[j] = p[j] + sterm(i + j);
  return Combine16(p);
}

// The largest of x[0..n) (n >= 1); the order does not matter for a maximum.
HWY_INLINE float MaxRow(const float* x, std::size_t n) {
  const D d;
  float mx = x[0];
  std::size_t i = 0;
  if (n >= N) {
    V m = hn::LoadU(d, x);
    for (i = N; i + N <= n; i += N) m = hn::Max(m, hn::LoadU(d, x + i));
    mx = hn::GetLane(hn::MaxOfLanes(d, m));
  }
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

// y[i] += a x[i].
HWY_INLINE void AxpyRow(float* y, float a, const float* x, std::size_t n) {
  const D d;
  const V va = hn::Set(d, a);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::Mul(va, hn::LoadU(d, x + i))), d, y + i);
  }
  for (; i < n; ++i) y[i] = y[i] + a * x[i];
}

// The 16-partial sum of a[i] b[i].
HWY_INLINE float Dot16(const float* a, const float* b, std::size_t n) {
  const D d;
  return Sum16(
      n, [&](std::size_t i) { return hn::Mul(hn::LoadU(d, a + i), hn::LoadU(d, b + i)); },
      [&](std::size_t i) { return a[i] * b[i]; });
}

// out[s] = Dot16(a, k_s, hd) for s < n, computed for N keys at once from the keys' transpose:
// kt holds k_s[i] at kt[i * ldk + s] (ldk a multiple of 16, columns n..ldk-1 padded). Lane s
// does exactly Dot16's operations: partial j = 0 + a[j] k_s[j] + a[j + 16] k_s[j + 16] + ... in
// order, the pairwise combination of the 16 partials last.
HWY_INLINE void DotsAcross(float* out, const float* a, const float* kt, std::size_t ldk,
                           std::size_t hd, std::size_t n) {
  const D d;
  for (std::size_t s0 = 0; s0 < n; s0 += N) {
    V part[16];
    for (std::size_t j = 0; j < 16; ++j) part[j] = hn::Zero(d);
    std::size_t i = 0;
    for (; i + 16 <= hd; i += 16) {
      for (std::size_t j = 0; j < 16; ++j) {
        part[j] =
            hn::Add(part[j], hn::Mul(hn::Set(d, a[i + j]), hn::LoadU(d, kt + (i + j) * ldk + s0)));
      }
    }
    for (std::size_t j = 0; i + j < hd; ++j) {
      part[j] =
          hn::Add(part[j], hn::Mul(hn::Set(d, a[i + j]), hn::LoadU(d, kt + (i + j) * ldk + s0)));
    }
    for (std::size_t w = 8; w >= 1; w /= 2) {
      for (std::size_t j = 0; j < w; ++j) part[j] = hn::Add(part[j], part[j + w]);
    }
    if (s0 + N <= n) {
      hn::StoreU(part[0], d, out + s0);
    } else {
      alignas(64) float tmp[N];
      hn::Store(part[0], d, tmp);
      for (std::size_t k = 0; s0 + k < n; ++k) out[s0 + k] = tmp[k];
    }
  }
}

// out[i] = out[i] + w[s] x_s[i] for s = 0..n-1 in order, x_s = x + s stride, i < hd (from 0
// instead of out[i] when `from_zero`): AxpyRow's operations for each s, with the partial sums
// held in registers across s instead of stored and reloaded for every s.
template <class DD>
HWY_INLINE std::size_t WeightedRowsCols(DD dd, float* out, const float* w, const float* x,
                                        std::size_t stride, std::size_t n, std::size_t hd,
                                        bool from_zero, std::size_t i) {
  using VD = hn::Vec<DD>;
  const std::size_t ND = hn::Lanes(dd);
  constexpr std::size_t kBlock = 4;  // vectors per pass
  while (i + ND <= hd) {
    const std::size_t m = std::min(kBlock, (hd - i) / ND);
    VD acc[kBlock];
    for (std::size_t k = 0; k < m; ++k)
      acc[k] = from_zero ? hn::Zero(dd) : hn::LoadU(dd, out + i + k * ND);
    for (std::size_t s = 0; s < n; ++s) {
      const VD ws = hn::Set(dd, w[s]);
      const float* row = x + s * stride + i;
      for (std::size_t k = 0; k < m; ++k)
        acc[k] = hn::Add(acc[k], hn::Mul(ws, hn::LoadU(dd, row + k * ND)));
    }
    for (std::size_t k = 0; k < m; ++k) hn::StoreU(acc[k], dd, out + i + k * ND);
    i += m * ND;
  }
  return i;
}

HWY_INLINE void WeightedRows(float* out, const float* w, const float* x, std::size_t stride,
                             std::size_t n, std::size_t hd, bool from_zero) {
  std::size_t i = WeightedRowsCols(D(), out, w, x, stride, n, hd, from_zero, 0);
  if constexpr (kHalfTail) i = WeightedRowsCols(DH(), out, w, x, stride, n, hd, from_zero, i);
  for (; i < hd; ++i) {
    float v = from_zero ? 0.0f : out[i];
    for (std::size_t s = 0; s < n; ++s) v = v + w[s] * x[s * stride + i];
    out[i] = v;
  }
}

// kt[i * ldk + s] = x_s[i] for the T rows x_s = x + s stride, i < hd; columns T..ldk-1 zero.
HWY_INLINE void Transpose(float* kt, std::size_t ldk, const float* x, std::size_t stride,
                          std::size_t T, std::size_t hd) {
  for (std::size_t i = 0; i < hd; ++i) {
    float* row = kt + i * ldk;
    for (std::size_t s = 0; s < T; ++s) row[s] = x[s * stride + i];
    for (std::size_t s = T; s < ldk; ++s) row[s] = 0.0f;
  }
}

}  // namespace posemb::lab::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
