// The lab's row kernels (lab/kernels_simd.hpp), compiled once per SIMD target by Highway and run
// on posemb's target through posemb/simd_dispatch.hpp. Every function does the operations its
// header comment spells out, in that order, on every target; scalar tails repeat them lane by
// lane, and row sums use the fixed 16-partial order (Sum16), so every target gives the same bits.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lab/kernels_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "lab/kernels_simd.hpp"
#include "posemb/simd_dispatch.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::lab::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<D>;
using V = hn::Vec<D>;
constexpr std::size_t N = hn::MaxLanes(D());
static_assert(N <= 16 && 16 % N == 0, "the 16 partial sums must be whole vectors");
constexpr std::size_t kVecs = 16 / N;  // vectors of partial sums

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

// tanh(u) = 1 - 2 / (exp(2u) + 1): +1 and -1 at the saturated ends (exp gives +inf or 0).
HWY_INLINE V Tanh(V u) {
  const D d;
  const V e = Exp(hn::Mul(hn::Set(d, 2.0f), u));
  return hn::Sub(hn::Set(d, 1.0f), hn::Div(hn::Set(d, 2.0f), hn::Add(e, hn::Set(d, 1.0f))));
}
HWY_INLINE float TanhScalar(float u) {
  return 1.0f - 2.0f / (ExpScalar(2.0f * u) + 1.0f);
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
HWY_INLINE void WeightedRows(float* out, const float* w, const float* x, std::size_t stride,
                             std::size_t n, std::size_t hd, bool from_zero) {
  const D d;
  constexpr std::size_t kBlock = 4;  // vectors per pass
  std::size_t i = 0;
  while (i + N <= hd) {
    const std::size_t m = std::min(kBlock, (hd - i) / N);
    V acc[kBlock];
    for (std::size_t k = 0; k < m; ++k)
      acc[k] = from_zero ? hn::Zero(d) : hn::LoadU(d, out + i + k * N);
    for (std::size_t s = 0; s < n; ++s) {
      const V ws = hn::Set(d, w[s]);
      const float* row = x + s * stride + i;
      for (std::size_t k = 0; k < m; ++k)
        acc[k] = hn::Add(acc[k], hn::Mul(ws, hn::LoadU(d, row + k * N)));
    }
    for (std::size_t k = 0; k < m; ++k) hn::StoreU(acc[k], d, out + i + k * N);
    i += m * N;
  }
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

void ExpRow(float* y, const float* x, std::size_t n) {
  const D d;
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Exp(hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] = ExpScalar(x[i]);
}

constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
constexpr float kGelu3A = 3.0f * kGeluA;

void GeluForwardRow(float* y, float* th, const float* x, std::size_t n) {
  const D d;
  const V s = hn::Set(d, kGeluS), a = hn::Set(d, kGeluA), half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const V v = hn::LoadU(d, x + i);
    const V u = hn::Mul(s, hn::Add(v, hn::Mul(hn::Mul(hn::Mul(a, v), v), v)));
    const V t = Tanh(u);
    if (th != nullptr) hn::StoreU(t, d, th + i);
    hn::StoreU(hn::Mul(hn::Mul(half, v), hn::Add(one, t)), d, y + i);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    const float t = TanhScalar(kGeluS * (v + ((kGeluA * v) * v) * v));
    if (th != nullptr) th[i] = t;
    y[i] = (0.5f * v) * (1.0f + t);
  }
}

void GeluBackwardRow(float* dx, const float* dy, const float* x, const float* th, std::size_t n) {
  const D d;
  const V s = hn::Set(d, kGeluS), a3 = hn::Set(d, kGelu3A), half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const V v = hn::LoadU(d, x + i), t = hn::LoadU(d, th + i);
    const V du = hn::Mul(s, hn::Add(one, hn::Mul(hn::Mul(a3, v), v)));
    const V left = hn::Mul(half, hn::Add(one, t));
    const V right = hn::Mul(hn::Mul(hn::Mul(half, v), hn::Sub(one, hn::Mul(t, t))), du);
    hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), hn::Add(left, right)), d, dx + i);
  }
  for (; i < n; ++i) {
    const float v = x[i], t = th[i];
    const float du = kGeluS * (1.0f + (kGelu3A * v) * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + ((0.5f * v) * (1.0f - t * t)) * du);
  }
}

