// The rotary embedding's rotation (rope_kernels.hpp), compiled once per SIMD target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/rope_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Re-included once per target (not guarded).
#include <hwy/highway.h>
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
#include <emmintrin.h>  // SSE2, for the baseline's vectors
#endif

#include <algorithm>
#include <cstddef>

#include "core/rope_kernels.hpp"
#include "core/simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace posemb::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 8 lanes (256 bits), on AVX-512 too: with 16 lanes the rotation of rows coming from
// memory measured 0.67-0.80x the plain loop's speed against 0.88-1.05x with 8 on this machine
// (AMD EPYC, AVX-512; alternating one-thread runs, docs/layer.md).
using DF = hn::CappedTag<float, 8>;

// The vector operations of the rotation. On the baseline (Highway's emulated 128-bit target),
// x86-64's SSE2 itself: the emulation compiled into 8.2 million instructions for a rotation of
// GPT-2's queries against SSE4's 5.2 million, enough to make the baseline slower than the plain
// loop. The same float operations either way.
#if HWY_TARGET == HWY_EMU128 && HWY_ARCH_X86_64
struct Ops {
  using V = __m128;
  static constexpr std::size_t N = 4;
  static V Load(const float* p) { return _mm_loadu_ps(p); }
  static void Store(V v, float* p) { _mm_storeu_ps(p, v); }
  static V Mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm_sub_ps(a, b); }
  // a = x[0], x[2], x[4], x[6] and b = x[1], x[3], ...
  static void LoadInterleaved2(const float* x, V& a, V& b) {
    const V lo = _mm_loadu_ps(x), hi = _mm_loadu_ps(x + 4);
    a = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    b = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static void StoreInterleaved2(V a, V b, float* x) {
    _mm_storeu_ps(x, _mm_unpacklo_ps(a, b));
    _mm_storeu_ps(x + 4, _mm_unpackhi_ps(a, b));
  }
};
#else
struct Ops {
  using V = hn::Vec<DF>;
  static constexpr std::size_t N = hn::MaxLanes(DF());
  static V Load(const float* p) { return hn::LoadU(DF(), p); }
  static void Store(V v, float* p) { hn::StoreU(v, DF(), p); }
  static V Mul(V a, V b) { return hn::Mul(a, b); }
  static V Add(V a, V b) { return hn::Add(a, b); }
  static V Sub(V a, V b) { return hn::Sub(a, b); }
  static void LoadInterleaved2(const float* x, V& a, V& b) { hn::LoadInterleaved2(DF(), x, a, b); }
  static void StoreInterleaved2(V a, V b, float* x) { hn::StoreInterleaved2(a, b, DF(), x); }
};
#endif
using VF = Ops::V;

template <bool Inverse>
HWY_INLINE void RotateVec(VF a, VF b, VF c, VF s, VF& a_out, VF& b_out) {
  if constexpr (Inverse) {
    a_out = Ops::Add(Ops::Mul(a, c), Ops::Mul(b, s));
    b_out = Ops::Sub(Ops::Mul(b, c), Ops::Mul(a, s));
  } else {
    a_out = Ops::Sub(Ops::Mul(a, c), Ops::Mul(b, s));
    b_out = Ops::Add(Ops::Mul(a, s), Ops::Mul(b, c));
  }
}

template <bool Inverse>
HWY_INLINE void RotateScalar(float* pa, float* pb, float c, float s) {
  const float a = *pa, b = *pb;
  if constexpr (Inverse) {
    *pa = a * c + b * s;
    *pb = b * c - a * s;
  } else {
    *pa = a * c - b * s;
    *pb = a * s + b * c;
  }
}

// One row: every head by the same angles (c, s hold `pairs` values), in memory order (heads
// outer). Loading each vector of c and s once for all the heads instead (pairs outer, heads
// inner) visits the row's cache lines out of order: measured slower once the rows come from
// memory (0.72x against 0.98x the plain loop, one run each on a loaded machine).
template <bool Inverse>
HWY_INLINE void RotateRowT(float* HWY_RESTRICT row, const float* HWY_RESTRICT c,
                           const float* HWY_RESTRICT s, const RopeGeometry& g) {
  constexpr std::size_t N = Ops::N;
  const std::size_t P = g.pairs;
  for (std::size_t h = 0; h < g.heads; ++h) {
    float* HWY_RESTRICT x = row + h * g.head_dim;
    std::size_t i = 0;
    if (g.interleaved) {
      for (; i + N <= P; i += N) {
        VF a, b, na, nb;
        Ops::LoadInterleaved2(x + 2 * i, a, b);
        RotateVec<Inverse>(a, b, Ops::Load(c + i), Ops::Load(s + i), na, nb);
        Ops::StoreInterleaved2(na, nb, x + 2 * i);
      }
      for (; i < P; ++i) RotateScalar<Inverse>(x + 2 * i, x + 2 * i + 1, c[i], s[i]);
    } else {
      for (; i + N <= P; i += N) {
        VF na, nb;
        RotateVec<Inverse>(Ops::Load(x + i), Ops::Load(x + P + i), Ops::Load(c + i),
                           Ops::Load(s + i), na, nb);
        Ops::Store(na, x + i);
        Ops::Store(nb, x + P + i);
      }
      for (; i < P; ++i) RotateScalar<Inverse>(x + i, x + P + i, c[i], s[i]);
    }
  }
}

