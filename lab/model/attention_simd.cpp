// The lab's attention kernels (lab/kernels_simd.hpp: AttendRow, AttendHead,
// AttentionBackwardHead), compiled once per SIMD target by Highway and run on posemb's target
// through posemb/simd_dispatch.hpp, with the same rule as lab/kernels_simd.cpp: every function
// does the operations its header comment spells out, in that order, on every target, so every
// target gives the same bits.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lab/model/attention_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "lab/model/kernels_simd.hpp"
#include "lab/model/simd_common-inl.hpp"
#include "posemb/simd_dispatch.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::lab::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
               std::size_t c, std::size_t hd, std::size_t t, float scale, const float* bias) {
  const std::size_t n = t + 1;
  for (std::size_t s = 0; s < n; ++s) p[s] = Dot16(q, seq + s * stride + c, hd) * scale;
  if (bias != nullptr) {
    for (std::size_t s = 0; s < n; ++s) p[s] = p[s] + bias[s];
  }
  SoftmaxInPlace(p, n);
  WeightedRows(out, p, seq + 2 * c, stride, n, hd, true);
}

// WeightedRows(out_r, w_r, x, stride, n0 + r, hd, true) for the m <= kHeadRows rows r,
// out_r = out + r out_stride and w_r = w + r ldw: the same operations for each row, the rows'
// partial sums kept in registers side by side, so that their chains of additions run at once.
// Columns [i, ...) in whole vectors of dd's width; returns the first column left.
template <class DD>
HWY_INLINE std::size_t WeightedRowsBlockCols(DD dd, float* out, std::size_t out_stride,
                                             const float* w, std::size_t ldw, const float* x,
                                             std::size_t stride, std::size_t n0, std::size_t m,
                                             std::size_t hd, std::size_t i) {
  using VD = hn::Vec<DD>;
  const std::size_t ND = hn::Lanes(dd);
  const std::size_t n_end = n0 + m - 1;  // the last row's terms
  for (; i + ND <= hd; i += ND) {
    VD acc[kHeadRows];
    for (std::size_t r = 0; r < kHeadRows; ++r) acc[r] = hn::Zero(dd);
    for (std::size_t s = 0; s < n_end; ++s) {
      const VD xs = hn::LoadU(dd, x + s * stride + i);
      for (std::size_t r = 0; r < kHeadRows; ++r) {
        if (r < m && s < n0 + r) acc[r] = hn::Add(acc[r], hn::Mul(hn::Set(dd, w[r * ldw + s]), xs));
      }
    }
    for (std::size_t r = 0; r < m; ++r) hn::StoreU(acc[r], dd, out + r * out_stride + i);
  }
  return i;
}

HWY_INLINE void WeightedRowsBlock(float* out, std::size_t out_stride, const float* w,
                                  std::size_t ldw, const float* x, std::size_t stride,
                                  std::size_t n0, std::size_t m, std::size_t hd) {
  std::size_t i = WeightedRowsBlockCols(D(), out, out_stride, w, ldw, x, stride, n0, m, hd, 0);
  if constexpr (kHalfTail) {
    i = WeightedRowsBlockCols(DH(), out, out_stride, w, ldw, x, stride, n0, m, hd, i);
  }
  for (; i < hd; ++i) {
    for (std::size_t r = 0; r < m; ++r) {
      float v = 0.0f;
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
      // The row's bias (AttendRow's p[s] + bias[s]) for keys s, padding lanes masked below.
      const float* bias = j.bias == nullptr ? nullptr : j.bias + (T - 1 - (t0 + r));
      V mr = ninf;
      for (std::size_t s = 0; s < nv; s += N) {
        V x = hn::Mul(hn::LoadU(d, row + s), vscale);
        if (bias != nullptr) x = hn::Add(x, hn::LoadU(d, bias + s));
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
        // The padding lanes take the exponential of 0, then 0: -inf would be clamped to -104,
        // whose exponential is subnormal and slow to compute.
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
                      t0 + 1, m, hd);
  }
}

// Columns [i, ...) of AxpyRowsBlock's row s in whole vectors of dd's width; returns the first
// column left.
template <class DD>
HWY_INLINE std::size_t AxpyRowsBlockCols(DD dd, float* ys, const float* a, std::size_t lda,
                                         const float* x, std::size_t x_stride, std::size_t s,
                                         std::size_t r0, std::size_t m, std::size_t hd,
                                         std::size_t i) {
  using VD = hn::Vec<DD>;
  const std::size_t ND = hn::Lanes(dd);
  for (; i + ND <= hd; i += ND) {
    VD acc = hn::LoadU(dd, ys + i);
    for (std::size_t r = r0; r < m; ++r) {
      acc = hn::Add(acc, hn::Mul(hn::Set(dd, a[r * lda + s]), hn::LoadU(dd, x + r * x_stride + i)));
    }
    hn::StoreU(acc, dd, ys + i);
  }
  return i;
}

// y_s[i] = y_s[i] + a_r[s] x_r[i] for every row s < n0 + m - 1 and, for each s, the rows r < m
// with s < n0 + r in ascending r (AxpyRow's operations in the order of the rows), y_s = y + s
// y_stride, a_r = a + r lda, x_r = x + r x_stride, i < hd: y_s is loaded and stored once for
// the whole block.
HWY_INLINE void AxpyRowsBlock(float* y, std::size_t y_stride, const float* a, std::size_t lda,
                              const float* x, std::size_t x_stride, std::size_t n0, std::size_t m,
                              std::size_t hd) {
  const std::size_t n_end = n0 + m - 1;
  for (std::size_t s = 0; s < n_end; ++s) {
    float* ys = y + s * y_stride;
    const std::size_t r0 = s < n0 ? 0 : s - n0 + 1;  // the rows with s < n0 + r
    std::size_t i = AxpyRowsBlockCols(D(), ys, a, lda, x, x_stride, s, r0, m, hd, 0);
    if constexpr (kHalfTail) i = AxpyRowsBlockCols(DH(), ys, a, lda, x, x_stride, s, r0, m, hd, i);
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
  // dk and dv accumulate over the rows; dq_t is written whole by its row's weighted sum (from
  // +0, as the sum into a zeroed row was).
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t part = 1; part < 3; ++part) {
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
      if (j.dbias != nullptr) {
        // The bias's gradient at distance (t0 + r) - s: the product ds is scaled from below.
        for (std::size_t s = 0; s < n; ++s) j.dbias[t0 + r - s] += pr[s] * (ds[s] - dot[r]);
      }
      const V vdot = hn::Set(d, dot[r]), vscale = hn::Set(d, j.scale);
      std::size_t s = 0;
      for (; s + N <= n; s += N) {
        const V v = hn::Mul(hn::LoadU(d, pr + s), hn::Sub(hn::LoadU(d, ds + s), vdot));
        hn::StoreU(hn::Mul(v, vscale), d, ds + s);
      }
      for (; s < n; ++s) ds[s] = (pr[s] * (ds[s] - dot[r])) * j.scale;
    }
    WeightedRowsBlock(dat(t0, 0), j.dqkv_stride, rows, ldk, at(0, 1), j.qkv_stride, t0 + 1, m, hd);
    AxpyRowsBlock(dat(0, 1), j.dqkv_stride, rows, ldk, at(t0, 0), j.qkv_stride, t0 + 1, m, hd);
  }
}

}  // namespace posemb::lab::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::lab::simd {

HWY_EXPORT(AttendRow);
HWY_EXPORT(AttendHead);
HWY_EXPORT(AttentionBackwardHead);

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