void AddRow(float* x, const float* y, std::size_t n) {
  const D d;
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, x + i);
  }
  for (; i < n; ++i) x[i] = x[i] + y[i];
}

void LayerNormForwardRow(float* y, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, std::size_t c) {
  const D d;
  const float fc = static_cast<float>(c);
  const float mu = Sum16(
                       c, [&](std::size_t i) { return hn::LoadU(d, x + i); },
                       [&](std::size_t i) { return x[i]; }) /
                   fc;
  const V vmu = hn::Set(d, mu);
  const float var = Sum16(
                        c,
                        [&](std::size_t i) {
                          const V e = hn::Sub(hn::LoadU(d, x + i), vmu);
                          return hn::Mul(e, e);
                        },
                        [&](std::size_t i) { return (x[i] - mu) * (x[i] - mu); }) /
                    fc;
  const float rs = 1.0f / std::sqrt(var + 1e-5f);
  const V vrs = hn::Set(d, rs);
  std::size_t i = 0;
  for (; i + N <= c; i += N) {
    const V xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vmu), vrs);
    hn::StoreU(hn::Add(hn::Mul(xh, hn::LoadU(d, w + i)), hn::LoadU(d, b + i)), d, y + i);
  }
  for (; i < c; ++i) y[i] = ((x[i] - mu) * rs) * w[i] + b[i];
  *mean = mu;
  *rstd = rs;
}

void LayerNormBackwardRow(float* dx, const float* dy, const float* x, float mu, float rs,
                          const float* w, std::size_t c) {
  const D d;
  const float fc = static_cast<float>(c);
  const V vmu = hn::Set(d, mu), vrs = hn::Set(d, rs);
  const float s1 =
      Sum16(
          c, [&](std::size_t i) { return hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i)); },
          [&](std::size_t i) { return dy[i] * w[i]; }) /
      fc;
  const float s2 = Sum16(
                       c,
                       [&](std::size_t i) {
                         const V g = hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i));
                         return hn::Mul(hn::Mul(g, hn::Sub(hn::LoadU(d, x + i), vmu)), vrs);
                       },
                       [&](std::size_t i) { return ((dy[i] * w[i]) * (x[i] - mu)) * rs; }) /
                   fc;
  const V vs1 = hn::Set(d, s1), vs2 = hn::Set(d, s2);
  std::size_t i = 0;
  for (; i + N <= c; i += N) {
    const V g = hn::Mul(hn::LoadU(d, dy + i), hn::LoadU(d, w + i));
    const V xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vmu), vrs);
    const V t = hn::Mul(vrs, hn::Sub(hn::Sub(g, vs1), hn::Mul(xh, vs2)));
    hn::StoreU(hn::Add(hn::LoadU(d, dx + i), t), d, dx + i);
  }
  for (; i < c; ++i) {
    const float g = dy[i] * w[i];
    dx[i] = dx[i] + rs * ((g - s1) - ((x[i] - mu) * rs) * s2);
  }
}