// The most vectors of cosines (and as many of sines) held in registers for a whole row.
constexpr std::size_t kMaxHeld = 8;

// One row when its pairs are exactly K vectors (K <= kMaxHeld): the K vectors of c and of s
// loaded once for all the heads, the heads still visited in memory order. The same operations
// on every lane as RotateRowT.
template <bool Inverse, std::size_t K>
HWY_INLINE void RotateRowHeldT(float* HWY_RESTRICT row, const float* HWY_RESTRICT c,
                               const float* HWY_RESTRICT s, const RopeGeometry& g) {
  constexpr std::size_t N = Ops::N;
  constexpr std::size_t P = K * N;
  VF cv[K], sv[K];
  for (std::size_t k = 0; k < K; ++k) {
    cv[k] = Ops::Load(c + k * N);
    sv[k] = Ops::Load(s + k * N);
  }
  if (g.interleaved) {
    for (std::size_t h = 0; h < g.heads; ++h) {
      float* HWY_RESTRICT x = row + h * g.head_dim;
      for (std::size_t k = 0; k < K; ++k) {
        VF a, b, na, nb;
        Ops::LoadInterleaved2(x + 2 * k * N, a, b);
        RotateVec<Inverse>(a, b, cv[k], sv[k], na, nb);
        Ops::StoreInterleaved2(na, nb, x + 2 * k * N);
      }
    }
    return;
  }
  for (std::size_t h = 0; h < g.heads; ++h) {
    float* HWY_RESTRICT x = row + h * g.head_dim;
    for (std::size_t k = 0; k < K; ++k) {
      VF na, nb;
      RotateVec<Inverse>(Ops::Load(x + k * N), Ops::Load(x + P + k * N), cv[k], sv[k], na, nb);
      Ops::Store(na, x + k * N);
      Ops::Store(nb, x + P + k * N);
    }
  }
}

// The blocks' rows by RotateRowHeldT<Inverse, K>, or RotateRowT<Inverse> for K = 0, row r of
// every block before row r + 1.
template <bool Inverse, std::size_t K>
void EachRow(const RopeRows* blocks, std::size_t n, std::size_t stride, std::size_t cs_stride,
             const RopeGeometry& g) {
  std::size_t rows = 0;
  for (std::size_t k = 0; k < n; ++k) rows = std::max(rows, blocks[k].rows);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const RopeRows& b = blocks[k];
      if (r >= b.rows) continue;
      float* row = b.x + r * stride;
      const float* cr = b.c + r * cs_stride;
      const float* sr = b.s + r * cs_stride;
      if constexpr (K == 0) {
        RotateRowT<Inverse>(row, cr, sr, g);
      } else {
        RotateRowHeldT<Inverse, K>(row, cr, sr, g);
      }
    }
  }
}

// Rows of consecutive positions in one call: no call through the dispatch pointer per row. Pairs
// of 1, 2, 4 or kMaxHeld whole vectors (GPT-2's 32, Llama's 64 with 8 lanes) take the row kernel
// that holds the angles in registers.
template <bool Inverse>
void RotateRowsT(const RopeRows* blocks, std::size_t n, std::size_t stride, std::size_t cs_stride,
                 const RopeGeometry& g) {
  constexpr std::size_t N = Ops::N;
  const std::size_t held = g.pairs % N == 0 && g.pairs / N <= kMaxHeld ? g.pairs / N : 0;
  switch (held) {
    case 1:
      return EachRow<Inverse, 1>(blocks, n, stride, cs_stride, g);
    case 2:
      return EachRow<Inverse, 2>(blocks, n, stride, cs_stride, g);
    case 4:
      return EachRow<Inverse, 4>(blocks, n, stride, cs_stride, g);
    case kMaxHeld:
      return EachRow<Inverse, kMaxHeld>(blocks, n, stride, cs_stride, g);
    default:
      return EachRow<Inverse, 0>(blocks, n, stride, cs_stride, g);
  }
}

void RotateForward(const RopeRows* blocks, std::size_t n, std::size_t stride, std::size_t cs_stride,
                   const RopeGeometry& g) {
  RotateRowsT<false>(blocks, n, stride, cs_stride, g);
}

void RotateInverse(const RopeRows* blocks, std::size_t n, std::size_t stride, std::size_t cs_stride,
                   const RopeGeometry& g) {
  RotateRowsT<true>(blocks, n, stride, cs_stride, g);
}

}  // namespace posemb::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace posemb::detail {

HWY_EXPORT(RotateForward);
HWY_EXPORT(RotateInverse);

RotateRowsFn rotate_rows(bool inverse) {
  return inverse ? &POSEMB_DISPATCH(RotateInverse) : &POSEMB_DISPATCH(RotateForward);
}

}  // namespace posemb::detail
#endif  // HWY_ONCE