void LayerNormParamColumns(float* aw, float* ab, const float* dy, std::size_t dy_stride,
                           const float* x, std::size_t x_stride, const float* mean,
                           const float* rstd, std::size_t rows, std::size_t n) {
  const D d;
  std::size_t j = 0;
  for (; j + N <= n; j += N) {
    V sw = hn::LoadU(d, aw + j), sb = hn::LoadU(d, ab + j);
    for (std::size_t r = 0; r < rows; ++r) {
      const V g = hn::LoadU(d, dy + r * dy_stride + j);
      const V e = hn::Sub(hn::LoadU(d, x + r * x_stride + j), hn::Set(d, mean[r]));
      sw = hn::Add(sw, hn::Mul(hn::Mul(g, e), hn::Set(d, rstd[r])));
      sb = hn::Add(sb, g);
    }
    hn::StoreU(sw, d, aw + j);
    hn::StoreU(sb, d, ab + j);
  }
  for (; j < n; ++j) {
    float sw = aw[j], sb = ab[j];
    for (std::size_t r = 0; r < rows; ++r) {
      const float g = dy[r * dy_stride + j];
      sw = sw + (g * (x[r * x_stride + j] - mean[r])) * rstd[r];
      sb = sb + g;
    }
    aw[j] = sw;
    ab[j] = sb;
  }
}

SoftmaxSums SoftmaxRow(float* dl, const float* l, std::size_t n, std::size_t target, float inv) {
  const D d;
  const float mx = MaxRow(l, n);
  const V vmx = hn::Set(d, mx);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Exp(hn::Sub(hn::LoadU(d, l + i), vmx)), d, dl + i);
  for (; i < n; ++i) dl[i] = ExpScalar(l[i] - mx);
  const float s = Sum16(
      n, [&](std::size_t k) { return hn::LoadU(d, dl + k); }, [&](std::size_t k) { return dl[k]; });
  const float is = 1.0f / s;
  const V vis = hn::Set(d, is), vinv = hn::Set(d, inv);
  for (i = 0; i + N <= n; i += N) {
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, dl + i), vis), vinv), d, dl + i);
  }
  for (; i < n; ++i) dl[i] = (dl[i] * is) * inv;
  dl[target] = dl[target] - inv;
  return {s, mx};
}

// p[s] = lab_exp(p[s] - max p) for s < n, then p[s] *= 1 / (their 16-partial sum): attention's
// softmax over one query's scores.
HWY_INLINE void SoftmaxInPlace(float* p, std::size_t n) {
  const D d;
  const float mx = MaxRow(p, n);
  const V vmx = hn::Set(d, mx);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Exp(hn::Sub(hn::LoadU(d, p + i), vmx)), d, p + i);
  for (; i < n; ++i) p[i] = ExpScalar(p[i] - mx);
  const float sum = Sum16(
      n, [&](std::size_t k) { return hn::LoadU(d, p + k); }, [&](std::size_t k) { return p[k]; });
  const float inv = 1.0f / sum;
  const V vinv = hn::Set(d, inv);
  for (i = 0; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, p + i), vinv), d, p + i);
  for (; i < n; ++i) p[i] = p[i] * inv;
}

void AttendRow(float* out, float* p, const float* q, const float* seq, std::size_t stride,
               std::size_t c, std::size_t hd, std::size_t t, float scale) {
  const std::size_t n = t + 1;
  for (std::size_t s = 0; s < n; ++s) p[s] = Dot16(q, seq + s * stride + c, hd) * scale;
  SoftmaxInPlace(p, n);
  WeightedRows(out, p, seq + 2 * c, stride, n, hd, true);
}

// WeightedRows(out_r, w_r, x, stride, n0 + r, hd, from_zero) for the m <= kHeadRows rows r,
// out_r = out + r out_stride and w_r = w + r ldw: the same operations for each row, the rows'
// partial sums kept in registers side by side, so that their chains of additions run at once.
HWY_INLINE void WeightedRowsBlock(float* out, std::size_t out_stride, const float* w,
                                  std::size_t ldw, const float* x, std::size_t stride,
                                  std::size_t n0, std::size_t m, std::size_t hd, bool from_zero) {
  const D d;
  const std::size_t n_end = n0 + m - 1;  // the last row's terms
  std::size_t i = 0;
  for (; i + N <= hd; i += N) {
    V acc[kHeadRows];
    for (std::size_t r = 0; r < kHeadRows; ++r) {
      acc[r] = from_zero || r >= m ? hn::Zero(d) : hn::LoadU(d, out + r * out_stride + i);
    }
    for (std::size_t s = 0; s < n_end; ++s) {
      const V xs = hn::LoadU(d, x + s * stride + i);
      for (std::size_t r = 0; r < kHeadRows; ++r) {
        if (r < m && s < n0 + r) acc[r] = hn::Add(acc[r], hn::Mul(hn::Set(d, w[r * ldw + s]), xs));
      }
    }
    for (std::size_t r = 0; r < m; ++r) hn::StoreU(acc[r], d, out + r * out_stride + i);
  }
  for (; i < hd; ++i) {
    for (std::size_t r = 0; r < m; ++r) {
      float v = from_zero ? 0.0f : out[r * out_stride + i];
      for (std::size_t s = 0; s < n0 + r; ++s) v = v + w[r * ldw + s] * x[s * stride + i];
      out[r * out_stride + i] = v;
    }
  }
}

void AttendHead(const AttendHeadJob& j) {
  const D d;
  const std::size_t T = j.seq_len, c = j.c, hd = j.hd, ldk = ScratchColumns(T);
  Transpose(j.kt, ldk, j.qkv + c, j.qkv_stride, T, hd);
  float* const rows = j.kt + hd * ldk;  // kHeadRows rows of ldk floats
  const V vscale = hn::Set(d, j.scale), ninf = hn::Set(d, -HUGE_VALF);
  for (std::size_t t0 = 0; t0 < T; t0 += kHeadRows) {
    const std::size_t m = std::min(kHeadRows, T - t0);
    // Row r is query t0 + r over keys s < n = t0 + r + 1, padded to nv (a multiple of N, at
    // most ldk) so that every step is whole vectors: AttendRow's operations on s < n (the dot
    // products as DotsAcross computes them, p[s] *= scale, then SoftmaxInPlace's), the padding
    // lanes set to -inf for the maximum and to 0 after the exponential: they add +0 to the 16
    // partial sums of non-negative terms, which leaves them as they are.
    auto n_of = [&](std::size_t r) { return t0 + r + 1; };
    auto nv_of = [&](std::size_t r) { return (n_of(r) + N - 1) / N * N; };
    V mx[kHeadRows];
    for (std::size_t r = 0; r < m; ++r) {
      float* row = rows + r * ldk;
      const std::size_t n = n_of(r), nv = nv_of(r);
      DotsAcross(row, j.qkv + (t0 + r) * j.qkv_stride, j.kt, ldk, hd, nv);
      V mr = ninf;
      for (std::size_t s = 0; s < nv; s += N) {
        V x = hn::Mul(hn::LoadU(d, row + s), vscale);
        if (s + N > n) x = hn::IfThenElse(hn::FirstN(d, n - s), x, ninf);
        hn::StoreU(x, d, row + s);
        mr = hn::Max(mr, x);
      }
      mx[r] = hn::Set(d, hn::GetLane(hn::MaxOfLanes(d, mr)));
    }
    for (std::size_t r = 0; r < m; ++r) {
      float* row = rows + r * ldk;
      const std::size_t n = n_of(r), nv = nv_of(r);
      for (std::size_t s = 0; s + N <= n; s += N) {
        hn::StoreU(Exp(hn::Sub(hn::LoadU(d, row + s), mx[r])), d, row + s);
      }
      if (const std::size_t s = n / N * N; s < nv) {
        // The padding lanes' exponential of 0 (not of -inf, whose result, exp(-104) before
        // clamping, is subnormal and slow to compute) is then replaced by 0.
        const auto live = hn::FirstN(d, n - s);
        const V x = hn::IfThenElseZero(live, hn::Sub(hn::LoadU(d, row + s), mx[r]));
        hn::StoreU(hn::IfThenElseZero(live, Exp(x)), d, row + s);
      }
    }
    float inv[kHeadRows];
    for (std::size_t r = 0; r < m; ++r) {
      const float* row = rows + r * ldk;
      inv[r] = 1.0f / Sum16(
                          nv_of(r), [&](std::size_t k) { return hn::LoadU(d, row + k); },
                          [&](std::size_t k) { return row[k]; });
    }
    for (std::size_t r = 0; r < m; ++r) {
      float* row = rows + r * ldk;
      const std::size_t n = n_of(r), nv = nv_of(r);
      const V vinv = hn::Set(d, inv[r]);
      for (std::size_t s = 0; s < nv; s += N) {
        hn::StoreU(hn::Mul(hn::LoadU(d, row + s), vinv), d, row + s);
      }
      float* p = j.probs + (t0 + r) * T;
      for (std::size_t s = 0; s < n; ++s) p[s] = row[s];
      for (std::size_t s = n; s < T; ++s) p[s] = 0.0f;
    }
    WeightedRowsBlock(j.y + t0 * j.y_stride, j.y_stride, rows, ldk, j.qkv + 2 * c, j.qkv_stride,
                      t0 + 1, m, hd, true);
  }
}

// y_s[i] = y_s[i] + a_r[s] x_r[i] for every row s < n0 + m - 1 and, for each s, the rows r < m
// with s < n0 + r in ascending r (AxpyRow's operations in the order of the rows), y_s = y + s
// y_stride, a_r = a + r lda, x_r = x + r x_stride, i < hd: y_s is loaded and stored once for
// the whole block.
HWY_INLINE void AxpyRowsBlock(float* y, std::size_t y_stride, const float* a, std::size_t lda,
                              const float* x, std::size_t x_stride, std::size_t n0, std::size_t m,
                              std::size_t hd) {
  const D d;
  const std::size_t n_end = n0 + m - 1;
  for (std::size_t s = 0; s < n_end; ++s) {
    float* ys = y + s * y_stride;
    const std::size_t r0 = s < n0 ? 0 : s - n0 + 1;  // the rows with s < n0 + r
    std::size_t i = 0;
    for (; i + N <= hd; i += N) {
      V acc = hn::LoadU(d, ys + i);
      for (std::size_t r = r0; r < m; ++r) {
        acc = hn::Add(acc, hn::Mul(hn::Set(d, a[r * lda + s]), hn::LoadU(d, x + r * x_stride + i)));
      }
      hn::StoreU(acc, d, ys + i);
    }
    for (; i < hd; ++i) {
      float v = ys[i];
      for (std::size_t r = r0; r < m; ++r) v = v + a[r * lda + s] * x[r * x_stride + i];
      ys[i] = v;
    }
  }
}

void AttentionBackwardHead(const AttentionHeadJob& j) {
  const D d;
  const std::size_t T = j.seq_len, c = j.c, hd = j.hd;
  auto at = [&](std::size_t t, std::size_t part) { return j.qkv + t * j.qkv_stride + part * c; };
  auto dat = [&](std::size_t t, std::size_t part) { return j.dqkv + t * j.dqkv_stride + part * c; };
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t part = 0; part < 3; ++part) {
      float* z = dat(t, part);
      for (std::size_t i = 0; i < hd; ++i) z[i] = 0.0f;
    }
  }
  const std::size_t ldk = ScratchColumns(T);
  Transpose(j.vt, ldk, j.qkv + 2 * c, j.qkv_stride, T, hd);
  float* const rows = j.vt + hd * ldk;  // kHeadRows rows of ldk floats: dp, then ds
  // Blocks of kHeadRows query rows t = t0 + r (n = t + 1 terms each), each step over the whole
  // block, in the order that keeps every sum's order: for each row, dp[s] = Dot16(g, v_s) (as
  // DotsAcross computes it), dot += p[s] dp[s] in ascending s; every dv_s and dk_s adds the rows'
  // contributions in ascending t; dq_t is WeightedRows' sum over s.
  for (std::size_t t0 = 0; t0 < T; t0 += kHeadRows) {
    const std::size_t m = std::min(kHeadRows, T - t0);
    const float* p = j.probs + t0 * T;  // row r at p + r T
    for (std::size_t r = 0; r < m; ++r) {
      DotsAcross(rows + r * ldk, j.dy + (t0 + r) * j.dy_stride, j.vt, ldk, hd, t0 + r + 1);
    }
    float dot[kHeadRows] = {};
    for (std::size_t s = 0; s < t0 + m; ++s) {
      for (std::size_t r = 0; r < kHeadRows; ++r) {
        if (r < m && s <= t0 + r) dot[r] = dot[r] + p[r * T + s] * rows[r * ldk + s];
      }
    }
    AxpyRowsBlock(dat(0, 2), j.dqkv_stride, p, T, j.dy + t0 * j.dy_stride, j.dy_stride, t0 + 1, m,
                  hd);
    // ds = (p[s] (dp[s] - dot)) scale, kept in the dp rows.
    for (std::size_t r = 0; r < m; ++r) {
      float* ds = rows + r * ldk;
      const float* pr = p + r * T;
      const std::size_t n = t0 + r + 1;
      const V vdot = hn::Set(d, dot[r]), vscale = hn::Set(d, j.scale);
      std::size_t s = 0;
      for (; s + N <= n; s += N) {
        const V v = hn::Mul(hn::LoadU(d, pr + s), hn::Sub(hn::LoadU(d, ds + s), vdot));
        hn::StoreU(hn::Mul(v, vscale), d, ds + s);
      }
      for (; s < n; ++s) ds[s] = (pr[s] * (ds[s] - dot[r])) * j.scale;
    }
    WeightedRowsBlock(dat(t0, 0), j.dqkv_stride, rows, ldk, at(0, 1), j.qkv_stride, t0 + 1, m, hd,
                      false);
    AxpyRowsBlock(dat(0, 1), j.dqkv_stride, rows, ldk, at(t0, 0), j.qkv_stride, t0 + 1, m, hd);
  }
}

}  // namespace posemb::lab::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::lab::simd {

HWY_EXPORT(ExpRow);
HWY_EXPORT(GeluForwardRow);
HWY_EXPORT(GeluBackwardRow);
HWY_EXPORT(AddRow);
HWY_EXPORT(LayerNormForwardRow);
HWY_EXPORT(LayerNormBackwardRow);
HWY_EXPORT(LayerNormParamColumns);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(AttendRow);
HWY_EXPORT(AttendHead);
HWY_EXPORT(AttentionBackwardHead);

ExpRowFn exp_row() {
  return &POSEMB_DISPATCH(ExpRow);
}
GeluForwardRowFn gelu_forward_row() {
  return &POSEMB_DISPATCH(GeluForwardRow);
}
GeluBackwardRowFn gelu_backward_row() {
  return &POSEMB_DISPATCH(GeluBackwardRow);
}
AddRowFn add_row() {
  return &POSEMB_DISPATCH(AddRow);
}
LayerNormForwardRowFn layernorm_forward_row() {
  return &POSEMB_DISPATCH(LayerNormForwardRow);
}
LayerNormBackwardRowFn layernorm_backward_row() {
  return &POSEMB_DISPATCH(LayerNormBackwardRow);
}
LayerNormParamColumnsFn layernorm_param_columns() {
  return &POSEMB_DISPATCH(LayerNormParamColumns);
}
SoftmaxRowFn softmax_row() {
  return &POSEMB_DISPATCH(SoftmaxRow);
}
AttendRowFn attend_row() {
  return &POSEMB_DISPATCH(AttendRow);
}
AttendHeadFn attend_head() {
  return &POSEMB_DISPATCH(AttendHead);
}
AttentionBackwardHeadFn attention_backward_head() {
  return &POSEMB_DISPATCH(AttentionBackwardHead);
}

}  // namespace posemb::lab::simd
#endif  // HWY_ONCE
